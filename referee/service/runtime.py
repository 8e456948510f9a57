"""The parts of a running referee, their start and stop, and what its probes say about them."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncEngine

from referee.processing.step import ProcessingStep
from referee.service.batch import Progress
from referee.service.metrics import Metrics
from referee.service.partitions import ConsumerOf, Partitions
from referee.service.settings import Settings
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
    """The lifecycle of a running referee and what its probes say: its partitions
    (``partitions.py``) do the work; this starts, watches and stops them."""

    settings: Settings
    engine: AsyncEngine
    step: ProcessingStep
    partitions: Partitions
    progress: Progress
    metrics: Metrics
    consumer: ConsumerOf
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    started_at: float = field(default_factory=time.monotonic)
    """When the service was made (monotonic seconds): the consumer joins its group after."""
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    partition_maker: PartitionMaker | None = None
    """Makes the time partitions ahead, off the write path (None: not in unit tests)."""

    # --- the lifecycle (FastStream's hooks) --------------------------------------------------

    async def start(self) -> None:
        """Checks the topics, takes the publishing over from an earlier release and starts
        the publisher, before the consumer joins its group."""
        await self.partitions.start()

    async def started(self) -> None:
        """Starts the lag watcher and the time partitions' watcher, once the consumer runs."""
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
        await self.partitions.stop()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def closed(self) -> None:
        """Closes the database pool."""
        await self.engine.dispose()
        log.info("stopped")

    # --- the probes ------------------------------------------------------------------------

    async def exposition(self) -> bytes:
        """Renders /metrics."""
        return self.metrics.exposition()

    async def readiness(self) -> tuple[bool, str]:
        """Checks PostgreSQL, Kafka, the group and the owned partitions; says what is missing.

        An instance that joined its group and was given no partition is ready (a standby,
        or the surge pod of a rolling update while every partition is taken), unless
        ``ready_requires_partition`` says an instance must own one. A partition refused (the
        input it needs is gone, or is not the input the store processed) or a publisher that
        cannot publish makes it not ready, saying why.
        """
        problems = []
        try:
            async with asyncio.timeout(2):
                await ping(self.engine)
        except Exception as exc:  # noqa: BLE001 - any failure means not ready
            problems.append(f"postgresql unreachable: {exc.__class__.__name__}")
        if self.consumer() is None:
            problems.append("kafka consumer not started")
        problems += self.partitions.problems()
        return (not problems, "; ".join(problems) or "ready")

    async def liveness(self) -> tuple[bool, str]:
        """Checks that the consumer loop and the publishers are not stuck.

        The consumer is stuck when records wait on its partitions but no batch has committed
        for ``liveness_stall_seconds``, when a partition's take (its term, fence and checks,
        before it is consumed) has gone on that long, or when it has not joined its group
        that long after the start (a join that never completes leaves an instance that holds
        nothing and does nothing); a publisher when its loop has not come round for as long
        (one that cannot publish retries, and comes round between its tries).
        """
        bound = self.settings.liveness_stall_seconds
        now = time.monotonic()
        problems = []
        if not self.partitions.joined and now - self.started_at > bound:
            problems.append(
                f"consumer stuck: not joined its group {now - self.started_at:.0f} s after "
                "the start"
            )
        waiting = self.partitions.waiting_records()
        last_commit = self.progress.last_commit
        if waiting and now - last_commit > bound:
            problems.append(
                f"consumer stuck: {waiting} records wait and no batch committed for "
                f"{now - last_commit:.0f} s"
            )
        taking_since = self.partitions.taking_since()
        if taking_since is not None and now - taking_since > bound:
            problems.append(
                f"consumer stuck: the take of partitions "
                f"{', '.join(map(str, self.partitions.taking()))} has gone on for "
                f"{now - taking_since:.0f} s (nothing of them consumed)"
            )
        alive_at = self.partitions.alive_at()
        if now - alive_at > bound:
            problems.append(f"publisher stuck: its loop last came round {now - alive_at:.0f} s ago")
        return (not problems, "; ".join(problems) or "alive")

    async def _watch_lag(self) -> None:
        """Gives up partitions found lost, updates the consumer lag per owned partition and the
        unpublished rows, until stopped."""
        while not self.stopping.is_set():
            await asyncio.sleep(LAG_EVERY_SECONDS)
            try:
                await self.partitions.watch()
            except Exception:
                log.warning("watching the partitions failed", exc_info=True)

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
