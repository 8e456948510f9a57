"""The service's wiring without a server: FastStream's test broker feeds the real handler, and
the rebalance listener seeks where the store says (the step's store and the consumer faked).

The same paths run on the real broker in tests/integration/kafka; these pin the wiring.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anyio
import pytest
from aiokafka import TopicPartition
from aiokafka.errors import ConsumerStoppedError
from aiokafka.structs import ConsumerRecord
from faststream.kafka import TestKafkaBroker

from referee.processing.records import OutboxChunk
from referee.service.app import build
from referee.service.batch import BatchHandler
from referee.service.listener import PositionListener
from referee.service.runtime import Service
from referee.service.settings import Settings
from referee.service.takeover import Judged
from referee.store.database import create_engine
from tests.fakes import FakeOutageError, FakeStepStore

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
async def service() -> AsyncIterator[Service]:
    settings = Settings(database_url=NOWHERE, group_id="g")
    engine = create_engine(NOWHERE)
    _, built = build(settings, engine)
    built.step.store = FakeStepStore()
    yield built
    await engine.dispose()


async def test_the_subscriber_hands_each_batch_to_the_step_and_counts_it(
    service: Service,
) -> None:
    store = service.step.store
    assert isinstance(store, FakeStepStore)
    started = event("GameStarted", 1, players=["ann", "bob"], rules={})
    async with TestKafkaBroker(service.broker) as broker:
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


class FakeConsumer:
    """Records the seeks the listener asks for."""

    def __init__(self) -> None:
        self.seeks: list[tuple[int, int]] = []

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seeks.append((tp.partition, offset))


class FakeStep:
    """The step's part in a rebalance: pausing, and taking partitions at their stored
    positions."""

    def __init__(self, stored: dict[int, int], outages: int = 0) -> None:
        self.stored = stored
        self.outages = outages
        self.paused = 0
        self.taken: list[list[int]] = []

    async def pause(self) -> None:
        self.paused += 1

    async def take_partitions(self, topic: str, partitions: Iterable[int]) -> dict[int, int]:
        if self.outages:
            self.outages -= 1
            raise FakeOutageError("the store is restarting")
        self.taken.append(list(partitions))
        return {p: self.stored[p] for p in partitions if p in self.stored}


class FakePublishers:
    """Which partitions the instance publishes."""

    def __init__(self) -> None:
        self.by_partition: dict[int, object] = {}

    async def own(self, partitions: Iterable[int]) -> None:
        self.by_partition = dict.fromkeys(partitions, object())


def listening(service: Service, step: FakeStep) -> tuple[PositionListener, FakeConsumer]:
    consumer = FakeConsumer()
    service.step = step  # type: ignore[assignment]
    service.publishers = FakePublishers()  # type: ignore[assignment]
    service.subscriber = type("Subscriber", (), {"consumer": consumer})()
    return PositionListener(service), consumer


async def test_each_assigned_partition_is_sought_to_after_its_stored_position(
    service: Service,
) -> None:
    listener, consumer = listening(service, FakeStep({0: 41}, outages=1))
    topic = service.settings.input_topic
    await listener.on_partitions_assigned({TopicPartition(topic, 0), TopicPartition(topic, 1)})
    assert sorted(consumer.seeks) == [(0, 42), (1, 0)], (
        "stored + 1, or offset 0 when nothing is stored (after one retried outage)"
    )
    assert service.joined
    assert service.metrics.assigned._value.get() == 2


async def test_an_empty_assignment_still_means_the_group_has_answered(service: Service) -> None:
    listener, consumer = listening(service, FakeStep({}))
    await listener.on_partitions_assigned(set())
    assert service.joined
    assert consumer.seeks == []
    assert (await service.readiness())[1] != "not yet assigned by the consumer group"


async def test_a_rebalance_keeps_the_partitions_that_stay_and_forgets_the_others(
    service: Service,
) -> None:
    """aiokafka revokes every partition at a rebalance: the step settles its write, and the
    new assignment says what stays (its publisher and cached games kept) and what went (its
    publisher stopped, its lag series dropped)."""
    step = FakeStep({0: 5, 1: 9})
    listener, _ = listening(service, step)
    topic = service.settings.input_topic
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    await listener.on_partitions_assigned({tp0, tp1})
    service.metrics.consumer_lag.labels(topic, "0").set(7)
    service.metrics.consumer_lag.labels(topic, "1").set(3)
    await listener.on_partitions_revoked({tp0, tp1})
    assert step.paused == 1, "the write in flight settled before the partitions go"
    assert service.assigned == set()
    await listener.on_partitions_assigned({tp1})
    assert step.taken == [[0, 1], [1]]
    assert list(service.publishers.by_partition) == [1]
    assert service.assigned == {tp1}
    families = {
        tuple(sample.labels.values())
        for metric in service.metrics.consumer_lag.collect()
        for sample in metric.samples
    }
    assert families == {(topic, "1")}, "no series left for a partition no longer owned"
    assert service.metrics.rebalances._value.get() == 2.0


async def test_partitions_beyond_those_judged_wait_unread_while_the_others_drain(
    service: Service,
) -> None:
    """Partitions were added to the input topic: keys moved, so the new ones are paused (their
    records wait in Kafka) and the instance says why, not ready; the old ones go on."""
    step = FakeStep({1: 7})
    listener, consumer = listening(service, step)
    paused: list[TopicPartition] = []
    consumer.pause = lambda *tps: paused.extend(tps)  # type: ignore[attr-defined]
    topic = service.settings.input_topic
    service.judged = Judged(topic, 2, 2)
    await listener.on_partitions_assigned({TopicPartition(topic, 1), TopicPartition(topic, 2)})
    assert [tp.partition for tp in paused] == [2]
    assert step.taken == [[1]], "only the judged partition is taken"
    assert consumer.seeks == [(1, 8)]
    assert service.assigned == {TopicPartition(topic, 1)}, "the paused one is not waited on"
    assert list(service.publishers.by_partition) == [1]
    assert service.draining is not None
    assert "has 3 partitions, the referee judges it under 2" in service.draining
    assert (await service.readiness())[1].startswith("the input topic")


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
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FastStream's batch subscriber sleeps the poll's timeout after an empty poll, and a
    record arriving meanwhile waits; the referee's poll returns the empty batch and the loop
    polls again without sleeping (the waiting is ``getmany``'s, which returns on arrival)."""

    async def no_sleep(seconds: float) -> None:
        raise AssertionError(f"slept {seconds} s between two polls")

    monkeypatch.setattr(anyio, "sleep", no_sleep)
    monkeypatch.setattr(asyncio, "sleep", no_sleep)
    subscriber = service.subscriber
    consumed: list[object] = []

    async def consume(message: object) -> None:
        consumed.append(message)

    monkeypatch.setattr(subscriber, "consume", consume)
    monkeypatch.setattr(subscriber, "running", True)
    consumer = PollingConsumer(("r1", "r2"))
    await subscriber._run_consume_loop(consumer)
    settings = service.settings
    # half a batch first: topped up from the other partitions only when it comes back full
    assert consumer.polls == [(settings.batch_linger_ms, settings.batch_size // 2)] * 3
    assert consumed == [("r1", "r2")], "the batch after the empty poll, whole, once"


async def test_each_committed_batch_hands_its_partitions_outbox_rows_over(
    service: Service,
) -> None:
    """Every transaction that commits hands each partition it moved a chunk (rows or none:
    a batch of moves alone still moves the partition on), in commit order."""
    handed: list[OutboxChunk] = []
    service.step.on_appended = handed.extend
    topic = service.settings.input_topic
    async with TestKafkaBroker(service.broker) as broker:
        started = event("GameStarted", 1, players=["ann", "bob"], rules={})
        await broker.publish_batch(started, b"not json", started, topic=topic)
        await service.step.settle()
    [chunk] = handed  # (the test broker gives every record offset 0)
    assert (chunk.topic, chunk.partition, chunk.after, chunk.through) == (topic, 0, -1, 0)
    assert (len(chunk.verdicts), len(chunk.dead_letters)) == (0, 1)
    assert chunk.dead_letters[0].source_partition == 0


def consumer_record(offset: int, timestamp: int, value: bytes) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord("t", 0, offset, timestamp, 0, None, value, None, 0, len(value), ())


async def test_arrival_is_the_mean_age_of_the_stamped_records(service: Service) -> None:
    """The records' age at receipt: a record without a timestamp (-1) does not count, and a
    batch with no stamped record is not observed."""
    handler = BatchHandler(service)

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
    _, built = build(settings, create_engine(NOWHERE))
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
    _, built = build(settings, create_engine(NOWHERE))
    assert built.subscriber._connection_args["group_instance_id"] == "referee-3"
    _, dynamic = build(Settings(database_url=NOWHERE, group_id="g"), create_engine(NOWHERE))
    assert dynamic.subscriber._connection_args.get("group_instance_id") is None


def test_the_group_is_offered_one_protocol_named_as_every_release_names_its_own() -> None:
    """One assignor, a fresh one per consumer, under the protocol name ``roundrobin``: with
    two protocols offered, aiokafka 0.14 sends two JoinGroups a join and two members joining
    a new group together cut each other's generation short for ever (docs/reliability.md);
    under another name, a group of this release and an older one could not agree."""
    from referee.service.assignor import StickyAssignor

    settings = Settings(database_url=NOWHERE, group_id="g")
    _, built = build(settings, create_engine(NOWHERE))
    _, other = build(settings, create_engine(NOWHERE))
    strategy = tuple(built.subscriber._connection_args["partition_assignment_strategy"])
    (assignor,) = strategy
    assert isinstance(assignor, StickyAssignor)
    assert assignor.name == "roundrobin"
    (second,) = tuple(other.subscriber._connection_args["partition_assignment_strategy"])
    assert second is not assignor
