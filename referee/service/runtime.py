"""The parts of a running referee, and what its probes say about them."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer, TopicPartition
from faststream.kafka import KafkaBroker
from sqlalchemy.ext.asyncio import AsyncEngine

from referee.processing.step import ProcessingStep
from referee.service.http import OpsServer
from referee.service.metrics import Metrics, RemoteFamily, exposition
from referee.service.relay import Outbox
from referee.service.settings import Settings
from referee.store.database import ping


class Relay(Protocol):
    """The relay as the instance runs it: ``relay.OutboxRelay`` on the instance's event loop,
    or ``relay_process.RelayProcess``, the same relay in a child process."""

    outboxes: list[Outbox]
    wake: asyncio.Event
    alive_at: float
    """When the relay's loop last came round (monotonic seconds)."""

    def notify(self) -> None:
        """Wakes the relay: outbox rows were committed."""

    async def run(self, stopping: asyncio.Event) -> None:
        """Runs until ``stopping`` is set."""

    async def publish_backlog(self) -> None:
        """Sets the backlog gauges (where the relay runs)."""

    async def metric_families(self) -> list[RemoteFamily]:
        """The relay's metric families from its process (none: it runs in this one)."""


@dataclass(slots=True)
class Service:
    """The parts of a running referee, for the hooks, the probes and tests."""

    settings: Settings
    engine: AsyncEngine
    broker: KafkaBroker
    step: ProcessingStep
    relay: Relay
    metrics: Metrics
    ops: OpsServer | None = None
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    assigned: set[TopicPartition] = field(default_factory=set)
    joined: bool = False
    """Whether the consumer has had an assignment from its group (an empty one included)."""
    consumer: AIOKafkaConsumer | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    subscriber: Any = None
    last_commit: float = field(default_factory=time.monotonic)
    """When a batch last committed (monotonic seconds)."""

    async def exposition(self) -> bytes:
        """Renders /metrics: this process's families, a relay process's merged in."""
        return exposition(self.metrics.registry, await self.relay.metric_families())

    def subscriber_consumer(self) -> AIOKafkaConsumer:
        """Returns the subscriber's aiokafka consumer (it exists before it joins the group)."""
        consumer: AIOKafkaConsumer | None = getattr(self.subscriber, "consumer", None)
        if consumer is None:
            raise RuntimeError("the subscriber has no consumer yet")
        return consumer

    async def readiness(self) -> tuple[bool, str]:
        """Checks PostgreSQL, Kafka and the group; says what is missing.

        An instance that joined its group and was given no partition is ready (a standby,
        or the surge pod of a rolling update while every partition is taken), unless
        ``ready_requires_partition`` says an instance must own one.
        """
        problems = []
        try:
            async with asyncio.timeout(2):
                await ping(self.engine)
        except Exception as exc:  # noqa: BLE001 - any failure means not ready
            problems.append(f"postgresql unreachable: {exc.__class__.__name__}")
        if self.consumer is None:
            problems.append("kafka consumer not started")
        elif not self.joined:
            problems.append("not yet assigned by the consumer group")
        elif not self.assigned and self.settings.ready_requires_partition:
            problems.append("no partitions assigned")
        return (not problems, "; ".join(problems) or "ready")

    async def liveness(self) -> tuple[bool, str]:
        """Checks that the consumer loop and the relay are not stuck.

        The consumer is stuck when records wait on its partitions but no batch has committed
        for ``liveness_stall_seconds``; the relay when its loop has not come round for as
        long (a leader that cannot publish, or a follower that cannot ask for the lead).
        """
        bound = self.settings.liveness_stall_seconds
        now = time.monotonic()
        problems = []
        waiting = self.waiting_records()
        if waiting and now - self.last_commit > bound:
            problems.append(
                f"consumer stuck: {waiting} records wait and no batch committed for "
                f"{now - self.last_commit:.0f} s"
            )
        if now - self.relay.alive_at > bound:
            problems.append(
                f"relay stuck: its loop last came round {now - self.relay.alive_at:.0f} s ago"
            )
        return (not problems, "; ".join(problems) or "alive")

    def waiting_records(self) -> int:
        """Returns how many records of the owned partitions are not processed yet."""
        consumer = self.consumer
        if consumer is None:
            return 0
        waiting = 0
        for tp in list(self.assigned):
            high = consumer.highwater(tp)
            if high is not None:
                done = self.step.committed.get((tp.topic, tp.partition), -1) + 1
                waiting += max(high - done, 0)
        return waiting
