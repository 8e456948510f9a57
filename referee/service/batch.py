"""The batch handler: Kafka records in, the processing step's pipeline, recovery on failure."""

from __future__ import annotations

import asyncio
import logging
import time

from aiokafka import TopicPartition
from aiokafka.structs import ConsumerRecord

from referee.contracts.rejection import KafkaSource
from referee.processing.records import InputRecord, PositionMoved, StepResult
from referee.service.retry import Backoff
from referee.service.runtime import Service

log = logging.getLogger("referee.serve")

OFFSET_COMMIT_SECONDS = 1.0
"""The least time between two Kafka offset commits (lag monitoring only: the positions that
count are in PostgreSQL). Kafka's own clients auto-commit every 5 s by default."""


class BatchHandler:
    """Feeds each batch to the step's pipeline; re-seeks every owned partition after a
    failure, so nothing fetched is skipped."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.backoff = Backoff(first=0.5, most=10.0)
        self._offsets_dirty = False
        self._offsets_task: asyncio.Task[None] | None = None
        self._returned_at: float | None = None

    async def __call__(self, records: tuple[ConsumerRecord[bytes, bytes], ...]) -> None:
        """Submits one batch: judged now, written once the batch before it has committed."""
        batch = [
            InputRecord(
                r.value or b"",
                r.topic,
                r.partition,
                r.offset,
                KafkaSource(r.topic, r.partition, r.offset),
                r.key,
                r.timestamp if r.timestamp >= 0 else None,  # Kafka's -1: no timestamp
            )
            for r in records
        ]
        if not batch:
            return
        service = self.service
        if self._returned_at is not None:  # waiting for this batch, idle time included
            service.metrics.observe_stage("fetch_wait", time.perf_counter() - self._returned_at)
        # The records' mean age at receipt: producer, broker and fetch. A producer may set
        # any timestamp; one in the future counts as no age.
        stamps = [r.timestamp_ms for r in batch if r.timestamp_ms is not None]
        if stamps:
            age = time.time() - sum(stamps) / len(stamps) / 1000
            service.metrics.observe_stage("arrival", max(age, 0.0))
        try:
            await self._submit(batch)
        except PositionMoved as moved:
            log.warning("partition moved on; re-seeking", extra={"detail": str(moved)})
            self._reseek()
            return
        except Exception as exc:
            service.metrics.batch_errors.inc()
            pause = self.backoff.failed()
            log.exception(
                "batch failed; retrying from the stored positions",
                extra={"retry_in_seconds": pause, "error": f"{type(exc).__name__}: {exc}"},
            )
            await asyncio.sleep(pause)
            self._reseek()
            return
        self.backoff.succeeded()

    async def _submit(self, batch: list[InputRecord]) -> None:
        step = self.service.step
        try:
            if self.service.settings.pipeline:
                await step.submit(batch)
            else:
                self.committed(await step.process(batch))
        finally:
            self._returned_at = time.perf_counter()

    def committed(self, result: StepResult) -> None:
        """Called by the step when a batch's transaction has committed."""
        service = self.service
        metrics = service.metrics
        now = time.time()
        metrics.count_batch(result.processed)
        metrics.batch_seconds.observe(time.monotonic() - result.started)
        metrics.last_batch.set(now)
        service.last_commit = time.monotonic()
        for record, processed in result.processed:
            if processed.verdicts and record.timestamp_ms is not None:
                metrics.event_to_verdict.observe(max(now - record.timestamp_ms / 1000, 0.0))
        self._commit_offsets()

    def _reseek(self) -> None:
        """Every owned partition back to after its stored position: the records of the
        failed batch, and of any batch judged after it, are fetched again."""
        service = self.service
        consumer = service.consumer
        if consumer is None:
            return
        for tp in list(service.assigned):
            consumer.seek(tp, service.step.positions.get((tp.topic, tp.partition), -1) + 1)

    def _commit_offsets(self) -> None:
        """Commits the stored positions to Kafka, for lag monitoring only, off the path of
        the batches: one commit at a time, the newest positions each time, at most one every
        ``OFFSET_COMMIT_SECONDS`` (a small live batch would otherwise send one per batch:
        ~160 a second at 1,000 events/s, each a broker request on the cores the batches use)."""
        self._offsets_dirty = True
        if self._offsets_task is None or self._offsets_task.done():
            self._offsets_task = asyncio.create_task(self._offsets())

    async def _offsets(self) -> None:
        service = self.service
        while self._offsets_dirty:
            self._offsets_dirty = False
            consumer = service.consumer
            if consumer is None:
                return
            offsets = {
                TopicPartition(t, p): o + 1
                for (t, p), o in service.step.committed.items()
                if TopicPartition(t, p) in service.assigned and o >= 0
            }
            if not offsets:
                continue
            started = time.perf_counter()
            try:
                await consumer.commit(offsets)
                service.metrics.observe_stage("offset_commit", time.perf_counter() - started)
            except Exception as exc:  # noqa: BLE001 - lag monitoring only: never fatal
                log.info(
                    "kafka offsets not committed (lag monitoring only)", extra={"error": str(exc)}
                )
            # the batches committed meanwhile are in the next commit
            await asyncio.sleep(max(0.0, OFFSET_COMMIT_SECONDS - (time.perf_counter() - started)))
