"""The service's wiring without a server: FastStream's test broker feeds the real handler, and
the partitions' owner takes, keeps, refuses and gives back partitions as the group and the
store say (the store, the broker and the consumer faked).

The same paths run on the real broker in tests/integration/kafka; these pin the wiring.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from aiokafka import TopicPartition
from aiokafka.errors import ConsumerStoppedError
from aiokafka.structs import ConsumerRecord
from faststream.kafka import TestKafkaBroker

from referee.processing.records import OutboxChunk, PositionMoved
from referee.processing.rows import PositionRow
from referee.service.app import Built, build
from referee.service.batch import BatchHandler
from referee.service.poll import Polls
from referee.service.settings import Settings
from referee.service.takeover import Judged
from referee.store.database import create_engine
from tests.fakes import FakeBroker, FakeStepStore
from tests.unit.service.owners import GROUP, TOPIC, instance, takes_done, tps

NOWHERE = "postgresql://nobody@127.0.0.1:1/none"  # never connected to: the store is faked


def event(kind: str, seq: int, **fields: Any) -> bytes:
    return json.dumps(
        {
            "event_id": f"e{seq}",
            "type": kind,
            "game_id": "t-1",
            "seq": seq,
            "occurred_at": "2026-11-30T12:00:00Z",
            "schema_version": 1,
            **fields,
        }
    ).encode()


@pytest.fixture
async def built() -> AsyncIterator[Built]:
    """The service as ``referee serve`` composes it, its step on the fake store and owning
    partition 0 (the test broker gives every record partition 0)."""
    settings = Settings(database_url=NOWHERE, group_id="g")
    engine = create_engine(NOWHERE)
    built = build(settings, engine)
    built.service.step.store = FakeStepStore()
    await built.service.step.adopt(settings.input_topic, {0: (None, -1)})
    yield built
    await engine.dispose()


async def test_the_subscriber_hands_each_batch_to_the_step_and_counts_it(built: Built) -> None:
    service = built.service
    store = service.step.store
    assert isinstance(store, FakeStepStore)
    started = event("GameStarted", 1, players=["ann", "bob"], rules={})
    async with TestKafkaBroker(built.broker) as broker:
        await broker.publish_batch(started, b"not json", topic=service.settings.input_topic)
        await service.step.settle()
    assert [(r.outcome, r.reason) for r in store.journal] == [
        ("applied", None),
        ("rejected", "malformed_json"),
    ]
    assert store.commits == 1, "one batch, one transaction"
    events = service.metrics.events.labels("GameStarted")._value.get()
    rejected = service.metrics.rejections.labels("malformed_json")._value.get()
    assert (events, rejected) == (1.0, 1.0)


async def test_each_assigned_partition_is_taken_and_sought_to_after_its_stored_position() -> None:
    store, broker = FakeStepStore(), FakeBroker()
    store.positions.append(PositionRow(GROUP, TOPIC, 0, 41, 1))
    a = instance(store, broker)
    await a.partitions.assigned(tps(0, 1))
    assert a.consumer.paused == {0, 1}, "not consumed before they are taken"
    await takes_done(a.partitions)
    assert sorted(a.consumer.seeks) == [(0, 42), (1, 0)], "stored + 1, or 0 when none"
    assert a.consumer.paused == set()
    assert a.partitions.joined
    assert a.metrics.assigned._value.get() == 2
    assert [(o[2], o[3], o[4]) for o in store.owners] == [(0, 1, 1), (1, 1, 1)], "a term each"
    assert {o[6] for o in store.owners} == {a.transactional_id}, "the instance's producer"
    assert a.step.epochs == {(TOPIC, 0): 1, (TOPIC, 1): 1}
    assert sorted(broker.started) == [
        "referee-relay.g.0",  # release 0.4's producers of the partitions: fenced
        "referee-relay.g.1",
        a.transactional_id,
    ]
    await a.partitions.stop()
    assert [(o[2], o[4]) for o in store.owners[2:]] == [(0, 2), (1, 2)], "given back cleanly"


async def test_an_empty_assignment_still_means_the_group_has_answered() -> None:
    a = instance(FakeStepStore(), FakeBroker())
    await a.partitions.assigned(set())
    assert a.partitions.joined
    assert a.consumer.seeks == []
    assert "not yet assigned by the consumer group" not in a.partitions.problems()


async def test_a_rebalance_keeps_the_partitions_that_stay_and_gives_back_the_others() -> None:
    """aiokafka revokes every partition at a rebalance: the step settles its write, and the
    new assignment says what stays (its term, publisher and cached games kept: no new take, no
    fence) and what went (its publisher stopped, its term given back, its lag series
    dropped)."""
    store, broker = FakeStepStore(), FakeBroker()
    a = instance(store, broker)
    await a.partitions.assigned(tps(0, 1))
    await takes_done(a.partitions)
    kept = a.publisher.partitions[1]
    a.metrics.consumer_lag.labels(TOPIC, "0").set(7)
    a.metrics.consumer_lag.labels(TOPIC, "1").set(3)
    await a.partitions.revoked(tps(0, 1))
    await a.partitions.assigned(tps(1))
    assert list(a.partitions.owned) == [1]
    assert a.publisher.partitions[1] is kept, "a partition kept keeps its place and cursors"
    assert broker.started.count("referee-relay.g.1") == 1, "no second fence"
    assert sorted(a.publisher.partitions) == [1]
    assert [(o[2], o[3], o[4]) for o in store.owners] == [(0, 1, 1), (1, 1, 1), (0, 1, 2)]
    families = {
        tuple(sample.labels.values())
        for metric in a.metrics.consumer_lag.collect()
        for sample in metric.samples
    }
    assert families == {(TOPIC, "1")}, "no series left for a partition no longer owned"
    assert a.metrics.rebalances._value.get() == 2.0
    await a.partitions.stop()


async def test_a_partition_another_owner_held_meanwhile_is_taken_again() -> None:
    """Between two assignments another instance took partition 0 and gave it back (its term
    is newer): this one must not judge from its cached games, nor publish without fencing."""
    store, broker = FakeStepStore(), FakeBroker()
    a, b = instance(store, broker, "a"), instance(store, broker, "b")
    await a.partitions.assigned(tps(0))
    await takes_done(a.partitions)
    await a.partitions.revoked(tps(0))
    await b.partitions.assigned(tps(0))
    await takes_done(b.partitions)
    await b.partitions.stop()
    await a.partitions.assigned(tps(0))
    await takes_done(a.partitions)
    assert a.step.epochs == {(TOPIC, 0): 3}, "a third term"
    assert broker.started.count("referee-relay.g.0") == 3, "0.4's id fenced at each take"
    await a.partitions.stop()


async def test_partitions_beyond_those_judged_wait_unread_while_the_others_drain() -> None:
    """Partitions were added to the input topic: keys moved, so the new ones are paused (their
    records wait in Kafka) and the instance says why, not ready; the old ones go on."""
    store = FakeStepStore()
    store.positions.append(PositionRow(GROUP, TOPIC, 1, 7, 1))
    a = instance(store, FakeBroker())
    a.partitions.judged = Judged(TOPIC, 2, 2)
    await a.partitions.assigned(tps(1, 2))
    await takes_done(a.partitions)
    assert a.consumer.paused == {2}
    assert list(a.partitions.owned) == [1], "only the judged partition is taken"
    assert a.consumer.seeks == [(1, 8)]
    draining = a.partitions.draining
    assert draining is not None
    assert "has 3 partitions, the referee judges it under 2" in draining
    assert a.partitions.problems()[0].startswith("the input topic")
    await a.partitions.stop()


async def test_a_partition_whose_input_is_gone_is_refused_loudly_and_left_paused() -> None:
    store, broker = FakeStepStore(), FakeBroker()
    store.positions.append(PositionRow(GROUP, TOPIC, 0, 10, 1))
    broker.input_offsets[0] = (50, 90)  # offsets 11 to 49 deleted before they were processed
    a = instance(store, broker)
    await a.partitions.assigned(tps(0, 1))
    await takes_done(a.partitions)
    assert a.consumer.paused == {0}, "the refused partition is not consumed"
    assert a.partitions.running() == [1]
    [problem] = a.partitions.problems()
    assert problem.startswith("partition 0 refused: the input it needs is gone")
    assert a.metrics.partition_refused.labels("0", "input_gone")._value.get() == 1
    await a.partitions.stop()


async def test_a_partition_another_owner_took_is_given_up_never_fenced_back() -> None:
    store, broker = FakeStepStore(), FakeBroker()
    a = instance(store, broker)
    await a.partitions.assigned(tps(0))
    await takes_done(a.partitions)
    await a.partitions.moved(PositionMoved(TOPIC, 0, -1, -1, lost=True))
    assert a.consumer.paused == {0}
    assert a.partitions.running() == []
    assert (TOPIC, 0) not in a.step.epochs
    assert a.publisher.partitions == {}
    assert broker.started == [a.transactional_id, "referee-relay.g.0"], "nothing fenced back"
    await a.partitions.stop()


async def test_a_partition_the_store_no_longer_holds_as_known_is_taken_again() -> None:
    """The store went back in time: the partition gets a new term, its publisher opens again
    (fencing, reading the topics), and the consumer seeks to the store's position."""
    store, broker = FakeStepStore(), FakeBroker()
    a = instance(store, broker)
    await a.partitions.assigned(tps(0, 1))
    await takes_done(a.partitions)
    await a.partitions.moved(PositionMoved(TOPIC, 0, -1, 12))
    assert a.consumer.paused == {0}
    await takes_done(a.partitions)
    assert a.partitions.running() == [0, 1]
    assert a.step.epochs[TOPIC, 0] == 2
    assert a.step.epochs[TOPIC, 1] == 1, "partition 1 was held as known: kept"
    assert broker.started.count("referee-relay.g.0") == 2
    assert broker.started.count(a.transactional_id) == 1, "its own producer kept"
    assert a.consumer.seeks[-1] == (0, 0)
    await a.partitions.stop()


class PollingConsumer:
    """Answers the subscriber's polls: nothing buffered, then a batch, then stopped."""

    def __init__(self, batch: tuple[object, ...]) -> None:
        self.answers: list[dict[TopicPartition, list[object]]] = [
            {},
            {TopicPartition("t", 0): list(batch)},
        ]
        self.polls: list[tuple[int, int | None]] = []

    async def getmany(
        self, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[object]]:
        self.polls.append((timeout_ms, max_records))
        if not self.answers:
            raise ConsumerStoppedError
        return self.answers.pop(0)


async def test_the_consume_loop_polls_again_at_once_after_an_empty_poll(
    built: Built, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FastStream's batch subscriber sleeps the poll's timeout after an empty poll, and a
    record arriving meanwhile waits; the referee's poll returns the empty batch and the loop
    polls again without sleeping (the waiting is ``getmany``'s, which returns on arrival)."""

    async def no_sleep(seconds: float) -> None:
        raise AssertionError(f"slept {seconds} s between two polls")

    monkeypatch.setattr(anyio, "sleep", no_sleep)
    monkeypatch.setattr(asyncio, "sleep", no_sleep)
    subscriber = built.subscriber
    consumed: list[object] = []

    async def consume(message: object) -> None:
        consumed.append(message)

    monkeypatch.setattr(subscriber, "consume", consume)
    monkeypatch.setattr(subscriber, "running", True)
    consumer = PollingConsumer(("r1", "r2"))
    await subscriber._run_consume_loop(consumer)
    settings = built.service.settings
    # half a batch first: topped up from the other partitions only when it comes back full
    assert consumer.polls == [(settings.batch_linger_ms, settings.batch_size // 2)] * 3
    assert consumed == [("r1", "r2")], "the batch after the empty poll, whole, once"


async def test_each_committed_batch_hands_its_partitions_outbox_rows_over(built: Built) -> None:
    """Every transaction that commits hands each partition it moved a chunk (rows or none:
    a batch of moves alone still moves the partition on), in commit order."""
    service = built.service
    handed: list[OutboxChunk] = []
    service.step.on_appended = handed.extend
    topic = service.settings.input_topic
    async with TestKafkaBroker(built.broker) as broker:
        started = event("GameStarted", 1, players=["ann", "bob"], rules={})
        await broker.publish_batch(started, b"not json", started, topic=topic)
        await service.step.settle()
    [chunk] = handed  # (the test broker gives every record offset 0)
    assert (chunk.topic, chunk.partition, chunk.after, chunk.through) == (topic, 0, -1, 0)
    assert (len(chunk.verdicts), len(chunk.dead_letters)) == (0, 1)
    assert chunk.dead_letters[0].source_partition == 0


def consumer_record(offset: int, timestamp: int, value: bytes) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord("t", 0, offset, timestamp, 0, None, value, None, 0, len(value), ())


async def test_arrival_is_the_mean_age_of_the_stamped_records(built: Built) -> None:
    """The records' age at receipt: a record without a timestamp (-1) does not count, and a
    batch with no stamped record is not observed."""
    service = built.service
    handler = BatchHandler(
        service.step, service.partitions, service.progress, service.metrics, Polls()
    )

    def observed() -> tuple[float, float]:
        registry = service.metrics.registry
        labels = {"stage": "arrival"}
        total = registry.get_sample_value("referee_stage_seconds_sum", labels) or 0.0
        count = registry.get_sample_value("referee_stage_seconds_count", labels) or 0.0
        return total, count

    started = event("GameStarted", 1, players=["ann", "bob"], rules={})
    await handler((consumer_record(0, -1, started),))
    assert observed() == (0.0, 0.0), "a record without a timestamp has no age"
    two_seconds_ago = int(time.time() * 1000) - 2000
    bad = b"not json"
    await handler((consumer_record(1, two_seconds_ago, bad), consumer_record(2, -1, bad)))
    await service.step.settle()
    total, count = observed()
    assert count == 1
    assert 2.0 <= total < 10.0, "the age of the one stamped record, not of -1 ms"


@pytest.mark.parametrize("session_ms", [1000, 6000, 10_000, 45_000])
def test_a_member_hears_of_a_rebalance_within_a_quarter_second(session_ms: int) -> None:
    """A stable member learns that a rebalance began (an instance scaled out, or gone) only
    from a heartbeat's answer, and the whole group waits for it to rejoin: the interval is
    short by default, and stays inside the session timeout (Kafka's guidance: at most a third
    of it)."""
    settings = Settings(database_url=NOWHERE, group_id="g", kafka_session_timeout_ms=session_ms)
    built = build(settings, create_engine(NOWHERE))
    assert built.subscriber is not None
    options = built.subscriber._connection_args  # what the consumer is given
    heartbeat = options["heartbeat_interval_ms"]
    assert options["session_timeout_ms"] == session_ms
    assert 0 < heartbeat <= 250
    assert heartbeat * 3 <= session_ms


def test_a_heartbeat_longer_than_a_third_of_the_session_is_refused() -> None:
    with pytest.raises(ValueError, match="at most a third of REFEREE_KAFKA_SESSION_TIMEOUT_MS"):
        Settings(kafka_session_timeout_ms=1000, kafka_heartbeat_interval_ms=400)


def test_static_membership_gives_the_consumer_its_instance_id() -> None:
    settings = Settings(database_url=NOWHERE, group_id="g", kafka_group_instance_id="referee-3")
    built = build(settings, create_engine(NOWHERE))
    assert built.subscriber._connection_args["group_instance_id"] == "referee-3"
    dynamic = build(Settings(database_url=NOWHERE, group_id="g"), create_engine(NOWHERE))
    assert dynamic.subscriber._connection_args.get("group_instance_id") is None


def test_the_group_is_offered_one_protocol_named_as_every_release_names_its_own() -> None:
    """One assignor, a fresh one per consumer, under the protocol name ``roundrobin``: with
    two protocols offered, aiokafka 0.14 sends two JoinGroups a join and two members joining
    a new group together cut each other's generation short for ever (docs/reliability.md);
    under another name, a group of this release and an older one could not agree."""
    from referee.service.assignor import StickyAssignor

    settings = Settings(database_url=NOWHERE, group_id="g")
    built = build(settings, create_engine(NOWHERE))
    other = build(settings, create_engine(NOWHERE))
    strategy = tuple(built.subscriber._connection_args["partition_assignment_strategy"])
    (assignor,) = strategy
    assert isinstance(assignor, StickyAssignor)
    assert assignor.name == "roundrobin"
    (second,) = tuple(other.subscriber._connection_args["partition_assignment_strategy"])
    assert second is not assignor
