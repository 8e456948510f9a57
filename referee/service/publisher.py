"""The owner publishes: every owned input partition's outbox, by one producer per instance.

The instance publishes the verdicts and dead letters of the input partitions it owns, each to
the same partition number of the verdict and dead-letter topics, through **one**
transactional producer (``<REFEREE_RELAY_TRANSACTIONAL_ID>.<instance>``): each pump is one
Kafka transaction carrying the rows in hand of every partition, so the broker's cost (the
transactions begun and ended, their requests) does not grow with the partitions an instance
owns. Fencing stays per partition, by other means (``partitions.py``): a partition's new owner
takes a term of ownership in the store, then fences the previous owner's producer by its
transactional id, and only then reads the output partitions' last records.

Every record carries the offset of the input record that gave it (``input-offset``). The
committed records of an output partition are those of a prefix of the input partition, in
input order, so the last one says which input records' rows are on the topic: a row is sent
only if its input record comes after that one. The match is by the input's coordinate, not
by a position the store hands out, so it holds when the store went back in time and judged
the lost input again.

What the step commits for a partition is handed over at once (``offer``) and published from
memory; whatever the publisher did not see committed (before it took the partition, or while
it could not keep up) it reads from the store. docs/design.md, "The owner publishes", gives
the argument in full.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from aiokafka import TopicPartition
from aiokafka.errors import (
    CorruptRecordException,
    InvalidMessageError,
    InvalidTimestampError,
    MessageSizeTooLargeError,
    ProducerFenced,
    RecordListTooLargeError,
    RecordTooLargeError,
    UnsupportedForMessageFormatError,
)

from referee.processing.records import OutboxChunk
from referee.processing.rows import Term
from referee.service.metrics import Metrics
from referee.service.retry import Backoff
from referee.service.tails import CAUSE_HEADER, POSITION_HEADER, Survey, Tail
from referee.store.outbox_store import OutboxRow

log = logging.getLogger("referee.publisher")

START_SECONDS = 60.0
CLOSE_SECONDS = 15.0
KEY_CUT_HEADER = "key-cut"
"""On a dead letter whose input key was longer than a dead letter carries: the key's whole
length (the key is its first bytes; the whole record is in the store)."""

REFUSED_FOR_GOOD = (
    MessageSizeTooLargeError,
    RecordTooLargeError,
    RecordListTooLargeError,
    InvalidMessageError,
    CorruptRecordException,
    InvalidTimestampError,
    UnsupportedForMessageFormatError,
)
"""What the producer or the broker answers about a record itself: sending it again would get
the same answer, so the row is withheld (kept in the store, not published) and the rest go on."""


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
        """Queues a record; returns a future settled when the broker has it (raises at once
        when the record is larger than the producer sends)."""


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

    async def published_position(
        self, outbox: str, topic: str, partition: int, cause: int, hint: int
    ) -> int:
        """Returns the position of the partition's last row whose input record is at or before
        offset ``cause`` (0: none), trying ``hint`` first."""

    async def withhold(
        self, outbox: str, topic: str, partition: int, row: OutboxRow, reason: str
    ) -> None:
        """Records that a row is not published: the broker refused it for good."""

    async def processed_record(
        self, group_id: str, topic: str, partition: int, offset: int
    ) -> bytes | None:
        """Returns the bytes the journal holds of the partition's last processed record (at
        ``offset``), None when not found."""

    async def accepted_gap(
        self, group_id: str, topic: str, partition: int, first_missing: int, next_offset: int
    ) -> bool:
        """Checks if an operator accepted the loss of the partition's input from
        ``first_missing`` up to ``next_offset``."""


class Tails(Protocol):
    """Reads the output topics' last records and the input's offsets (``tails.py``)."""

    async def read(self, partitions: list[TopicPartition]) -> dict[TopicPartition, Tail]:
        """Returns the last committed record of each partition that has one."""

    async def survey(
        self, stored: dict[TopicPartition, int], outputs: list[TopicPartition]
    ) -> Survey:
        """Returns what the input partitions hold and the outputs' last committed records."""


@dataclass(frozen=True, slots=True)
class Outbox:
    """A table whose rows are published, in position order, to a topic."""

    name: str
    """The outbox table: ``verdicts`` or ``dead_letters``."""
    topic: str


@dataclass(frozen=True, slots=True)
class Publishing:
    """What the instance's publishing needs."""

    group_id: str
    topic: str
    """The input topic."""
    transactional_prefix: str
    """The instance's transactional id is this, a dot and the instance's name; the partition
    publishers of release 0.4 used this, a dot and the partition number."""
    verdicts: Outbox
    dead_letters: Outbox
    make_producer: MakeProducer
    store: PublisherStore
    tails: Tails
    metrics: Metrics
    page: int = 2000
    """Rows read from the store at a time while catching up (per partition and transaction)."""
    transaction_rows: int = 20_000
    """The most rows one transaction carries: a partition catching up a backlog shares the
    transactions with the others' fresh rows instead of holding them up."""
    poll_seconds: float = 1.0
    checkpoint_every: int = 5000
    checkpoint_seconds: float = 5.0
    max_pending_rows: int = 200_000
    """Rows handed over to a partition and not yet published past which they are dropped and
    read again from the store once the publisher can publish (Kafka away for long)."""
    dead_letter_key_bytes: int = 16 * 1024
    """The longest input key a dead letter carries whole: the record's body is bounded by the
    contract (``EventRejected`` drops ``raw`` past 512 KiB of JSON) and its key by this, so
    every dead letter fits a topic's default 1 MiB."""

    def transactional_id(self, instance: str) -> str:
        """Returns the transactional id of an instance's publisher."""
        return f"{self.transactional_prefix}.{instance}"

    def legacy_transactional_id(self, partition: int) -> str:
        """Returns the transactional id release 0.4 published a partition with."""
        return f"{self.transactional_prefix}.{partition}"

    @property
    def outboxes(self) -> tuple[Outbox, Outbox]:
        """Both outboxes, verdicts first."""
        return (self.verdicts, self.dead_letters)


@dataclass(slots=True)
class Cursor:
    """How far one outbox of a partition is on its topic."""

    position: int = 0
    """The store's position of the last row on the topic (rows past it are read from it)."""
    cause: int = -1
    """The input offset of the last record whose rows are on the topic (-1: none known): a
    row of an earlier or the same record is never sent."""
    saved: int = 0
    """The position last saved as a checkpoint."""


class PartitionOutbox:
    """One owned input partition's outboxes: how far they are on their topics, and the rows
    handed over and not yet published."""

    def __init__(self, partition: int, cursors: dict[str, Cursor], max_pending_rows: int) -> None:
        self.partition = partition
        self.cursors = cursors
        self.max_pending_rows = max_pending_rows
        self.through: int | None = None
        """The input offset up to which every committed outbox row has been published or is
        in the pending chunks (None: unknown, read the store)."""
        self.pending: deque[tuple[float, OutboxChunk]] = deque()
        self.pending_rows = 0
        self.dropped = False
        """Chunks were dropped (too many pending) while the store was being read."""
        self.reading: int | None = None
        """While it catches up from the store: the stored position read first."""
        self.read: asyncio.Task[Page] | None = None
        """The page of the store being read for it (off the transactions' path: the other
        partitions' rows are published meanwhile), or read and not yet published."""
        self.saved_at = time.monotonic()
        self.unsaved_rows = 0

    def forget_read(self) -> None:
        """Drops the page being read (its cursors are read again, or it is no longer
        published here)."""
        if self.read is not None:
            self.read.cancel()
            self.read = None

    def offer(self, chunk: OutboxChunk) -> bool:
        """Keeps what a committed transaction appended; says whether the publisher has work."""
        rows = len(chunk.verdicts) + len(chunk.dead_letters)
        if self.pending_rows + rows > self.max_pending_rows:
            log.warning(
                "publisher far behind: dropping what it holds, to read it from the store",
                extra={"partition": self.partition, "rows": self.pending_rows + rows},
            )
            self.pending.clear()
            self.pending_rows = 0
            self.dropped = True
            self.through = None
            return True
        self.pending.append((time.monotonic(), chunk))
        self.pending_rows += rows
        return True

    def drop_covered(self) -> None:
        """Forgets the chunks the store's read covered."""
        through = self.through
        pending = self.pending
        while through is not None and pending and pending[0][1].through <= through:
            _, chunk = pending.popleft()
            self.pending_rows -= len(chunk.verdicts) + len(chunk.dead_letters)

    def unpublished(self) -> dict[str, tuple[int, float]]:
        """Per outbox, the rows handed over and not yet published and the oldest one's age."""
        now = time.monotonic()
        found: dict[str, tuple[int, float]] = {}
        for name, rows_of in (("verdicts", _verdicts_of), ("dead_letters", _dead_of)):
            rows = 0
            oldest = 0.0
            for at, chunk in self.pending:
                n = rows_of(chunk)
                if n:
                    rows += n
                    oldest = max(oldest, now - at)
            found[name] = (rows, oldest)
        return found


@dataclass(frozen=True, slots=True)
class Page:
    """A page of the store's rows of one partition, past its cursors as they were when it
    was read."""

    reading: int
    """The stored position read first (the partition goes on from it once a page is short)."""
    after: dict[str, int]
    """Each outbox's cursor position the page was read after."""
    rows: dict[str, list[OutboxRow]]
    done: bool
    """Short for every outbox: nothing past it up to ``reading``."""

    def count(self) -> int:
        return sum(len(r) for r in self.rows.values())


class Batch:
    """The rows of one transaction, by partition and outbox, and what sending them moves."""

    def __init__(self) -> None:
        self.rows: dict[tuple[int, Outbox], list[OutboxRow]] = {}
        self.through: dict[int, int | None] = {}
        """The ``through`` each partition reaches once the batch is published."""
        self.oldest: float | None = None

    def add(self, partition: int, outbox: Outbox, rows: list[OutboxRow]) -> None:
        self.rows.setdefault((partition, outbox), []).extend(rows)

    def count(self) -> int:
        return sum(len(r) for r in self.rows.values())


@dataclass(slots=True)
class Health:
    """Whether the publisher's last try failed, since when, and why."""

    failing_since: float | None = None
    last_error: str = ""
    failures: int = field(default=0)


class Terms(Protocol):
    """The partitions' newest terms of ownership in the store (``store/step_store.py``)."""

    async def terms(self, group_id: str, topic: str, partitions: Sequence[int]) -> list[Term]:
        """Returns each partition's newest term and stored position."""


class Publisher:
    """Publishes the outboxes of every input partition this instance owns, through one
    transactional producer, one transaction a pump."""

    def __init__(self, publishing: Publishing, instance: str, terms: Terms) -> None:
        self.publishing = publishing
        self.transactional_id = publishing.transactional_id(instance)
        self.terms = terms
        """Asked after the producer was fenced: which partitions the store still names this
        instance's (the others a new owner took: never fenced back)."""
        self.partitions: dict[int, PartitionOutbox] = {}
        self.epochs: dict[int, int] = {}
        """The term each partition is published under."""
        self.lost: set[int] = set()
        """Partitions found taken by a new owner (for the partitions' owner to give up)."""
        self.ready = asyncio.Event()
        """Set once the producer has started: its init fenced any earlier holder of its id."""
        self.alive_at = time.monotonic()
        """When its loop last came round (for /livez)."""
        self.health = Health()
        self._producer: TransactionalProducer | None = None
        self._fenced = False
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._drain = False
        self._sending: set[int] = set()
        """The partitions whose rows the transaction in flight carries."""
        self._open_transaction = False
        """A transaction was begun and is neither committed nor aborted (as far as known)."""
        self._idle = asyncio.Condition()
        self._first = 0
        """Where the next transaction starts among the partitions (a turn each)."""
        self._task: asyncio.Task[None] | None = None

    # --- what the partitions' owner calls --------------------------------------------------

    def start(self) -> None:
        """Starts publishing (in a task of its own)."""
        self._task = asyncio.create_task(self._run(), name="publisher")

    def add(self, partition: int, epoch: int, cursors: dict[str, Cursor]) -> None:
        """Publishes a partition under its term from these cursors on (its new owner read them
        from the topics once the previous owner was fenced)."""
        old = self.partitions.get(partition)
        if old is not None:
            old.forget_read()
        self.partitions[partition] = PartitionOutbox(
            partition, cursors, self.publishing.max_pending_rows
        )
        self.epochs[partition] = epoch
        self.lost.discard(partition)
        self._wake.set()

    async def remove(self, partitions: Iterable[int]) -> None:
        """Stops publishing these partitions, once no transaction in flight carries them:
        nothing of theirs is in flight when this returns."""
        gone = set(partitions)
        async with self._idle:
            for p in gone:
                outbox = self.partitions.pop(p, None)
                if outbox is not None:
                    outbox.forget_read()
                self.epochs.pop(p, None)
            await self._idle.wait_for(lambda: not (self._sending & gone))

    def appended(self, chunks: list[OutboxChunk]) -> None:
        """Takes what a committed transaction appended to each partition's outbox (the step's
        ``on_appended``)."""
        topic = self.publishing.topic
        for chunk in chunks:
            if chunk.topic == topic:
                self.offer(chunk)

    def offer(self, chunk: OutboxChunk) -> None:
        """Hands over what a committed transaction appended to a partition's outbox."""
        outbox = self.partitions.get(chunk.partition)
        if outbox is not None and outbox.offer(chunk):
            self._wake.set()

    async def stop(self, *, drain: bool, seconds: float = CLOSE_SECONDS) -> bool:
        """Stops publishing: at once between two transactions, or (``drain``) once everything
        handed over is published; within ``seconds`` either way (then the transaction in hand
        is aborted with the producer). Returns whether no transaction of it can still be open
        on the broker (its partitions can then be given back without a fence)."""
        self._drain = drain
        self._stopping.set()
        self._wake.set()
        task = self._task
        if task is not None and task is not asyncio.current_task():
            done, _ = await asyncio.wait([task], timeout=seconds)
            if not done:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        return await self._close()

    def unpublished(self) -> dict[str, tuple[int, float]]:
        """Per outbox, the rows handed over and not yet published and the oldest one's age."""
        rows: dict[str, int] = {"verdicts": 0, "dead_letters": 0}
        oldest: dict[str, float] = {"verdicts": 0.0, "dead_letters": 0.0}
        for outbox in self.partitions.values():
            for name, (n, age) in outbox.unpublished().items():
                rows[name] += n
                oldest[name] = max(oldest[name], age)
        return {name: (rows[name], oldest[name]) for name in rows}

    # --- the loop --------------------------------------------------------------------------

    async def _run(self) -> None:
        waits = Backoff(first=0.5, most=10.0)
        while not self._finished():
            self.alive_at = time.monotonic()
            try:
                if self._producer is None:
                    await self._open()
                await self._pump()
                waits.succeeded()
                self.health.failing_since = None
            except ProducerFenced:
                await self._close()
                self._fenced = True
                delay = waits.failed()
                self._failed("fenced: a new owner took one of its partitions", delay)
                await _sleep_unless(self._stopping, min(delay, 0.5))
            except Exception as exc:  # noqa: BLE001 - retried, logged with its traceback
                await self._close()
                self._fenced = True  # the outcome of the transaction in hand is not known
                delay = waits.failed()
                self._failed(f"{type(exc).__name__}: {exc}", delay, exc_info=True)
                await _sleep_unless(self._stopping, delay)
        with contextlib.suppress(Exception):
            await self._save_checkpoints(force=True)

    def _finished(self) -> bool:
        if not self._stopping.is_set():
            return False
        if not (self._drain and self._producer is not None):
            return True
        return not any(o.pending for o in self.partitions.values())

    async def _open(self) -> None:
        """Starts the producer (its init aborts the open transaction of an earlier holder of
        the id, or completes its commit); after a fence or a failure, asks the store which
        partitions are still this instance's (the others are lost, never fenced back) and
        reads again how far the rest are on their topics."""
        producer = self.publishing.make_producer(self.transactional_id)
        try:
            await asyncio.wait_for(producer.start(), START_SECONDS)
        except BaseException:
            with contextlib.suppress(Exception):
                await producer.stop()
            raise
        self._producer = producer
        self.ready.set()
        if not self._fenced:
            return
        p = self.publishing
        held = sorted(self.partitions)
        kept = {
            t.partition
            for t in await self.terms.terms(p.group_id, p.topic, held)
            if t.epoch == self.epochs.get(t.partition) and not t.released
        }
        lost = [q for q in held if q not in kept]
        if lost:
            for q in lost:
                self.partitions.pop(q, None)
                self.epochs.pop(q, None)
            self.lost.update(lost)
            p.metrics.partitions_lost.inc(len(lost))
            log.warning(
                "publisher fenced by a partition's new owner: those partitions are no longer "
                "published here (never fenced back)",
                extra={"partitions": lost},
            )
        again = sorted(kept & set(self.partitions))
        tails = await p.tails.read([TopicPartition(o.topic, q) for q in again for o in p.outboxes])
        cursors, _ = await read_cursors(p, again, tails)
        for q, found in cursors.items():
            outbox = self.partitions.get(q)
            if outbox is not None:
                outbox.cursors = found
                outbox.through = None
        self._fenced = False

    async def _pump(self) -> None:
        """One transaction of the rows in hand of every partition (pending chunks that follow
        on, pages of the store for those catching up); waits for some when there are none."""
        batch = self._collect()
        if not batch.rows and not batch.through:
            self._wake.clear()
            if not self._stopping.is_set() and not self._needs_store():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.publishing.poll_seconds)
            await self._save_checkpoints(force=not self._wake.is_set())
            return
        if batch.oldest is not None:
            self.publishing.metrics.observe_stage("relay_wake", time.monotonic() - batch.oldest)
        if batch.rows:
            await self._transaction(batch)
        for p, through in batch.through.items():
            outbox = self.partitions.get(p)
            if outbox is not None:
                outbox.through = None if outbox.dropped else through
                if through is not None:
                    outbox.reading = None
        await self._save_checkpoints(force=False)

    def _needs_store(self) -> bool:
        """Some partition must read the store and no read of it is under way."""
        return any(o.through is None and o.read is None for o in self.partitions.values())

    def _collect(self) -> Batch:
        """The rows of the next transaction: each partition's pending chunks that follow on
        from what is published, or the page of the store read for a partition that must read
        it (a read is started, off this path, when none is under way: a partition catching up
        never holds the others' rows back)."""
        p = self.publishing
        batch = Batch()
        room = p.transaction_rows
        turn = list(self.partitions.values())
        if turn:  # each partition first in turn: a backlog never keeps the others waiting
            self._first = (self._first + 1) % len(turn)
            turn = turn[self._first :] + turn[: self._first]
        for outbox in turn:
            if room <= 0:
                break
            outbox.drop_covered()
            if outbox.through is None:
                room -= self._take_page(outbox, batch, room)
                continue
            through = outbox.through
            while outbox.pending and outbox.pending[0][1].after == through and room > 0:
                at, chunk = outbox.pending.popleft()
                outbox.pending_rows -= len(chunk.verdicts) + len(chunk.dead_letters)
                through = chunk.through
                causes = chunk.causes
                verdicts = [
                    OutboxRow(
                        v.position, v.game_id.encode(), v.body.encode(), causes.get(v.journal_id)
                    )
                    for v in chunk.verdicts
                ]
                dead = [
                    OutboxRow(d.position, d.key, d.body.encode(), causes.get(d.journal_id))
                    for d in chunk.dead_letters
                ]
                batch.add(outbox.partition, p.verdicts, verdicts)
                batch.add(outbox.partition, p.dead_letters, dead)
                room -= len(verdicts) + len(dead)
                batch.oldest = at if batch.oldest is None else min(batch.oldest, at)
            if through != outbox.through:
                batch.through[outbox.partition] = through
            elif outbox.pending:  # the first chunk does not follow on: read the store
                outbox.through = None
        return batch

    def _take_page(self, outbox: PartitionOutbox, batch: Batch, room: int) -> int:
        """Adds the page read for a partition that must read the store, once it is read and
        fits (else starts its read, when none is under way); once a page comes back short for
        every outbox, the partition goes on from the stored position read first. Returns how
        many rows it added."""
        task = outbox.read
        if task is None:
            if outbox.reading is None:
                outbox.dropped = False
            after = {o.name: outbox.cursors[o.name].position for o in self.publishing.outboxes}
            task = asyncio.create_task(
                self._read_page(outbox.partition, outbox.reading, after),
                name=f"publisher-read-{outbox.partition}",
            )
            task.add_done_callback(self._read_done)
            outbox.read = task
            return 0
        if not task.done():
            return 0
        page = task.result()  # a failed read fails the pump, which tries again
        if page.count() > room and batch.rows:
            return 0  # in the next transaction
        outbox.read = None
        if any(outbox.cursors[name].position != after for name, after in page.after.items()):
            return 0  # the cursors moved since (read again)
        outbox.reading = page.reading
        for o in self.publishing.outboxes:
            batch.add(outbox.partition, o, page.rows[o.name])
        if page.done:
            batch.through[outbox.partition] = page.reading
        return page.count()

    def _read_done(self, task: asyncio.Task[Page]) -> None:
        if not task.cancelled():
            task.exception()  # retrieved here; raised where the page is taken
        self._wake.set()

    async def _read_page(self, partition: int, reading: int | None, after: dict[str, int]) -> Page:
        """Reads a page of the store's rows of a partition past ``after`` (each outbox's
        cursor), and first, when not known yet, the stored position it goes on from."""
        p = self.publishing
        if reading is None:
            reading = await p.store.stored_position(p.group_id, p.topic, partition)
        started = time.perf_counter()
        rows: dict[str, list[OutboxRow]] = {}
        done = True
        for o in p.outboxes:
            found = await p.store.rows_after(o.name, p.topic, partition, after[o.name], p.page)
            if len(found) == p.page:
                found = _whole_records(found)
                done = False
            rows[o.name] = found
        p.metrics.observe_stage("relay_read", time.perf_counter() - started)
        return Page(reading, after, rows, done)

    async def _transaction(self, batch: Batch) -> None:
        """Publishes a batch in one Kafka transaction, each row to its partition's number.

        A row whose input record's rows are on the topic already is not sent again (the store
        went back in time and judged that input again); a row the broker refuses for good is
        withheld (recorded in the store, counted, not published) and the others go."""
        todo = {key: self._unpublished(key[0], key[1], rows) for key, rows in batch.rows.items()}
        self._sending = {p for p, _ in batch.rows}
        try:
            while any(todo.values()):
                sent = await self._send(todo)
                for key, row, error in sent.refused:
                    await self._withhold(key[0], key[1], row, error)
                if sent.committed:
                    break
                # the broker refused rows inside the transaction, which aborted: the rest again
                gone = {id(row) for _, row, _ in sent.refused}
                todo = {k: [r for r in rs if id(r) not in gone] for k, rs in todo.items()}
        finally:
            async with self._idle:
                self._sending = set()
                self._idle.notify_all()
        for (partition, o), rows in batch.rows.items():
            outbox = self.partitions.get(partition)
            if rows and outbox is not None:  # every row is on the topic, was, or is withheld
                cursor = outbox.cursors[o.name]
                cursor.position = max(cursor.position, rows[-1].position)

    def _unpublished(self, partition: int, o: Outbox, rows: list[OutboxRow]) -> list[OutboxRow]:
        """The rows not on the topic yet: past the cursor's position, of input records after
        the last whose rows it holds."""
        outbox = self.partitions.get(partition)
        if outbox is None:
            return []
        cursor = outbox.cursors[o.name]
        kept = [
            r
            for r in rows
            if r.position > cursor.position and (r.cause is None or r.cause > cursor.cause)
        ]
        skipped = sum(1 for r in rows if r.position > cursor.position) - len(kept)
        if skipped:
            self.publishing.metrics.already_published.labels(o.name).inc(skipped)
        return kept

    async def _send(self, rows: dict[tuple[int, Outbox], list[OutboxRow]]) -> _Sent:
        """Sends the rows in one transaction and commits it, but for rows refused for good:
        the producer's refusals are left out, the broker's abort the transaction."""
        producer = self._producer
        assert producer is not None
        metrics = self.publishing.metrics
        sending = time.perf_counter()
        await producer.begin_transaction()
        self._open_transaction = True
        try:
            refused, by_broker = await self._send_rows(producer, rows)
            sent = time.perf_counter()
            if not by_broker:
                await producer.commit_transaction()
                self._open_transaction = False
        except Exception as failed:
            await self._abort(producer, fenced=isinstance(failed, ProducerFenced))
            raise
        if by_broker:
            await self._abort(producer, fenced=False)
            return _Sent(committed=False, refused=refused)
        metrics.observe_stage("relay_send", sent - sending)
        metrics.observe_stage("relay_commit", time.perf_counter() - sent)
        metrics.relay_transactions.labels("committed").inc()
        left_out = {id(row) for _, row, _ in refused}
        for (partition, o), outbox_rows in rows.items():
            published = [r for r in outbox_rows if id(r) not in left_out]
            outbox = self.partitions.get(partition)
            if published and outbox is not None:
                cursor = outbox.cursors[o.name]
                cursor.position = published[-1].position
                cursor.cause = max(
                    [cursor.cause, *(r.cause for r in published if r.cause is not None)]
                )
                outbox.unsaved_rows += len(published)
            if published:
                metrics.published.labels(o.topic).inc(len(published))
        return _Sent(committed=True, refused=refused)

    async def _send_rows(
        self, producer: TransactionalProducer, rows: dict[tuple[int, Outbox], list[OutboxRow]]
    ) -> tuple[list[tuple[tuple[int, Outbox], OutboxRow, BaseException]], bool]:
        """Sends every row and waits for every ack; returns the rows refused for good and
        whether the broker refused any (the producer's own refusals queue nothing). Raises the
        first other failure."""
        refused: list[tuple[tuple[int, Outbox], OutboxRow, BaseException]] = []
        futures: list[tuple[tuple[int, Outbox], OutboxRow, asyncio.Future[Any]]] = []
        for key, outbox_rows in rows.items():
            partition, o = key
            for row in outbox_rows:
                try:
                    future = await producer.send(
                        o.topic,
                        row.body,
                        key=self._key(o, row),
                        partition=partition,
                        headers=self._headers(o, row),
                    )
                except REFUSED_FOR_GOOD as exc:  # the producer's own size check: not queued
                    refused.append((key, row, exc))
                    continue
                future.add_done_callback(_retrieved)
                futures.append((key, row, future))
        # Every record must be on the broker before the commit: a commit after a failed send
        # would make the rest visible with a gap in the outbox.
        results = await asyncio.gather(*(f for _, _, f in futures), return_exceptions=True)
        by_broker = False
        for (key, row, _), result in zip(futures, results, strict=True):
            if isinstance(result, REFUSED_FOR_GOOD):
                refused.append((key, row, result))
                by_broker = True
        _raise_other(results)
        return refused, by_broker

    async def _abort(self, producer: TransactionalProducer, *, fenced: bool) -> None:
        self.publishing.metrics.relay_transactions.labels("aborted").inc()
        if fenced:  # its new holder aborted it
            self._open_transaction = False
            return
        # so that read_committed readers are not held back until the transaction times out
        with contextlib.suppress(Exception):
            await asyncio.wait_for(producer.abort_transaction(), CLOSE_SECONDS)
            self._open_transaction = False

    def _key(self, o: Outbox, row: OutboxRow) -> bytes | None:
        limit = self.publishing.dead_letter_key_bytes
        if o is self.publishing.dead_letters and row.key is not None and len(row.key) > limit:
            return row.key[:limit]
        return row.key

    def _headers(self, o: Outbox, row: OutboxRow) -> list[tuple[str, bytes]]:
        headers = [(POSITION_HEADER, str(row.position).encode())]
        if row.cause is not None:
            headers.append((CAUSE_HEADER, str(row.cause).encode()))
        if (
            o is self.publishing.dead_letters
            and row.key is not None
            and len(row.key) > self.publishing.dead_letter_key_bytes
        ):
            headers.append((KEY_CUT_HEADER, str(len(row.key)).encode()))
        return headers

    async def _withhold(
        self, partition: int, o: Outbox, row: OutboxRow, error: BaseException
    ) -> None:
        """Keeps a row the broker refused for good out of the topic: recorded in the store,
        counted and logged (an alert fires on the count); the partition's output goes on."""
        p = self.publishing
        reason = f"{type(error).__name__}: {error}"[:1000]
        await p.store.withhold(o.name, p.topic, partition, row, reason)
        p.metrics.withheld.labels(o.name).inc()
        log.error(
            "outbox row refused by the broker for good: withheld (kept in the store, not "
            "published)",
            extra={
                "partition": partition,
                "outbox": o.name,
                "position": row.position,
                "input_offset": row.cause,
                "bytes": len(row.body) + len(row.key or b""),
                "error": reason,
            },
        )

    async def _save_checkpoints(self, *, force: bool) -> None:
        """Saves the cursors that moved: after a quiet poll, every ``checkpoint_every`` rows,
        or ``checkpoint_seconds`` after the last save, partition by partition."""
        p = self.publishing
        now = time.monotonic()
        for outbox in list(self.partitions.values()):
            if not outbox.unsaved_rows:
                continue
            due = (
                force
                or outbox.unsaved_rows >= p.checkpoint_every
                or now - outbox.saved_at >= p.checkpoint_seconds
            )
            if not due:
                continue
            moved = {n: c.position for n, c in outbox.cursors.items() if c.position > c.saved}
            if moved:
                await p.store.save_checkpoints(p.topic, outbox.partition, moved)
                for name, position in moved.items():
                    outbox.cursors[name].saved = position
            outbox.saved_at = now
            outbox.unsaved_rows = 0

    def _failed(self, error: str, delay: float, *, exc_info: bool = False) -> None:
        health = self.health
        health.failures += 1
        health.last_error = error
        if health.failing_since is None:
            health.failing_since = time.monotonic()
        log.warning(
            "publisher failed; retrying",
            exc_info=exc_info,
            extra={"retry_in_seconds": delay, "error": error},
        )

    async def _close(self) -> bool:
        """Closes the producer, aborting a transaction it left open (a stop that cancelled
        it); returns whether none can still be open on the broker (one that cannot be
        aborted is aborted by the broker when the transaction times out, or by the fence of
        the partitions' next owner)."""
        producer, self._producer = self._producer, None
        for outbox in self.partitions.values():
            outbox.through = None
            outbox.reading = None
            outbox.forget_read()
        if producer is None:
            return not self._open_transaction
        if self._open_transaction:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(producer.abort_transaction(), CLOSE_SECONDS)
                self._open_transaction = False
        try:
            await asyncio.wait_for(producer.stop(), CLOSE_SECONDS)
        except Exception:
            log.warning("publisher producer did not stop cleanly", exc_info=True)
        return not self._open_transaction


async def read_cursors(
    publishing: Publishing, partitions: list[int], tails: dict[TopicPartition, Tail]
) -> tuple[dict[int, dict[str, Cursor]], set[int]]:
    """Sets each outbox's cursor of these partitions from its topic's last committed record;
    returns the cursors and the partitions whose topics hold records of input past the store's
    position (the store is behind: it lost commits the topics hold)."""
    p = publishing
    found: dict[int, dict[str, Cursor]] = {}
    behind: set[int] = set()
    for partition in partitions:
        stored = await p.store.stored_position(p.group_id, p.topic, partition)
        cursors: dict[str, Cursor] = {}
        for o in p.outboxes:
            cursor = cursors[o.name] = Cursor()
            tail = tails.get(TopicPartition(o.topic, partition))
            known = await p.store.checkpoint(o.name, p.topic, partition)
            if tail is None:
                cursor.position, cursor.cause = known, -1
            elif tail.cause is None:  # published by a release that did not say its input
                cursor.position, cursor.cause = max(known, tail.position), -1
            else:
                cursor.cause = tail.cause
                cursor.position = await p.store.published_position(
                    o.name, p.topic, partition, tail.cause, tail.position
                )
                if tail.cause > stored:
                    behind.add(partition)
            cursor.saved = cursor.position
        found[partition] = cursors
    return found, behind


class _Sent(NamedTuple):
    committed: bool
    refused: list[tuple[tuple[int, Outbox], OutboxRow, BaseException]]


def _raise_other(results: list[Any]) -> None:
    """Raises the first failure among send results that is not a refusal for good."""
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, REFUSED_FOR_GOOD):
            raise result


def _whole_records(rows: list[OutboxRow]) -> list[OutboxRow]:
    """A full page less the rows of its last input record, which may go on in the next page:
    each record's rows of an outbox go out in one transaction, so an output topic never holds
    part of them (the last record on it says all its rows are there)."""
    last = rows[-1].cause
    if last is None:
        return rows
    kept = [r for r in rows if r.cause != last]
    return kept or rows


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
