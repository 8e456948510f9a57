"""The relay: outbox rows to their topics, in order, each exactly once for read_committed readers.

One relay leads at a time across all instances (a PostgreSQL session lock). It publishes
through a Kafka transactional producer whose ``transactional_id`` every instance shares: on
taking the lead it starts a fresh producer, and the broker's init of that id fences the
previous leader (its open transaction is aborted, its later sends and commits fail). Only then
does it read the last committed records of every partition of each output topic: their
``outbox-position`` header tells how far that partition got, so the relay resumes after it
and publishes nothing twice. Each pump of rows is one transaction. It chooses each record's
partition itself (Kafka's murmur2 partitioner on the key), so the committed records of a
partition are a prefix of the outbox in position order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import ProducerFenced
from aiokafka.partitioner import murmur2

from referee.service.metrics import Metrics, RemoteFamily
from referee.service.retry import Backoff
from referee.store.relay_store import Backlog, OutboxRow

log = logging.getLogger("referee.relay")

POSITION_HEADER = "outbox-position"
TAIL_WINDOW = 50
TAIL_STALL_SECONDS = 10.0
START_SECONDS = 60.0
CLOSE_SECONDS = 15.0


class TransactionalProducer(Protocol):
    """What the relay needs of ``aiokafka.AIOKafkaProducer`` with a ``transactional_id``."""

    async def start(self) -> None:
        """Connects and initialises the transactional id (fencing its earlier holders)."""

    async def stop(self) -> None:
        """Flushes and closes the connections."""

    async def begin_transaction(self) -> None:
        """Opens a transaction."""

    async def commit_transaction(self) -> None:
        """Commits the open transaction."""

    async def abort_transaction(self) -> None:
        """Aborts the open transaction."""

    async def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> asyncio.Future[Any]:
        """Queues a record; returns a future settled when the broker has it."""


MakeProducer = Callable[[], TransactionalProducer]
"""Returns a new, unstarted transactional producer (always the same transactional id)."""


class RelaySession(Protocol):
    """A store session of the relay: the relay lock goes with it (``store/relay_store.py``)."""

    async def try_lead(self) -> bool:
        """Takes the relay lock if no other session holds it."""

    async def release(self) -> None:
        """Gives the relay lock back."""

    async def listen(self, wake: Callable[[], None]) -> None:
        """Calls ``wake`` whenever new outbox rows commit (from any instance)."""

    async def unlisten(self) -> None:
        """Stops calling it."""

    async def checkpoint(self, outbox: str) -> int:
        """Returns how far the outbox is known to be published (0: nothing known)."""

    async def rows_after(self, outbox: str, cursor: int, limit: int) -> list[OutboxRow]:
        """Returns up to ``limit`` rows of the outbox past ``cursor``, in position order."""

    async def save_checkpoint(self, outbox: str, position: int) -> None:
        """Records that every row of the outbox up to ``position`` is on its topic."""


class RelayStore(Protocol):
    """What the relay needs of a store: sessions, and the backlog for the metrics."""

    def session(self) -> AbstractAsyncContextManager[RelaySession]:
        """Opens a session of its own."""

    async def backlog(self, outbox: str, after: int) -> Backlog:
        """Returns the rows of the outbox past ``after`` and the oldest one's age."""


class Tails(Protocol):
    """Reads how far each partition of a topic got (``TopicTails`` on a real broker)."""

    async def read(self, topic: str) -> tuple[int, dict[int, int]]:
        """Returns (partition count, last committed outbox position per partition)."""


@dataclass(frozen=True, slots=True)
class Outbox:
    """A table whose rows are published, in position order, to a topic."""

    name: str
    """The outbox table: ``verdicts`` or ``dead_letters``."""
    topic: str


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
    saved_at: float = field(default_factory=time.monotonic)
    """When its checkpoint was last saved (monotonic seconds)."""


class TopicTails:
    """Reads the outbox position of the last committed records of each partition of a topic."""

    def __init__(self, consumer_options: dict[str, Any]) -> None:
        self.options = consumer_options

    async def read(self, topic: str) -> tuple[int, dict[int, int]]:
        """Returns (partition count, last committed outbox position per partition that has one).

        Reads ``read_committed``: the end offsets are then the last stable offsets, and
        records of aborted transactions are skipped. Those can fill a partition's tail (an
        aborted pump leaves up to a batch of them, and every commit leaves a marker that
        takes an offset), so the window grows backwards until a committed record is found.
        """
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
            window = TAIL_WINDOW
            spans = {tp: (max(0, ends[tp] - window), ends[tp]) for tp in tps if ends[tp] > 0}
            while spans:
                found = await _read_spans(consumer, topic, spans)
                last.update(found)
                window *= 8
                spans = {
                    tp: (max(0, start - window), start)
                    for tp, (start, _) in spans.items()
                    if tp.partition not in found and start > 0
                }
            return len(tps), last
        finally:
            await consumer.stop()


async def _read_spans(
    consumer: AIOKafkaConsumer, topic: str, spans: dict[TopicPartition, tuple[int, int]]
) -> dict[int, int]:
    """Reads [start, stop) of each partition; returns the highest position header of each."""
    found: dict[int, int] = {}
    consumer.resume(*spans)
    for tp, (start, _) in spans.items():
        consumer.seek(tp, start)
    pending = set(spans)
    positions = {tp: spans[tp][0] for tp in pending}
    moved_at = time.monotonic()
    while pending:
        batch = await consumer.getmany(*pending, timeout_ms=200)
        for tp, records in batch.items():
            stop = spans[tp][1]
            for r in records:
                position = _header(r.headers) if r.offset < stop else None
                if position is not None:
                    found[tp.partition] = max(found.get(tp.partition, 0), position)
        for tp in list(pending):
            # the position moves past aborted batches and commit markers too, which
            # getmany never returns: it, not the records, says the span is read
            now_at = await consumer.position(tp)
            if now_at != positions[tp]:
                positions[tp] = now_at
                moved_at = time.monotonic()
            if now_at >= spans[tp][1]:
                pending.discard(tp)
                consumer.pause(tp)
        if pending and time.monotonic() - moved_at > TAIL_STALL_SECONDS:
            raise RuntimeError(f"could not read the tail of {topic!r}")
    return found


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
        store: RelayStore,
        outboxes: list[Outbox],
        make_producer: MakeProducer,
        tails: Tails,
        metrics: Metrics,
        *,
        batch: int = 2000,
        poll_seconds: float = 1.0,
        checkpoint_every: int = 5000,
        checkpoint_seconds: float = 5.0,
    ) -> None:
        self.store = store
        self.outboxes = outboxes
        self.make_producer = make_producer
        self.tails = tails
        self.metrics = metrics
        self.batch = batch
        self.poll_seconds = poll_seconds
        self.checkpoint_every = checkpoint_every
        self.checkpoint_seconds = checkpoint_seconds
        self.leading = False
        self.in_transaction = False
        self.wake = asyncio.Event()
        self.woken_at = 0.0
        """When the relay was last woken (a commit's notification, or this instance's step)."""
        self.alive_at = time.monotonic()
        """When the relay's loop last came round (for /livez): a pump, an idle wait, or an
        attempt at the lead."""
        self._progress: dict[str, _Progress] = {}

    async def run(self, stopping: asyncio.Event) -> None:
        """Leads when it can, until ``stopping`` is set; recovers from every failure."""
        waits = Backoff(first=0.5, most=10.0)
        while not stopping.is_set():
            self.alive_at = time.monotonic()
            try:
                await self._try_to_lead(stopping)
                waits.succeeded()
            except ProducerFenced:
                delay = waits.failed()
                log.warning(
                    "relay fenced: a newer leader initialised the transactional id",
                    extra={"retry_in_seconds": delay},
                )
                await sleep_unless(stopping, delay)
            except Exception:
                delay = waits.failed()
                log.exception("relay failed; retrying", extra={"retry_in_seconds": delay})
                await sleep_unless(stopping, delay)

    def notify(self, at: float | None = None) -> None:
        """Wakes the relay: outbox rows were committed (at ``at``, ``time.perf_counter``;
        now if not given)."""
        self.woken_at = time.perf_counter() if at is None else at
        self.wake.set()

    async def backlog(self) -> dict[str, Backlog]:
        """Returns each outbox's rows past what this relay published (empty unless it leads)."""
        if not self.leading:
            return {}
        return {
            name: await self.store.backlog(name, state.cursor)
            for name, state in list(self._progress.items())
        }

    async def metric_families(self) -> list[RemoteFamily]:
        """None: this relay writes its metrics into the instance's registry itself."""
        return []

    async def publish_backlog(self) -> None:
        """Sets the backlog gauges from ``backlog`` (0 unless this relay leads)."""
        try:
            backlog = await self.backlog()
        except Exception:
            log.warning("relay backlog not read", exc_info=True)
            return
        for outbox in self.outboxes:
            known = backlog.get(outbox.name)
            self.metrics.relay_unpublished.labels(outbox.name).set(known.rows if known else 0)
            self.metrics.relay_oldest_unpublished.labels(outbox.name).set(
                known.oldest_seconds if known else 0
            )

    async def _try_to_lead(self, stopping: asyncio.Event) -> None:
        async with self.store.session() as session:
            if not await session.try_lead():
                await sleep_unless(stopping, 1.0)
                return
            self.leading = True
            self.metrics.relay_leader.set(1)
            # A fresh producer every term: a fenced or failed one cannot be reused.
            producer = self.make_producer()
            try:
                # Fences the previous leader: the broker aborts its open transaction (or
                # waits for its commit to complete) before the init returns, so the tails
                # read next hold every record that will ever be committed before ours.
                await asyncio.wait_for(producer.start(), START_SECONDS)
                log.info("relay leads: publishing the outboxes")
                # Woken by every commit of outbox rows; the poll is only a safety net.
                await session.listen(self.notify)
                await self._lead(session, producer, stopping)
            finally:
                self.leading = False
                self.metrics.relay_leader.set(0)
                self._progress = {}
                # Leave no transaction open behind the lock: a successor's init would
                # abort it anyway, but until then it holds back read_committed readers.
                await self._close(producer)
                try:
                    await session.unlisten()
                    await session.release()
                except Exception:
                    log.warning("relay lock not released; its session is closed", exc_info=True)

    async def _close(self, producer: TransactionalProducer) -> None:
        if self.in_transaction:
            self.in_transaction = False
            self.metrics.relay_transactions.labels("aborted").inc()
            try:
                await asyncio.wait_for(producer.abort_transaction(), CLOSE_SECONDS)
            except Exception:
                log.warning("relay transaction not aborted here", exc_info=True)
        try:
            await asyncio.wait_for(producer.stop(), CLOSE_SECONDS)
        except Exception:
            log.warning("relay producer did not stop cleanly", exc_info=True)

    async def _lead(
        self, session: RelaySession, producer: TransactionalProducer, stopping: asyncio.Event
    ) -> None:
        progress = self._progress = {o.name: await self._resume(session, o) for o in self.outboxes}
        while not stopping.is_set():
            self.alive_at = time.monotonic()
            # Cleared before the outboxes are read: a commit notified from here on (during
            # the reads, the sends or a checkpoint) keeps it set, and the relay reads again
            # at once instead of sleeping through its poll.
            self.wake.clear()
            more = False
            for outbox in self.outboxes:
                read = await self._pump(session, producer, outbox, progress[outbox.name])
                more = more or read >= self.batch
            if not more and not self.wake.is_set():
                # Every outbox was read to its end after the wake-up was cleared: a row
                # committed since comes with a wake-up of its own, so reading again before
                # one (two empty reads a pump, when pumps follow each other) finds nothing.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), self.poll_seconds)
                if self.wake.is_set() and self.woken_at:
                    self.metrics.observe_stage("relay_wake", time.perf_counter() - self.woken_at)
            # Quiet for a whole poll: record how far it got. Otherwise (a full pump, a commit
            # during it, a wake-up) only every checkpoint_every rows or checkpoint_seconds,
            # not a write between every two pumps.
            quiet = not more and not self.wake.is_set()
            await self._checkpoint(session, progress, force=quiet)
        await self._checkpoint(session, progress, force=True)

    async def _resume(self, session: RelaySession, outbox: Outbox) -> _Progress:
        cursor = await session.checkpoint(outbox.name)
        partitions, last = await self.tails.read(outbox.topic)
        log.info(
            "relay resumes",
            extra={"outbox": outbox.name, "checkpoint": cursor, "published_tails": last},
        )
        return _Progress(partitions, cursor, dict(last))

    async def _pump(
        self,
        session: RelaySession,
        producer: TransactionalProducer,
        outbox: Outbox,
        state: _Progress,
    ) -> int:
        reading = time.perf_counter()
        rows = await session.rows_after(outbox.name, state.cursor, self.batch)
        if not rows:
            return 0
        self.metrics.observe_stage("relay_read", time.perf_counter() - reading)
        todo: list[tuple[int, OutboxRow]] = []
        for row in rows:
            partition = partition_for(row.key, state.partitions, row.position)
            if row.position <= state.last.get(partition, 0):
                continue  # already on the topic (found in its tail on resume)
            todo.append((partition, row))
        if todo:
            sending = time.perf_counter()
            await producer.begin_transaction()
            self.in_transaction = True
            futures = []
            for partition, row in todo:
                future = await producer.send(
                    outbox.topic,
                    row.body,
                    key=row.key,
                    partition=partition,
                    headers=[(POSITION_HEADER, str(row.position).encode())],
                )
                future.add_done_callback(_retrieved)
                futures.append(future)
            # Every record must be on the broker before the commit: a commit after a
            # failed send would make the rest visible with a gap in the outbox.
            await asyncio.gather(*futures)
            sent = time.perf_counter()
            await producer.commit_transaction()
            self.metrics.observe_stage("relay_send", sent - sending)
            self.metrics.observe_stage("relay_commit", time.perf_counter() - sent)
            self.in_transaction = False
            self.metrics.relay_transactions.labels("committed").inc()
        for partition, row in todo:
            state.last[partition] = max(state.last.get(partition, 0), row.position)
        state.cursor = rows[-1].position
        state.since_checkpoint += len(rows)
        self.metrics.published.labels(outbox.topic).inc(len(todo))
        return len(rows)

    async def _checkpoint(
        self, session: RelaySession, progress: dict[str, _Progress], *, force: bool
    ) -> None:
        """Saves each outbox's cursor that moved: when forced, after ``checkpoint_every``
        rows, or ``checkpoint_seconds`` after the last save (an outbox seldom written, such as
        the dead letters, is not left behind while verdicts keep the relay busy)."""
        now = time.monotonic()
        for name, state in progress.items():
            if state.since_checkpoint == 0:
                continue
            due = (
                force
                or state.since_checkpoint >= self.checkpoint_every
                or now - state.saved_at >= self.checkpoint_seconds
            )
            if not due:
                continue
            await session.save_checkpoint(name, state.cursor)
            state.since_checkpoint = 0
            state.saved_at = now


def _retrieved(future: asyncio.Future[Any]) -> None:
    # a failed pump raises its first error; the others would be logged as never retrieved
    if not future.cancelled():
        future.exception()


async def sleep_unless(stopping: asyncio.Event, seconds: float) -> None:
    """Sleeps ``seconds``, or less if ``stopping`` is set meanwhile."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), seconds)
