"""The parts of a running referee, their start and stop, and what its probes say about them."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from faststream.kafka import KafkaBroker
from sqlalchemy.ext.asyncio import AsyncEngine

from referee.processing.step import ProcessingStep
from referee.service.http import OpsServer
from referee.service.metrics import Metrics
from referee.service.publisher import Publishers
from referee.service.settings import Settings
from referee.service.takeover import Judged, Preflight
from referee.store.database import ping
from referee.store.partitions import PartitionMaker, TimePartition, list_partitions
from referee.store.seasons_store import database_now

log = logging.getLogger("referee.serve")

LAG_EVERY_SECONDS = 5.0
PARTITIONS_EVERY_SECONDS = 60.0
"""How often the store's time partitions are read for their gauges."""
PARTITIONS_TIMEOUT_SECONDS = 10.0


async def read_partitions(engine: AsyncEngine) -> tuple[datetime, list[TimePartition]]:
    """Returns the database's clock and the attached time partitions (one pooled connection,
    two catalogue queries: any role may run them)."""
    async with engine.connect() as conn:
        raw = await conn.get_raw_connection()
        driver = raw.driver_connection
        now = await database_now(driver)
        return now, await list_partitions(driver)


@dataclass(slots=True)
class Service:
    """The parts of a running referee, for the lifecycle hooks, the probes and tests."""

    settings: Settings
    engine: AsyncEngine
    broker: KafkaBroker
    step: ProcessingStep
    publishers: Publishers
    metrics: Metrics
    preflight: Preflight | None = None
    """The checks and the takeover run before consuming (None: skipped, in unit tests)."""
    ops: OpsServer | None = None
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    assigned: set[TopicPartition] = field(default_factory=set)
    joined: bool = False
    """Whether the consumer has had an assignment from its group (an empty one included)."""
    consumer: AIOKafkaConsumer | None = None
    subscriber: Any = None
    judged: Judged | None = None
    """The input topic's partitions the referee judges (from the store), once checked."""
    draining: str | None = None
    """Why some input partitions are left unread (added to the topic), if any are."""
    last_commit: float = field(default_factory=time.monotonic)
    """When a batch last committed (monotonic seconds)."""
    started_at: float = field(default_factory=time.monotonic)
    """When the service was made (monotonic seconds): the consumer joins its group after."""
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    partition_maker: PartitionMaker | None = None
    """Makes the time partitions ahead, off the write path (None: not in unit tests)."""

    # --- the lifecycle (FastStream's hooks) --------------------------------------------------

    async def start(self) -> None:
        """Opens the operations port; checks the topics and takes the publishing over from an
        earlier release, before the consumer joins its group."""
        if self.ops is not None:
            await self.ops.start()
        if self.preflight is not None:
            self.judged = await self.preflight.run()
            self.draining = self.judged.draining()
            if self.draining is not None:
                log.error("input partitions left unread: %s", self.draining)

    async def started(self) -> None:
        """Starts the lag watcher and the time partitions' watcher, once the consumer runs."""
        self.consumer = self.subscriber_consumer()
        self.tasks.append(asyncio.create_task(self._watch_lag()))
        self.tasks.append(asyncio.create_task(self._watch_partitions()))
        if self.partition_maker is not None:
            self.tasks.append(asyncio.create_task(self.partition_maker.run()))

    async def stop(self) -> None:
        """Writes the batch judged last, then publishes what was committed and stops."""
        try:
            await self.step.settle()
        except Exception:
            log.warning("the batch in flight did not commit", exc_info=True)
        self.stopping.set()
        await self.publishers.stop()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def closed(self) -> None:
        """Closes the operations port and the database pool."""
        if self.ops is not None:
            await self.ops.stop()
        await self.engine.dispose()
        log.info("stopped")

    # --- the probes ------------------------------------------------------------------------

    def subscriber_consumer(self) -> AIOKafkaConsumer:
        """Returns the subscriber's aiokafka consumer (it exists before it joins the group)."""
        consumer: AIOKafkaConsumer | None = getattr(self.subscriber, "consumer", None)
        if consumer is None:
            raise RuntimeError("the subscriber has no consumer yet")
        return consumer

    async def exposition(self) -> bytes:
        """Renders /metrics."""
        return self.metrics.exposition()

    async def readiness(self) -> tuple[bool, str]:
        """Checks PostgreSQL, Kafka and the group; says what is missing.

        An instance that joined its group and was given no partition is ready (a standby,
        or the surge pod of a rolling update while every partition is taken), unless
        ``ready_requires_partition`` says an instance must own one.
        """
        problems = []
        if self.draining is not None:
            problems.append(self.draining)
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
        """Checks that the consumer loop and the publishers are not stuck.

        The consumer is stuck when records wait on its partitions but no batch has committed
        for ``liveness_stall_seconds``, or when it has not joined its group that long after
        the start (a join that never completes leaves an instance that holds nothing and
        does nothing); a publisher when its loop has not come round for as long (one that
        cannot publish retries, and comes round between its tries).
        """
        bound = self.settings.liveness_stall_seconds
        now = time.monotonic()
        problems = []
        if not self.joined and now - self.started_at > bound:
            problems.append(
                f"consumer stuck: not joined its group {now - self.started_at:.0f} s after "
                "the start"
            )
        waiting = self.waiting_records()
        if waiting and now - self.last_commit > bound:
            problems.append(
                f"consumer stuck: {waiting} records wait and no batch committed for "
                f"{now - self.last_commit:.0f} s"
            )
        alive_at = self.publishers.alive_at()
        if now - alive_at > bound:
            problems.append(f"publisher stuck: its loop last came round {now - alive_at:.0f} s ago")
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

    async def _watch_lag(self) -> None:
        """Updates the consumer lag per owned partition and the unpublished rows, until
        stopped."""
        metrics = self.metrics
        while not self.stopping.is_set():
            await asyncio.sleep(LAG_EVERY_SECONDS)
            consumer = self.consumer
            if consumer is not None:
                for tp in list(self.assigned):
                    high = consumer.highwater(tp)
                    done = self.step.committed.get((tp.topic, tp.partition), -1) + 1
                    if high is not None:
                        metrics.consumer_lag.labels(tp.topic, str(tp.partition)).set(
                            max(high - done, 0)
                        )
            self.publishers.update_gauges()

    async def check_partitions(self) -> bool:
        """Reads the store's time partitions into their gauges; a failure is logged and
        counted, never raised (the gauges keep their last reading). Returns whether it read."""
        try:
            async with asyncio.timeout(PARTITIONS_TIMEOUT_SECONDS):
                now, partitions = await read_partitions(self.engine)
        except Exception as exc:  # noqa: BLE001 - a metric must never stop the service
            self.metrics.partition_check_errors.inc()
            log.warning(
                "could not read the store's time partitions (their gauges keep the last "
                "reading): %s: %s",
                exc.__class__.__name__,
                exc,
            )
            return False
        self.metrics.observe_partitions(partitions, now)
        return True

    async def _watch_partitions(self) -> None:
        """Updates the time partitions' gauges every ``PARTITIONS_EVERY_SECONDS``, until
        stopped."""
        while not self.stopping.is_set():
            await self.check_partitions()
            await asyncio.sleep(PARTITIONS_EVERY_SECONDS)
