"""The service's wiring without a server: FastStream's test broker feeds the real handler, and
the rebalance listener seeks where the store says (the step's store and the consumer faked).

The same paths run on the real broker in tests/integration/kafka; these pin the wiring.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest
from aiokafka import TopicPartition
from faststream.kafka import TestKafkaBroker

from referee.service.app import build
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
