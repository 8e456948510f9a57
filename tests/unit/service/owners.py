"""A partitions' owner (``referee/service/partitions.py``) on fakes: the store, the broker, the
producers and the group's consumer, for the unit tests of the service."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import TopicPartition

from referee.processing.step import ProcessingStep
from referee.service.metrics import Metrics
from referee.service.partitions import Owner, Partitions
from referee.service.poll import Polls
from referee.service.publisher import Outbox, Publisher, Publishing
from tests.fakes import FakeBroker, FakeProducer, FakeStepStore, FakeTails

TOPIC = "events"
GROUP = "g"


@dataclass
class FakeConsumer:
    """The group's consumer, as far as the partitions' owner uses it."""

    seeks: list[tuple[int, int]] = field(default_factory=list)
    paused: set[int] = field(default_factory=set)
    high: dict[int, int] = field(default_factory=dict)
    assigned: set[TopicPartition] = field(default_factory=set)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seeks.append((tp.partition, offset))

    def pause(self, *tps: TopicPartition) -> None:
        self.paused |= {tp.partition for tp in tps}

    def resume(self, *tps: TopicPartition) -> None:
        self.paused -= {tp.partition for tp in tps}

    def assignment(self) -> set[TopicPartition]:
        return set(self.assigned)

    def highwater(self, tp: TopicPartition) -> int | None:
        return self.high.get(tp.partition)


VERDICTS = Outbox("verdicts", "verdicts-topic")
DEAD = Outbox("dead_letters", "dlq-topic")


@dataclass
class Instance:
    """One instance: its partitions' owner, step, publisher and consumer, on a shared store
    and broker."""

    partitions: Partitions
    step: ProcessingStep
    publisher: Publisher
    consumer: FakeConsumer
    metrics: Metrics
    producers: list[FakeProducer]

    @property
    def transactional_id(self) -> str:
        return self.publisher.transactional_id


def instance(
    store: FakeStepStore,
    broker: FakeBroker,
    name: str = "a",
    *,
    make: Callable[[str], FakeProducer] | None = None,
    **publishing: Any,
) -> Instance:
    """An instance of the referee on the fakes (one per test instance, sharing store and
    broker as instances share PostgreSQL and Kafka), its publisher started."""
    metrics = Metrics()
    consumer = FakeConsumer()
    producers: list[FakeProducer] = []

    def made(transactional_id: str) -> FakeProducer:
        producer = (make or (lambda t: FakeProducer(broker, t)))(transactional_id)
        producers.append(producer)
        return producer

    published = Publishing(
        group_id=GROUP,
        topic=TOPIC,
        transactional_prefix="referee-relay.g",
        verdicts=VERDICTS,
        dead_letters=DEAD,
        make_producer=made,
        store=store,
        tails=FakeTails(broker),
        metrics=metrics,
        poll_seconds=0.01,
        **publishing,
    )
    publisher = Publisher(published, name, store)
    step = ProcessingStep(store, GROUP, on_appended=publisher.appended, owned_only=True)
    partitions = Partitions(
        group_id=GROUP,
        topic=TOPIC,
        owner=Owner(f"owner-{name}", name),
        step=step,
        store=store,
        publishing=published,
        publisher=publisher,
        preflight=None,
        metrics=metrics,
        consumer=lambda: consumer,
        polls=Polls(),
    )
    publisher.start()
    return Instance(partitions, step, publisher, consumer, metrics, producers)


def tps(*partitions: int) -> set[TopicPartition]:
    return {TopicPartition(TOPIC, p) for p in partitions}


async def takes_done(partitions: Partitions) -> None:
    """Waits until no take is in progress (the fakes answer at once: milliseconds)."""
    for _ in range(1000):
        if all(o.state.value != "taking" for o in partitions.owned.values()):
            return
        await asyncio.sleep(0.002)
    raise AssertionError("the takes did not finish")


async def eventually(done: Callable[[], bool], limit: float = 5) -> None:
    """Waits until ``done()`` holds (the fakes answer at once: milliseconds)."""
    deadline = asyncio.get_running_loop().time() + limit
    while asyncio.get_running_loop().time() < deadline:
        if done():
            return
        await asyncio.sleep(0.002)
    raise AssertionError("not reached in time")
