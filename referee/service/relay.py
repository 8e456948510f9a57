"""The relay: outbox rows to their topics, in order, each exactly once in the normal course.

One relay leads at a time across all instances (a PostgreSQL session lock). On taking the
lead it reads the last records of every partition of each output topic: their
``outbox-position`` header tells how far that partition got, so the relay resumes after it
and publishes nothing twice. It publishes with an idempotent producer, explicitly choosing
each record's partition (Kafka's murmur2 partitioner on the key), so a partition's records
are a prefix of the outbox in position order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.partitioner import murmur2
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from referee.service.metrics import Metrics

log = logging.getLogger("referee.relay")

POSITION_HEADER = "outbox-position"
RELAY_LOCK = 0x5245_4C41_59  # "RELAY"
TAIL_WINDOW = 50

Publish = Callable[
    [str, bytes, bytes | None, int, dict[str, str]], Awaitable["asyncio.Future[Any]"]
]
"""(topic, value, key, partition, headers) -> a future settled when the broker has it."""


@dataclass(frozen=True, slots=True)
class Outbox:
    """A table whose rows are published, in position order, to a topic."""

    name: str
    topic: str
    key_column: str


def partition_for(key: bytes | None, partitions: int, position: int) -> int:
    """Returns the partition of a record: murmur2 of the key as Kafka's clients do."""
    if key is None:
        return position % partitions
    return int((murmur2(key) & 0x7FFFFFFF) % partitions)


@dataclass(slots=True)
class _Progress:
    partitions: int
    cursor: int
    last: dict[int, int] = field(default_factory=dict)
    since_checkpoint: int = 0


class TopicTails:
    """Reads the outbox position of the last records of each partition of a topic."""

    def __init__(self, consumer_options: dict[str, Any]) -> None:
        self.options = consumer_options

    async def read(self, topic: str) -> tuple[int, dict[int, int]]:
        """Returns (partition count, last outbox position per partition that has one)."""
        ids = await partition_ids(self.options, topic)
        consumer = AIOKafkaConsumer(
            enable_auto_commit=False,
            group_id=None,
            isolation_level="read_committed",
            **self.options,
        )
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in sorted(ids)]
            consumer.assign(tps)
            ends: dict[TopicPartition, int] = await consumer.end_offsets(tps)
            last: dict[int, int] = {}
            pending = {tp for tp in tps if ends[tp] > 0}
            for tp in pending:
                consumer.seek(tp, max(0, ends[tp] - TAIL_WINDOW))
            while pending:
                batch = await consumer.getmany(*pending, timeout_ms=2000)
                if not batch:
                    raise RuntimeError(f"could not read the tail of {topic!r}")
                for tp, records in batch.items():
                    for r in records:
                        position = _header(r.headers)
                        if position is not None:
                            last[tp.partition] = max(last.get(tp.partition, 0), position)
                    if records and records[-1].offset >= ends[tp] - 1:
                        pending.discard(tp)
            return len(tps), last
        finally:
            await consumer.stop()


async def partition_ids(options: dict[str, Any], topic: str) -> list[int]:
    """Returns the partition ids of a topic, asking the cluster (not a client's cache)."""
    admin = AIOKafkaAdminClient(**options)
    await admin.start()
    try:
        described = await admin.describe_topics([topic])
    finally:
        await admin.close()
    ids = sorted(p["partition"] for d in described for p in d.get("partitions", []))
    if not ids:
        raise RuntimeError(f"topic {topic!r} does not exist")
    return ids


def _header(headers: Any) -> int | None:
    for name, value in headers or ():
        if name == POSITION_HEADER:
            return int(value)
    return None


class OutboxRelay:
    """Publishes the verdict and dead-letter outboxes while it holds the relay lock."""

    def __init__(
        self,
        engine: AsyncEngine,
        outboxes: list[Outbox],
        publish: Publish,
        tails: TopicTails,
        metrics: Metrics,
        *,
        batch: int = 2000,
        poll_seconds: float = 0.05,
        checkpoint_every: int = 5000,
        flush: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.engine = engine
        self.outboxes = outboxes
        self.publish = publish
        self.tails = tails
        self.metrics = metrics
        self.batch = batch
        self.poll_seconds = poll_seconds
        self.checkpoint_every = checkpoint_every
        self.flush = flush
        self.leading = False
        self.wake = asyncio.Event()

    async def run(self, stopping: asyncio.Event) -> None:
        """Leads when it can, until ``stopping`` is set; recovers from every failure."""
        backoff = 0.5
        while not stopping.is_set():
            try:
                await self._try_to_lead(stopping)
                backoff = 0.5
            except Exception:
                log.exception("relay failed; retrying", extra={"retry_in_seconds": backoff})
                await _sleep_unless(stopping, backoff)
                backoff = min(backoff * 2, 10.0)

    async def _try_to_lead(self, stopping: asyncio.Event) -> None:
        async with self.engine.connect() as conn:
            got = (
                await conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": RELAY_LOCK})
            ).scalar()
            await conn.commit()
            if not got:
                await _sleep_unless(stopping, 1.0)
                return
            self.leading = True
            log.info("relay leads: publishing the outboxes")
            try:
                await self._lead(conn, stopping)
            finally:
                self.leading = False
                # Hand over only what is on the broker: a new leader reads the tails, so
                # records still in the producer's buffers must land before the lock goes.
                if self.flush is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(self.flush(), 15)
                with contextlib.suppress(Exception):
                    await conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": RELAY_LOCK})
                    await conn.commit()

    async def _lead(self, conn: AsyncConnection, stopping: asyncio.Event) -> None:
        progress = {o.name: await self._resume(conn, o) for o in self.outboxes}
        while not stopping.is_set():
            moved = 0
            for outbox in self.outboxes:
                moved += await self._pump(conn, outbox, progress[outbox.name])
            if not moved:
                await self._checkpoint(conn, progress, force=True)
                self.wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), self.poll_seconds)
            else:
                await self._checkpoint(conn, progress, force=False)

    async def _resume(self, conn: AsyncConnection, outbox: Outbox) -> _Progress:
        checkpoint = (
            await conn.execute(
                text("SELECT max(position) FROM relay_checkpoints WHERE outbox = :o"),
                {"o": outbox.name},
            )
        ).scalar()
        await conn.commit()
        partitions, last = await self.tails.read(outbox.topic)
        cursor = int(checkpoint or 0)
        log.info(
            "relay resumes",
            extra={"outbox": outbox.name, "checkpoint": cursor, "published_tails": last},
        )
        return _Progress(partitions, cursor, dict(last))

    async def _pump(self, conn: AsyncConnection, outbox: Outbox, state: _Progress) -> int:
        rows = (
            await conn.execute(
                text(
                    f"SELECT position, {outbox.key_column}, body FROM {outbox.name} "  # noqa: S608 - names are constants
                    "WHERE position > :c ORDER BY position LIMIT :n"
                ),
                {"c": state.cursor, "n": self.batch},
            )
        ).all()
        await conn.commit()
        if not rows:
            self.metrics.relay_lag.labels(outbox.name).set(0)
            return 0
        sent: list[tuple[int, int, asyncio.Future[Any]]] = []
        for position, key, body in rows:
            key_bytes = key if key is None or isinstance(key, bytes) else str(key).encode()
            partition = partition_for(key_bytes, state.partitions, position)
            if position <= state.last.get(partition, 0):
                continue  # already on the topic (found in its tail on resume)
            future = await self.publish(
                outbox.topic,
                str(body).encode(),
                key_bytes,
                partition,
                {POSITION_HEADER: str(position)},
            )
            sent.append((partition, position, future))
        await asyncio.gather(*(f for _, _, f in sent))
        for partition, position, _ in sent:
            state.last[partition] = max(state.last.get(partition, 0), position)
        state.cursor = int(rows[-1][0])
        state.since_checkpoint += len(rows)
        self.metrics.published.labels(outbox.topic).inc(len(sent))
        return len(rows)

    async def _checkpoint(
        self, conn: AsyncConnection, progress: dict[str, _Progress], *, force: bool
    ) -> None:
        for name, state in progress.items():
            if state.since_checkpoint == 0 or (
                not force and state.since_checkpoint < self.checkpoint_every
            ):
                continue
            await conn.execute(
                text(
                    "INSERT INTO relay_checkpoints (outbox, position) VALUES (:o, :p) "
                    "ON CONFLICT DO NOTHING"
                ),
                {"o": name, "p": state.cursor},
            )
            await conn.commit()
            state.since_checkpoint = 0

    async def lag(self) -> dict[str, int]:
        """Returns how many outbox rows are past the newest checkpoint (for /metrics)."""
        async with self.engine.connect() as conn:
            out = {}
            for o in self.outboxes:
                n = (
                    await conn.execute(
                        text(
                            f"SELECT count(*) FROM {o.name} WHERE position > "  # noqa: S608
                            "(SELECT coalesce(max(position), 0) FROM relay_checkpoints "
                            "WHERE outbox = :o)"
                        ),
                        {"o": o.name},
                    )
                ).scalar()
                out[o.name] = int(n or 0)
            return out


async def _sleep_unless(stopping: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), seconds)
