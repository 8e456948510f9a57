"""The owner publishes: each input partition's outbox, by the instance that owns the partition.

A partition's publisher sends its verdicts and dead letters to the same partition number of
the verdict and dead-letter topics, in Kafka transactions of a producer whose transactional
id is the partition's own (``<REFEREE_RELAY_TRANSACTIONAL_ID>.<partition>``). Starting that
producer fences the partition's previous owner: the broker aborts its open transaction (or
completes its commit) before the start returns, and its later sends fail. Only then does
the publisher read the tails of its two output partitions, and it resumes after the last
committed position it finds there. The committed records of an output partition are thus a
prefix of its input partition's outbox, each exactly once for ``read_committed`` readers.

What the step commits for the partition is handed over at once (``offer``) and published
from memory; whatever the publisher did not see committed (before it took the partition, or
while it could not keep up) it reads from the store. docs/design.md, "The owner publishes",
gives the argument in full.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from aiokafka import TopicPartition
from aiokafka.errors import ProducerFenced

from referee.processing.records import OutboxChunk
from referee.service.metrics import Metrics
from referee.service.retry import Backoff
from referee.service.tails import POSITION_HEADER
from referee.store.outbox_store import OutboxRow

log = logging.getLogger("referee.publisher")

START_SECONDS = 60.0
CLOSE_SECONDS = 15.0


class TransactionalProducer(Protocol):
    """What a publisher needs of ``aiokafka.AIOKafkaProducer`` with a ``transactional_id``."""

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


MakeProducer = Callable[[str], TransactionalProducer]
"""Returns a new, unstarted transactional producer with the transactional id given."""


class PublisherStore(Protocol):
    """What a publisher reads and appends (``store/outbox_store.py``)."""

    async def stored_position(self, group_id: str, topic: str, partition: int) -> int:
        """Returns the partition's last processed offset (-1: none)."""

    async def rows_after(
        self, outbox: str, topic: str, partition: int, after: int, limit: int
    ) -> list[OutboxRow]:
        """Returns up to ``limit`` rows of the partition's outbox past ``after``, in order."""

    async def checkpoint(self, outbox: str, topic: str, partition: int) -> int:
        """Returns how far the partition's outbox is known to be published (0: unknown)."""

    async def save_checkpoints(self, topic: str, partition: int, positions: dict[str, int]) -> None:
        """Appends that the partition's outboxes are published up to these positions."""


class Tails(Protocol):
    """Reads the last committed outbox positions of output partitions (``tails.py``)."""

    async def read(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Returns the position of the last committed record of each partition that has one."""


@dataclass(frozen=True, slots=True)
class Outbox:
    """A table whose rows are published, in position order, to a topic."""

    name: str
    """The outbox table: ``verdicts`` or ``dead_letters``."""
    topic: str


@dataclass(frozen=True, slots=True)
class Publishing:
    """What every publisher of an instance shares."""

    group_id: str
    topic: str
    """The input topic."""
    transactional_prefix: str
    """A partition's transactional id is this, a dot and the partition number."""
    verdicts: Outbox
    dead_letters: Outbox
    make_producer: MakeProducer
    store: PublisherStore
    tails: Tails
    metrics: Metrics
    page: int = 2000
    """Rows read from the store at a time while catching up."""
    poll_seconds: float = 1.0
    checkpoint_every: int = 5000
    checkpoint_seconds: float = 5.0
    max_pending_rows: int = 200_000
    """Rows handed over and not yet published past which they are dropped and read again
    from the store once the publisher can publish (Kafka away for long)."""

    def transactional_id(self, partition: int) -> str:
        """Returns the transactional id of a partition's publisher."""
        return f"{self.transactional_prefix}.{partition}"


class PartitionPublisher:
    """Publishes one input partition's outboxes while this instance owns the partition."""

    def __init__(self, publishing: Publishing, partition: int) -> None:
        self.publishing = publishing
        self.partition = partition
        self.alive_at = time.monotonic()
        """When its loop last came round (for /livez)."""
        self._producer: TransactionalProducer | None = None
        self._cursor: dict[str, int] = {}
        """The last position published, per outbox (every row of the partition up to it is on
        its topic)."""
        self._through: int | None = None
        """The input offset up to which every committed outbox row has been published or is
        in the pending chunks (None: unknown, read the store)."""
        self._pending: deque[tuple[float, OutboxChunk]] = deque()
        self._pending_rows = 0
        self._lost = False
        """Chunks were dropped (too many pending) while a transaction was being sent."""
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._drain = False
        self._saved: dict[str, int] = {}
        self._saved_at = time.monotonic()
        self._unsaved_rows = 0
        self._task: asyncio.Task[None] | None = None

    # --- what the instance calls -----------------------------------------------------------

    def start(self) -> None:
        """Starts publishing (in a task of its own)."""
        self._task = asyncio.create_task(self._run(), name=f"publisher-{self.partition}")

    def offer(self, chunk: OutboxChunk) -> None:
        """Hands over what a committed transaction appended to the partition's outbox."""
        rows = len(chunk.verdicts) + len(chunk.dead_letters)
        if self._pending_rows + rows > self.publishing.max_pending_rows:
            log.warning(
                "publisher far behind: dropping what it holds, to read it from the store",
                extra={"partition": self.partition, "rows": self._pending_rows + rows},
            )
            self._pending.clear()
            self._pending_rows = 0
            self._lost = True
            self._through = None
            return
        self._pending.append((time.monotonic(), chunk))
        self._pending_rows += rows
        self._wake.set()

    async def stop(self, *, drain: bool, seconds: float = CLOSE_SECONDS) -> None:
        """Stops publishing: at once between two transactions, or (``drain``) once everything
        handed over is published; within ``seconds`` either way (then the transaction in hand
        is aborted with the producer)."""
        self._drain = drain
        self._stopping.set()
        self._wake.set()
        task = self._task
        if task is None:
            return
        done, _ = await asyncio.wait([task], timeout=seconds)
        if not done:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self._close()

    def unpublished(self) -> dict[str, tuple[int, float]]:
        """Returns, per outbox, the rows handed over and not yet published and the oldest
        one's age."""
        now = time.monotonic()
        found: dict[str, tuple[int, float]] = {}
        for name, rows_of in (("verdicts", _verdicts_of), ("dead_letters", _dead_of)):
            rows = 0
            oldest = 0.0
            for at, chunk in self._pending:
                n = rows_of(chunk)
                if n:
                    rows += n
                    oldest = max(oldest, now - at)
            found[name] = (rows, oldest)
        return found

    # --- the loop --------------------------------------------------------------------------

    async def _run(self) -> None:
        waits = Backoff(first=0.5, most=10.0)
        while not self._finished():
            self.alive_at = time.monotonic()
            try:
                if self._producer is None:
                    await self._resume()
                if self._through is None:
                    await self._catch_up()
                await self._publish_next()
                waits.succeeded()
            except ProducerFenced:
                delay = waits.failed()
                log.warning(
                    "publisher fenced: another instance took the partition",
                    extra={"partition": self.partition, "retry_in_seconds": delay},
                )
                await self._close()
                await _sleep_unless(self._stopping, delay)
            except Exception:
                delay = waits.failed()
                log.exception(
                    "publisher failed; retrying",
                    extra={"partition": self.partition, "retry_in_seconds": delay},
                )
                await self._close()
                await _sleep_unless(self._stopping, delay)
        with contextlib.suppress(Exception):
            await self._save_checkpoint()

    def _finished(self) -> bool:
        if not self._stopping.is_set():
            return False
        return not (self._drain and self._pending and self._producer is not None)

    async def _resume(self) -> None:
        """Fences the partition's previous publisher, then reads where it got."""
        p = self.publishing
        producer = p.make_producer(p.transactional_id(self.partition))
        try:
            # the init of the transactional id: the previous holder's open transaction is
            # aborted (or its commit completed) before it returns
            await asyncio.wait_for(producer.start(), START_SECONDS)
        except BaseException:
            with contextlib.suppress(Exception):
                await producer.stop()
            raise
        self._producer = producer
        self._through = None
        outboxes = (p.verdicts, p.dead_letters)
        tails = await p.tails.read([TopicPartition(o.topic, self.partition) for o in outboxes])
        for o in outboxes:
            known = await p.store.checkpoint(o.name, p.topic, self.partition)
            self._cursor[o.name] = max(known, tails.get(TopicPartition(o.topic, self.partition), 0))
        self._saved = dict(self._cursor)
        log.info(
            "publisher resumes",
            extra={"partition": self.partition, "published": dict(self._cursor)},
        )

    async def _catch_up(self) -> None:
        """Publishes what the store holds past the cursors, then goes on from the position
        it read first (everything committed up to it is now published)."""
        p = self.publishing
        reading = time.perf_counter()
        stored = await p.store.stored_position(p.group_id, p.topic, self.partition)
        self._lost = False
        for outbox in (p.verdicts, p.dead_letters):
            while True:
                rows = await p.store.rows_after(
                    outbox.name, p.topic, self.partition, self._cursor[outbox.name], p.page
                )
                if rows:
                    await self._transaction({outbox: rows})
                if len(rows) < p.page:
                    break
        p.metrics.observe_stage("relay_read", time.perf_counter() - reading)
        self._through = None if self._lost else stored
        self._drop_covered()

    def _drop_covered(self) -> None:
        through = self._through
        pending = self._pending
        while through is not None and pending and pending[0][1].through <= through:
            _, chunk = pending.popleft()
            self._pending_rows -= len(chunk.verdicts) + len(chunk.dead_letters)

    async def _publish_next(self) -> None:
        """Publishes the pending chunks that follow on from what is published, in one
        transaction; waits for some when there are none."""
        self._drop_covered()
        if not self._pending:
            self._wake.clear()
            if not self._stopping.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.publishing.poll_seconds)
            await self._maybe_checkpoint(quiet=not self._pending)
            return
        through = self._through
        assert through is not None
        p = self.publishing
        verdicts: list[OutboxRow] = []
        dead: list[OutboxRow] = []
        taken_at = self._pending[0][0]
        cursor_v = self._cursor[p.verdicts.name]
        cursor_d = self._cursor[p.dead_letters.name]
        while self._pending and self._pending[0][1].after == through:
            _, chunk = self._pending.popleft()
            self._pending_rows -= len(chunk.verdicts) + len(chunk.dead_letters)
            through = chunk.through
            verdicts += [
                OutboxRow(v.position, v.game_id.encode(), v.body.encode())
                for v in chunk.verdicts
                if v.position > cursor_v
            ]
            dead += [
                OutboxRow(d.position, d.key, d.body.encode())
                for d in chunk.dead_letters
                if d.position > cursor_d
            ]
        if through == self._through:  # the first chunk does not follow on: read the store
            self._through = None
            return
        p.metrics.observe_stage("relay_wake", time.monotonic() - taken_at)
        if verdicts or dead:
            await self._transaction({p.verdicts: verdicts, p.dead_letters: dead})
        self._through = None if self._lost else through
        await self._maybe_checkpoint(quiet=False)

    async def _transaction(self, rows: dict[Outbox, list[OutboxRow]]) -> None:
        """Publishes rows in one Kafka transaction, each to the partition's number."""
        producer = self._producer
        assert producer is not None
        metrics = self.publishing.metrics
        sending = time.perf_counter()
        await producer.begin_transaction()
        try:
            futures = []
            for outbox, outbox_rows in rows.items():
                for row in outbox_rows:
                    future = await producer.send(
                        outbox.topic,
                        row.body,
                        key=row.key,
                        partition=self.partition,
                        headers=[(POSITION_HEADER, str(row.position).encode())],
                    )
                    future.add_done_callback(_retrieved)
                    futures.append(future)
            # Every record must be on the broker before the commit: a commit after a failed
            # send would make the rest visible with a gap in the outbox.
            await asyncio.gather(*futures)
            sent = time.perf_counter()
            await producer.commit_transaction()
        except Exception as failed:
            metrics.relay_transactions.labels("aborted").inc()
            if not isinstance(failed, ProducerFenced):  # else its new holder aborted it
                # so that read_committed readers are not held back until the next start
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(producer.abort_transaction(), CLOSE_SECONDS)
            raise
        metrics.observe_stage("relay_send", sent - sending)
        metrics.observe_stage("relay_commit", time.perf_counter() - sent)
        metrics.relay_transactions.labels("committed").inc()
        for outbox, outbox_rows in rows.items():
            if outbox_rows:
                self._cursor[outbox.name] = outbox_rows[-1].position
                self._unsaved_rows += len(outbox_rows)
                metrics.published.labels(outbox.topic).inc(len(outbox_rows))

    async def _maybe_checkpoint(self, *, quiet: bool) -> None:
        """Saves the cursors that moved: after a quiet poll, every ``checkpoint_every`` rows,
        or ``checkpoint_seconds`` after the last save."""
        if not self._unsaved_rows:
            return
        p = self.publishing
        due = (
            quiet
            or self._unsaved_rows >= p.checkpoint_every
            or time.monotonic() - self._saved_at >= p.checkpoint_seconds
        )
        if due:
            await self._save_checkpoint()

    async def _save_checkpoint(self) -> None:
        moved = {o: c for o, c in self._cursor.items() if c > self._saved.get(o, 0)}
        if not moved:
            return
        p = self.publishing
        await p.store.save_checkpoints(p.topic, self.partition, moved)
        self._saved.update(moved)
        self._saved_at = time.monotonic()
        self._unsaved_rows = 0

    async def _close(self) -> None:
        """Closes the producer (a transaction left open is aborted by the broker when the
        next holder starts; closing it here does not wait for that)."""
        producer, self._producer = self._producer, None
        self._through = None
        if producer is None:
            return
        try:
            await asyncio.wait_for(producer.stop(), CLOSE_SECONDS)
        except Exception:
            log.warning("publisher producer did not stop cleanly", exc_info=True)


class Publishers:
    """The publishers of the input partitions this instance owns."""

    def __init__(self, publishing: Publishing) -> None:
        self.publishing = publishing
        self.by_partition: dict[int, PartitionPublisher] = {}

    def appended(self, chunks: list[OutboxChunk]) -> None:
        """Hands each partition's chunk to its publisher (the step's ``on_appended``)."""
        topic = self.publishing.topic
        for chunk in chunks:
            if chunk.topic == topic and (publisher := self.by_partition.get(chunk.partition)):
                publisher.offer(chunk)

    async def own(self, partitions: Iterable[int]) -> None:
        """Publishes exactly these partitions: keeps the publishers of those it has, starts
        the others, stops the publishers of partitions it no longer owns."""
        wanted = set(partitions)
        lost = [p for p in self.by_partition if p not in wanted]
        for p in wanted - set(self.by_partition):
            publisher = self.by_partition[p] = PartitionPublisher(self.publishing, p)
            publisher.start()
        stopping = [self.by_partition.pop(p) for p in lost]
        await asyncio.gather(*(pub.stop(drain=False) for pub in stopping))
        self.publishing.metrics.relay_partitions.set(len(self.by_partition))

    async def stop(self) -> None:
        """Publishes what was handed over (within ``CLOSE_SECONDS``), then stops them all."""
        stopping = list(self.by_partition.values())
        self.by_partition.clear()
        await asyncio.gather(*(pub.stop(drain=True) for pub in stopping))
        self.publishing.metrics.relay_partitions.set(0)

    def alive_at(self) -> float:
        """When the least recent of their loops came round (now, with none)."""
        return min((p.alive_at for p in self.by_partition.values()), default=time.monotonic())

    def update_gauges(self) -> None:
        """Sets the unpublished-rows gauges from what the publishers hold."""
        rows: dict[str, int] = {"verdicts": 0, "dead_letters": 0}
        oldest: dict[str, float] = {"verdicts": 0.0, "dead_letters": 0.0}
        for publisher in self.by_partition.values():
            for outbox, (n, age) in publisher.unpublished().items():
                rows[outbox] += n
                oldest[outbox] = max(oldest[outbox], age)
        metrics = self.publishing.metrics
        for outbox, count in rows.items():
            metrics.relay_unpublished.labels(outbox).set(count)
            metrics.relay_oldest_unpublished.labels(outbox).set(oldest[outbox])


def _verdicts_of(chunk: OutboxChunk) -> int:
    return len(chunk.verdicts)


def _dead_of(chunk: OutboxChunk) -> int:
    return len(chunk.dead_letters)


def _retrieved(future: asyncio.Future[Any]) -> None:
    # a failed transaction raises its first error; the others would be logged as never read
    if not future.cancelled():
        future.exception()


async def _sleep_unless(stopping: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), seconds)
