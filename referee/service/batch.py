"""The batch handler: Kafka records in, the processing step's pipeline, recovery on failure;
and what each committed batch tells (counts, the last commit, Kafka's offsets for lag)."""

from __future__ import annotations

import asyncio
import logging
import time

from aiokafka import TopicPartition
from aiokafka.structs import ConsumerRecord

from referee.contracts.rejection import KafkaSource
from referee.processing.records import InputRecord, PositionMoved, StepResult
from referee.processing.step import ProcessingStep
from referee.service.metrics import Metrics
from referee.service.partitions import ConsumerOf, Partitions
from referee.service.poll import Polls
from referee.service.retry import Backoff

log = logging.getLogger("referee.serve")

OFFSET_COMMIT_SECONDS = 1.0
"""The least time between two Kafka offset commits (lag monitoring only: the positions that
count are in PostgreSQL). Kafka's own clients auto-commit every 5 s by default."""


class Progress:
    """What each committed batch tells: the metrics, when the last one committed, and the
    offsets committed to Kafka for lag monitoring (the step's ``on_committed``)."""

    def __init__(self, metrics: Metrics, consumer: ConsumerOf) -> None:
        self.metrics = metrics
        self.consumer = consumer
        self.last_commit = time.monotonic()
        """When a batch last committed (monotonic seconds)."""
        self._offsets: dict[tuple[str, int], int] = {}
        self._offsets_dirty = False
        self._offsets_task: asyncio.Task[None] | None = None

    def committed(self, result: StepResult) -> None:
        """Counts a committed batch and commits its offsets to Kafka, off the batch's path."""
        metrics = self.metrics
        now = time.time()
        metrics.count_batch(result.processed)
        metrics.batch_seconds.observe(time.monotonic() - result.started)
        metrics.last_batch.set(now)
        self.last_commit = time.monotonic()
        offsets = self._offsets
        stamp = metrics.event_to_verdict.observe
        for record, processed in result.processed:
            # a batch holds each partition's records in offset order: the last one wins
            offsets[record.topic, record.partition] = record.offset + 1
            if processed.verdicts and record.timestamp_ms is not None:
                stamp(max(now - record.timestamp_ms / 1000, 0.0))
        self._commit_offsets()

    def _commit_offsets(self) -> None:
        """Commits the positions to Kafka, for lag monitoring only, off the path of the
        batches: one commit at a time, the newest positions each time, at most one every
        ``OFFSET_COMMIT_SECONDS`` (one per small live batch would be a broker request each)."""
        self._offsets_dirty = True
        if self._offsets_task is None or self._offsets_task.done():
            self._offsets_task = asyncio.create_task(self._commit_loop())

    async def _commit_loop(self) -> None:
        while self._offsets_dirty:
            self._offsets_dirty = False
            consumer = self.consumer()
            if consumer is None:
                return
            owned = consumer.assignment()
            offsets = {
                tp: o
                for (topic, partition), o in self._offsets.items()
                if (tp := TopicPartition(topic, partition)) in owned
            }
            if not offsets:
                continue
            started = time.perf_counter()
            try:
                await consumer.commit(offsets)
                self.metrics.observe_stage("offset_commit", time.perf_counter() - started)
            except Exception as exc:  # noqa: BLE001 - lag monitoring only: never fatal
                log.info(
                    "kafka offsets not committed (lag monitoring only)", extra={"error": str(exc)}
                )
            # the batches committed meanwhile are in the next commit
            await asyncio.sleep(max(0.0, OFFSET_COMMIT_SECONDS - (time.perf_counter() - started)))


class BatchHandler:
    """Feeds each batch to the step's pipeline; after a failure, every running partition is
    fetched again from its stored position, so nothing fetched is skipped."""

    def __init__(
        self,
        step: ProcessingStep,
        partitions: Partitions,
        progress: Progress,
        metrics: Metrics,
        polls: Polls,
        *,
        pipeline: bool = True,
    ) -> None:
        self.step = step
        self.partitions = partitions
        self.progress = progress
        self.metrics = metrics
        self.polls = polls
        self.pipeline = pipeline
        self.backoff = Backoff(first=0.5, most=10.0)
        self._returned_at: float | None = None

    async def __call__(self, records: tuple[ConsumerRecord[bytes, bytes], ...]) -> None:
        """Submits one batch: judged now, written once the batch before it has committed."""
        received = self.polls.count  # the consume loop hands over the batch it polled last
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
        metrics = self.metrics
        if self._returned_at is not None:  # waiting for this batch, idle time included
            metrics.observe_stage("fetch_wait", time.perf_counter() - self._returned_at)
        # The records' mean age at receipt: producer, broker and fetch. A producer may set
        # any timestamp; one in the future counts as no age.
        stamps = [r.timestamp_ms for r in batch if r.timestamp_ms is not None]
        if stamps:
            age = time.time() - sum(stamps) / len(stamps) / 1000
            metrics.observe_stage("arrival", max(age, 0.0))
        try:
            await self._submit(batch, received)
        except PositionMoved as moved:
            log.warning("partition not as known; taking it again", extra={"detail": str(moved)})
            try:
                await self.partitions.moved(moved)
            finally:
                self.partitions.reseek()
            return
        except Exception as exc:
            metrics.batch_errors.inc()
            pause = self.backoff.failed()
            log.exception(
                "batch failed; retrying from the stored positions",
                extra={"retry_in_seconds": pause, "error": f"{type(exc).__name__}: {exc}"},
            )
            await asyncio.sleep(pause)
            self.partitions.reseek()
            return
        self.backoff.succeeded()

    async def _submit(self, batch: list[InputRecord], received: int) -> None:
        step = self.step
        try:
            if self.pipeline:
                await step.submit(batch, received)
            else:
                self.progress.committed(await step.process(batch, received))
        finally:
            self._returned_at = time.perf_counter()
