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

from referee.service.app import build
from referee.service.batch import BatchHandler
from referee.service.listener import PositionListener
from referee.service.runtime import Service
from referee.service.settings import Settings
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
    """The step's part in a rebalance: stored positions, and forgetting partitions."""

    def __init__(self, stored: dict[int, int], outages: int = 0) -> None:
        self.stored = stored
        self.outages = outages
        self.forgotten: list[set[tuple[str, int]]] = []

    async def load_positions(self, topic: str, partitions: Iterable[int]) -> dict[int, int]:
        if self.outages:
            self.outages -= 1
            raise FakeOutageError("the store is restarting")
        return {p: self.stored[p] for p in partitions if p in self.stored}

    async def forget_partitions(self, partitions: set[tuple[str, int]]) -> None:
        self.forgotten.append(partitions)


def listening(service: Service, step: FakeStep) -> tuple[PositionListener, FakeConsumer]:
    consumer = FakeConsumer()
    service.step = step  # type: ignore[assignment]
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


async def test_a_revoked_partition_is_forgotten_and_its_lag_series_dropped(
    service: Service,
) -> None:
    step = FakeStep({0: 5, 1: 9})
    listener, _ = listening(service, step)
    topic = service.settings.input_topic
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    await listener.on_partitions_assigned({tp0, tp1})
    service.metrics.consumer_lag.labels(topic, "0").set(7)
    service.metrics.consumer_lag.labels(topic, "1").set(3)
    await listener.on_partitions_revoked({tp0})
    assert step.forgotten == [{(topic, 0)}]
    assert service.assigned == {tp1}
    families = {
        tuple(sample.labels.values())
        for metric in service.metrics.consumer_lag.collect()
        for sample in metric.samples
    }
    assert families == {(topic, "1")}, "no series left for a partition no longer owned"
    rebalances = service.metrics.rebalances._value.get()
    assert rebalances == 2.0


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
    assert consumer.polls == [(settings.batch_linger_ms, settings.batch_size)] * 3
    assert consumed == [("r1", "r2")], "the batch after the empty poll, whole, once"


@pytest.mark.parametrize(
    ("record", "woken"),
    [
        (event("GameStarted", 1, players=["ann", "bob"], rules={}), False),
        (b"not json", True),
    ],
    ids=["moves-alone", "a-dead-letter"],
)
async def test_the_relay_is_woken_only_by_a_batch_that_appended_outbox_rows(
    service: Service, record: bytes, woken: bool
) -> None:
    """A batch of moves alone (no verdict, no dead letter) gives the relay nothing to read: it
    is not woken (a live table commits hundreds of such batches a second); a rejected record
    (a dead letter) wakes it."""
    async with TestKafkaBroker(service.broker) as broker:
        await broker.publish_batch(record, topic=service.settings.input_topic)
        await service.step.settle()
    assert isinstance(service.step.store, FakeStepStore)
    assert len(service.step.store.journal) == 1, "the batch was committed"
    assert service.relay.wake.is_set() is woken


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
def test_a_member_hears_of_a_rebalance_within_half_a_second(session_ms: int) -> None:
    """A stable member learns that a rebalance began (a scaled-out instance, a second consumer
    process joining a moment after the first) only from a heartbeat's answer, and the member
    that joined consumes nothing until then: the interval is capped, and stays well inside
    the session timeout (Kafka's guidance: at most a third of it)."""
    settings = Settings(database_url=NOWHERE, group_id="g", kafka_session_timeout_ms=session_ms)
    _, built = build(settings, create_engine(NOWHERE))
    assert built.subscriber is not None
    options = built.subscriber._connection_args  # what the consumer is given
    heartbeat = options["heartbeat_interval_ms"]
    assert options["session_timeout_ms"] == session_ms
    assert 0 < heartbeat <= 500
    assert heartbeat * 3 <= session_ms
