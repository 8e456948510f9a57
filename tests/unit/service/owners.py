"""A partitions' owner (``referee/service/partitions.py``) on fakes: the store, the broker, the
producers and the group's consumer, for the unit tests of the service."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from aiokafka import TopicPartition

from referee.processing.step import ProcessingStep
from referee.service.metrics import Metrics
from referee.service.partitions import Handover, Owner, Partitions
from referee.service.poll import Polls
from referee.service.publisher import Outbox, Publishing
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


@dataclass
class Instance:
    """One instance's partitions' owner, its step and its consumer, on a shared store and
    broker."""

    partitions: Partitions
    step: ProcessingStep
    consumer: FakeConsumer
    metrics: Metrics


def instance(
    store: FakeStepStore, broker: FakeBroker, name: str = "a", **publishing: float
) -> Instance:
    """An instance of the referee on the fakes (one per test instance, sharing store and
    broker as instances share PostgreSQL and Kafka)."""
    metrics = Metrics()
    consumer = FakeConsumer()
    handover = Handover(TOPIC)
    step = ProcessingStep(store, GROUP, on_appended=handover.appended, owned_only=True)
    polls = Polls()

    def make(transactional_id: str) -> FakeProducer:
        return FakeProducer(broker, transactional_id)

    partitions = Partitions(
        group_id=GROUP,
        topic=TOPIC,
        owner=Owner(name),
        step=step,
        store=store,
        publishing=Publishing(
            group_id=GROUP,
            topic=TOPIC,
            transactional_prefix="referee-relay.g",
            verdicts=Outbox("verdicts", "verdicts-topic"),
            dead_letters=Outbox("dead_letters", "dlq-topic"),
            make_producer=make,
            store=store,
            tails=FakeTails(broker),
            metrics=metrics,
            poll_seconds=0.01,
            **publishing,  # type: ignore[arg-type]
        ),
        handover=handover,
        preflight=None,
        metrics=metrics,
        consumer=lambda: consumer,
        polls=polls,
    )
    return Instance(partitions, step, consumer, metrics)


def tps(*partitions: int) -> set[TopicPartition]:
    return {TopicPartition(TOPIC, p) for p in partitions}


async def takes_done(partitions: Partitions) -> None:
    """Waits until no take is in progress (the fakes answer at once: milliseconds)."""
    for _ in range(500):
        tasks = [o.task for o in partitions.owned.values() if o.task is not None]
        if all(t.done() for t in tasks) or all(
            o.state.value != "taking" for o in partitions.owned.values()
        ):
            return
        await asyncio.sleep(0.002)
    raise AssertionError("the takes did not finish")
