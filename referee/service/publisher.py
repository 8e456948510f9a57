"""The owner publishes: each input partition's outbox, by the instance that owns the partition.

A partition's publisher sends its verdicts and dead letters to the same partition number of
the verdict and dead-letter topics, in Kafka transactions of a producer whose transactional
id is the partition's own (``<REFEREE_RELAY_TRANSACTIONAL_ID>.<partition>``). Opening that
producer fences the partition's previous owner: the broker aborts its open transaction (or
completes its commit) before the start returns, and its later sends fail. Only then does the
publisher read the last committed record of each output partition and resume after it.

Every record carries the offset of the input record that gave it (``input-offset``). The
committed records of an output partition are those of a prefix of the input partition, in
input order, so the last one says which input records' rows are on the topic: a row is sent
only if its input record comes after that one. The match is by the input's coordinate, not
by a position the store hands out, so it holds when the store went back in time (a restore,
a failover to a replica that lagged) and judged the lost input again: what the topics hold
already is not sent twice, what they lack is sent once.

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
from collections.abc import Awaitable, Callable
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
        self, source: TopicPartition, stored: int, outputs: list[TopicPartition]
    ) -> Survey:
        """Returns the input partition's offsets, its record at ``stored`` and the outputs'
        last committed records."""


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
    dead_letter_key_bytes: int = 16 * 1024
    """The longest input key a dead letter carries whole: the record's body is bounded by the
    contract (``EventRejected`` drops ``raw`` past 512 KiB of JSON) and its key by this, so
    every dead letter fits a topic's default 1 MiB."""

    def transactional_id(self, partition: int) -> str:
        """Returns the transactional id of a partition's publisher."""
        return f"{self.transactional_prefix}.{partition}"

    @property
    def outboxes(self) -> tuple[Outbox, Outbox]:
        """Both outboxes, verdicts first."""
        return (self.verdicts, self.dead_letters)


class Opened(NamedTuple):
    """What a publisher found when it took its partition: the input it needs, and why it
    cannot go on, if it cannot."""

    refused: str | None
    """Why the partition cannot be judged and published now (None: it can)."""
    reason: str
    """A short code for the metric: ``ok``, ``input_gone``, ``input_recreated``."""
    behind: bool
    """The output topics hold records of input the store has not processed: the store lost
    commits, and the input is judged again (its rows the topics hold are not sent again)."""


OK = Opened(None, "ok", behind=False)


@dataclass(slots=True)
class _Cursor:
    """How far one outbox of the partition is on its topic."""

    position: int = 0
    """The store's position of the last row on the topic (rows past it are read from it)."""
    cause: int = -1
    """The input offset of the last record whose rows are on the topic (-1: none known): a
    row of an earlier or the same record is never sent."""
    saved: int = 0
    """The position last saved as a checkpoint."""


@dataclass(slots=True)
class _Health:
    failing_since: float | None = None
    last_error: str = ""
    failures: int = field(default=0)


class PartitionPublisher:
    """Publishes one input partition's outboxes while this instance owns the partition."""

    def __init__(
        self,
        publishing: Publishing,
        partition: int,
        *,
        still_owner: Callable[[], Awaitable[bool]],
        on_lost: Callable[[int], None],
    ) -> None:
        self.publishing = publishing
        self.partition = partition
        self.still_owner = still_owner
        """Awaitable check: is the partition's newest term in the store still this owner's?
        Asked when the producer is fenced, to tell a new owner from anyone else."""
        self.on_lost = on_lost
        """Told when a new owner fenced this publisher: it stops, the partition is lost."""
        self.alive_at = time.monotonic()
        """When its loop last came round (for /livez)."""
        self.health = _Health()
        self._producer: TransactionalProducer | None = None
        self._cursors: dict[str, _Cursor] = {o.name: _Cursor() for o in publishing.outboxes}
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
        self._saved_at = time.monotonic()
        self._unsaved_rows = 0
        self._task: asyncio.Task[None] | None = None
        self.lost = False
        """A new owner took the partition (the publisher stopped for good)."""

    # --- what the partition's owner calls --------------------------------------------------

    async def open(self, stored: int) -> Opened:
        """Fences the partition's previous publisher, reads how far the output topics got and
        what the input still holds, and says whether the partition can be judged from offset
        ``stored`` + 1 (``stored``: its last processed record in the store, -1: none).

        The partition cannot when the input it needs is gone (deleted by retention before it
        was processed, or needed again because the store lost commits the topics hold), or
        when the input partition is not the one the store processed (the topic was deleted
        and made again). Raises on a failure to reach Kafka (the owner tries again)."""
        p = self.publishing
        source = TopicPartition(p.topic, self.partition)
        await self._start_producer()
        survey = await p.tails.survey(
            source, stored, [TopicPartition(o.topic, self.partition) for o in p.outboxes]
        )
        refused = await self._check_input(survey, stored)
        if refused is not None:
            await self._close()
            return refused
        behind = await self._resume_from(survey.tails)
        if behind:
            p.metrics.store_behind.inc()
            log.warning(
                "the output topics hold records of input the store has not processed (the "
                "store lost commits): judging it again, publishing only what the topics lack",
                extra={
                    "partition": self.partition,
                    "stored": stored,
                    "published_through": {n: c.cause for n, c in self._cursors.items()},
                },
            )
        return Opened(None, "ok", behind=behind)

    def start(self) -> None:
        """Starts publishing (in a task of its own), once ``open`` said it can."""
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
        if task is not None and task is not asyncio.current_task():
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

    # --- taking the partition --------------------------------------------------------------

    async def _start_producer(self) -> None:
        """Starts the partition's producer: the init of its transactional id aborts the
        previous holder's open transaction (or completes its commit) before it returns."""
        p = self.publishing
        producer = p.make_producer(p.transactional_id(self.partition))
        try:
            await asyncio.wait_for(producer.start(), START_SECONDS)
        except BaseException:
            with contextlib.suppress(Exception):
                await producer.stop()
            raise
        self._producer = producer
        self._through = None

    async def _check_input(self, survey: Survey, stored: int) -> Opened | None:
        """Says why the partition cannot be judged from ``stored`` + 1, if it cannot."""
        start, end = survey.log_start, survey.end
        if stored >= 0 and stored >= end:
            return Opened(
                f"the input partition ends at offset {end} but the store processed it up to "
                f"{stored}: the input topic was deleted and made again, or the store belongs "
                "to another cluster (docs/runbook.md, 'A partition refused')",
                "input_recreated",
                behind=False,
            )
        p = self.publishing
        if survey.record is not None and stored >= 0:
            journaled = await p.store.processed_record(p.group_id, p.topic, self.partition, stored)
            if journaled is not None and journaled != survey.record:
                return Opened(
                    f"the input record at offset {stored} is not the one the store processed "
                    "there: the input topic was deleted and made again (docs/runbook.md, 'A "
                    "partition refused')",
                    "input_recreated",
                    behind=False,
                )
        published = max((t.cause for t in survey.tails.values() if t.cause is not None), default=-1)
        needed = stored + 1
        if (
            start > needed
            and (stored >= 0 or published > stored)
            and not await p.store.accepted_gap(p.group_id, p.topic, self.partition, needed, start)
        ):
            lost = f"offsets {needed} to {start - 1}"
            why = (
                "the store lost commits the output topics hold (it went back in time) and "
                if published > stored
                else ""
            )
            return Opened(
                f"{why}the input it needs is gone: {lost} of the input partition were deleted "
                f"before the referee processed them (the log now starts at {start}). Restore "
                "a newer copy of the store, or accept the loss with `referee partitions "
                f"--accept-gap {self.partition}` (docs/runbook.md, 'A partition refused')",
                "input_gone",
                behind=False,
            )
        return None

    async def _resume_from(self, tails: dict[TopicPartition, Tail]) -> bool:
        """Sets each outbox's cursor from its topic's last committed record; returns whether
        the topics hold records of input past the store's position (the store is behind)."""
        p = self.publishing
        stored = await p.store.stored_position(p.group_id, p.topic, self.partition)
        behind = False
        for o in p.outboxes:
            cursor = self._cursors[o.name]
            tail = tails.get(TopicPartition(o.topic, self.partition))
            known = await p.store.checkpoint(o.name, p.topic, self.partition)
            if tail is None:
                cursor.position, cursor.cause = known, -1
            elif tail.cause is None:  # published by a release that did not say its input
                cursor.position, cursor.cause = max(known, tail.position), -1
            else:
                cursor.cause = tail.cause
                cursor.position = await p.store.published_position(
                    o.name, p.topic, self.partition, tail.cause, tail.position
                )
                behind = behind or tail.cause > stored
            cursor.saved = cursor.position
        log.info(
            "publisher resumes",
            extra={
                "partition": self.partition,
                "published": {n: c.position for n, c in self._cursors.items()},
                "published_through": {n: c.cause for n, c in self._cursors.items()},
            },
        )
        return behind

    # --- the loop --------------------------------------------------------------------------

    async def _run(self) -> None:
        waits = Backoff(first=0.5, most=10.0)
        while not self._finished():
            self.alive_at = time.monotonic()
            try:
                if self._producer is None:
                    await self._reopen()
                if self._through is None:
                    await self._catch_up()
                await self._publish_next()
                waits.succeeded()
                self._healthy()
            except ProducerFenced:
                await self._close()
                if not await self.still_owner():
                    self._fenced_for_good()
                    return
                delay = waits.failed()
                self._failed("fenced by a producer that is not the partition's owner", delay)
                await _sleep_unless(self._stopping, delay)
            except Exception as exc:  # noqa: BLE001 - retried, logged with its traceback
                delay = waits.failed()
                self._failed(f"{type(exc).__name__}: {exc}", delay, exc_info=True)
                await self._close()
                await _sleep_unless(self._stopping, delay)
        with contextlib.suppress(Exception):
            await self._save_checkpoint()

    async def _reopen(self) -> None:
        """Starts the producer again after a failure and reads where the topics got."""
        p = self.publishing
        await self._start_producer()
        tails = await p.tails.read([TopicPartition(o.topic, self.partition) for o in p.outboxes])
        await self._resume_from(tails)

    def _fenced_for_good(self) -> None:
        """A new owner fenced this publisher: it stops, and never fences the new owner back."""
        self.lost = True
        self.publishing.metrics.partitions_lost.inc()
        log.warning(
            "publisher fenced by the partition's new owner: it stops",
            extra={"partition": self.partition},
        )
        self._pending.clear()
        self._pending_rows = 0
        self.on_lost(self.partition)

    def _failed(self, error: str, delay: float, *, exc_info: bool = False) -> None:
        health = self.health
        health.failures += 1
        health.last_error = error
        if health.failing_since is None:
            health.failing_since = time.monotonic()
        log.warning(
            "publisher failed; retrying",
            exc_info=exc_info,
            extra={"partition": self.partition, "retry_in_seconds": delay, "error": error},
        )

    def _healthy(self) -> None:
        self.health.failing_since = None

    def _finished(self) -> bool:
        if not self._stopping.is_set():
            return False
        return not (self._drain and self._pending and self._producer is not None)

    async def _catch_up(self) -> None:
        """Publishes what the store holds past the cursors, then goes on from the position
        it read first (everything committed up to it is now published)."""
        p = self.publishing
        reading = time.perf_counter()
        stored = await p.store.stored_position(p.group_id, p.topic, self.partition)
        self._lost = False
        for outbox in p.outboxes:
            while True:
                rows = await p.store.rows_after(
                    outbox.name,
                    p.topic,
                    self.partition,
                    self._cursors[outbox.name].position,
                    p.page,
                )
                full = len(rows) == p.page
                if full:
                    rows = _whole_records(rows)
                if rows:
                    await self._transaction({outbox: rows})
                if not full:
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
        while self._pending and self._pending[0][1].after == through:
            _, chunk = self._pending.popleft()
            self._pending_rows -= len(chunk.verdicts) + len(chunk.dead_letters)
            through = chunk.through
            causes = chunk.causes
            verdicts += [
                OutboxRow(v.position, v.game_id.encode(), v.body.encode(), causes.get(v.journal_id))
                for v in chunk.verdicts
            ]
            dead += [
                OutboxRow(d.position, d.key, d.body.encode(), causes.get(d.journal_id))
                for d in chunk.dead_letters
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
        """Publishes rows in one Kafka transaction, each to the partition's number.

        A row whose input record's rows are on the topic already is not sent again (the store
        went back in time and judged that input again); a row the broker refuses for good is
        withheld (recorded in the store, counted, not published) and the others go."""
        todo = {o: self._unpublished(o, r) for o, r in rows.items()}
        while any(todo.values()):
            sent = await self._send(todo)
            for outbox, row, error in sent.refused:
                await self._withhold(outbox, row, error)
            if sent.committed:
                break
            # the broker refused some rows inside the transaction, which aborted: the rest again
            gone = {id(row) for _, row, _ in sent.refused}
            todo = {o: [r for r in rs if id(r) not in gone] for o, rs in todo.items()}
        for outbox, outbox_rows in rows.items():
            if outbox_rows:  # every row is on the topic, was there already, or is withheld
                cursor = self._cursors[outbox.name]
                cursor.position = max(cursor.position, outbox_rows[-1].position)

    def _unpublished(self, outbox: Outbox, rows: list[OutboxRow]) -> list[OutboxRow]:
        """The rows not on the topic yet: past the cursor's position, of input records after
        the last whose rows it holds."""
        cursor = self._cursors[outbox.name]
        kept = [
            r
            for r in rows
            if r.position > cursor.position and (r.cause is None or r.cause > cursor.cause)
        ]
        if len(kept) < len(rows):
            self.publishing.metrics.already_published.labels(outbox.name).inc(
                sum(1 for r in rows if r.position > cursor.position) - len(kept)
            )
        return kept

    async def _send(self, rows: dict[Outbox, list[OutboxRow]]) -> _Sent:
        """Sends the rows in one transaction and commits it, but for rows refused for good:
        the producer's refusals are left out, the broker's abort the transaction."""
        producer = self._producer
        assert producer is not None
        metrics = self.publishing.metrics
        sending = time.perf_counter()
        await producer.begin_transaction()
        try:
            refused, by_broker = await self._send_rows(producer, rows)
            sent = time.perf_counter()
            if not by_broker:
                await producer.commit_transaction()
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
        for outbox, outbox_rows in rows.items():
            published = [r for r in outbox_rows if id(r) not in left_out]
            if published:
                cursor = self._cursors[outbox.name]
                cursor.position = published[-1].position
                cursor.cause = max(
                    [cursor.cause, *(r.cause for r in published if r.cause is not None)]
                )
                self._unsaved_rows += len(published)
                metrics.published.labels(outbox.topic).inc(len(published))
        return _Sent(committed=True, refused=refused)

    async def _send_rows(
        self, producer: TransactionalProducer, rows: dict[Outbox, list[OutboxRow]]
    ) -> tuple[list[tuple[Outbox, OutboxRow, BaseException]], bool]:
        """Sends every row and waits for every ack; returns the rows refused for good and
        whether the broker refused any (the producer's own refusals queue nothing). Raises the
        first other failure."""
        refused: list[tuple[Outbox, OutboxRow, BaseException]] = []
        futures: list[tuple[Outbox, OutboxRow, asyncio.Future[Any]]] = []
        for outbox, outbox_rows in rows.items():
            for row in outbox_rows:
                try:
                    future = await producer.send(
                        outbox.topic,
                        row.body,
                        key=self._key(outbox, row),
                        partition=self.partition,
                        headers=self._headers(outbox, row),
                    )
                except REFUSED_FOR_GOOD as exc:  # the producer's own size check: not queued
                    refused.append((outbox, row, exc))
                    continue
                future.add_done_callback(_retrieved)
                futures.append((outbox, row, future))
        # Every record must be on the broker before the commit: a commit after a failed send
        # would make the rest visible with a gap in the outbox.
        results = await asyncio.gather(*(f for _, _, f in futures), return_exceptions=True)
        by_broker = False
        for (outbox, row, _), result in zip(futures, results, strict=True):
            if isinstance(result, REFUSED_FOR_GOOD):
                refused.append((outbox, row, result))
                by_broker = True
        _raise_other(results)
        return refused, by_broker

    async def _abort(self, producer: TransactionalProducer, *, fenced: bool) -> None:
        self.publishing.metrics.relay_transactions.labels("aborted").inc()
        if not fenced:  # else its new holder aborted it
            # so that read_committed readers are not held back until the next start
            with contextlib.suppress(Exception):
                await asyncio.wait_for(producer.abort_transaction(), CLOSE_SECONDS)

    def _key(self, outbox: Outbox, row: OutboxRow) -> bytes | None:
        limit = self.publishing.dead_letter_key_bytes
        if outbox is self.publishing.dead_letters and row.key is not None and len(row.key) > limit:
            return row.key[:limit]
        return row.key

    def _headers(self, outbox: Outbox, row: OutboxRow) -> list[tuple[str, bytes]]:
        headers = [(POSITION_HEADER, str(row.position).encode())]
        if row.cause is not None:
            headers.append((CAUSE_HEADER, str(row.cause).encode()))
        if (
            outbox is self.publishing.dead_letters
            and row.key is not None
            and len(row.key) > self.publishing.dead_letter_key_bytes
        ):
            headers.append((KEY_CUT_HEADER, str(len(row.key)).encode()))
        return headers

    async def _withhold(self, outbox: Outbox, row: OutboxRow, error: BaseException) -> None:
        """Keeps a row the broker refused for good out of the topic: recorded in the store,
        counted and logged (an alert fires on the count); the partition's output goes on."""
        p = self.publishing
        reason = f"{type(error).__name__}: {error}"[:1000]
        await p.store.withhold(outbox.name, p.topic, self.partition, row, reason)
        p.metrics.withheld.labels(outbox.name).inc()
        log.error(
            "outbox row refused by the broker for good: withheld (kept in the store, not "
            "published)",
            extra={
                "partition": self.partition,
                "outbox": outbox.name,
                "position": row.position,
                "input_offset": row.cause,
                "bytes": len(row.body) + len(row.key or b""),
                "error": reason,
            },
        )

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
        moved = {n: c.position for n, c in self._cursors.items() if c.position > c.saved}
        if not moved:
            return
        p = self.publishing
        await p.store.save_checkpoints(p.topic, self.partition, moved)
        for name, position in moved.items():
            self._cursors[name].saved = position
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


def _raise_other(results: list[Any]) -> None:
    """Raises the first failure among send results that is not a refusal for good."""
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, REFUSED_FOR_GOOD):
            raise result


class _Sent(NamedTuple):
    committed: bool
    refused: list[tuple[Outbox, OutboxRow, BaseException]]


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
