"""The processing step: a batch of raw records in, one PostgreSQL transaction out.

Validate, deduplicate against what is stored, fold each game (from the hot cache, or from
its newest projection version on a miss), and append journal, projection, verdicts, dead
letters and consumer positions in one transaction. The positions are the truth about what
was processed: after a crash at any instant, a restart from them gives exactly the rows of a
run that never crashed.

Batches can be pipelined (``submit``): batch N+1 is judged while batch N's transaction is in
flight, and written once N has committed, so the CPU judges while PostgreSQL writes.
docs/design.md, "Pipelining", says why that keeps every guarantee.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from referee.contracts.parse import DEFAULT_MAX_EVENT_BYTES, Unparsed
from referee.contracts.rejection import Source
from referee.contracts.state_codec import decode_state, encode_state
from referee.contracts.verdicts import encode_canonical
from referee.contracts.wire import InputEvent
from referee.processing.ledger import Fingerprint, GameLedger, event_print
from referee.processing.outcome import Outcome, Processed, Tally
from referee.processing.ports import StepReads, StepStore
from referee.processing.referee import Referee, failure_detail
from referee.store.rows import (
    DeadLetterRow,
    Fenced,
    GameVersionRow,
    JournalRow,
    PositionRow,
    StepRows,
    VerdictRow,
    Written,
)

log = logging.getLogger("referee.step")

_OUTCOME_TEXT = {o: o.value for o in Outcome}


def _key_of(game_id: str | None) -> bytes | None:
    return None if game_id is None else game_id.encode()


class InputRecord(NamedTuple):
    """One raw input record and where it came from."""

    raw: bytes
    topic: str
    partition: int
    offset: int
    source: Source
    key: bytes | None = None
    """The record's key as received (Kafka); the dead letter keeps it."""
    timestamp_ms: int | None = None
    """The record's Kafka timestamp (for the event-to-verdict latency), if it has one."""


@dataclass(slots=True)
class StepResult:
    """What one step appended (for publishing, metrics and tests)."""

    processed: list[tuple[InputRecord, Processed]] = field(default_factory=list)
    skipped: int = 0
    """Records at or below the stored position: already processed before."""
    transactions: int = 0
    """Transactions committed (more than one when a failing record had to be isolated)."""
    started: float = field(default_factory=time.monotonic)
    """When the batch was received (monotonic seconds)."""

    def extend(self, other: StepResult) -> None:
        """Adds what another part of the same batch appended."""
        self.processed += other.processed
        self.skipped += other.skipped
        self.transactions += other.transactions


class PositionMoved(Exception):  # noqa: N818 - a fact, like the events
    """Another consumer committed this partition further than this one knew: it must re-seek."""

    def __init__(self, topic: str, partition: int, stored: int, expected: int) -> None:
        super().__init__(
            f"{topic}[{partition}] is at {stored} in the store, this consumer expected {expected}"
        )
        self.topic = topic
        self.partition = partition
        self.stored = stored


Partition = tuple[str, int]

JOURNAL_ID_BLOCK = 1_000
"""Journal ids reserved at a time, at least: a small live batch then reads nothing from the
store when its games are cached (one round trip and one connection checkout less a batch)."""

JOURNAL_ID_BATCHES = 4
"""A reservation covers this many batches the size of the one asking, if that is more than
``JOURNAL_ID_BLOCK``: batches of 2,000 then read ids once in four batches rather than each
time (the round trip, about 1.7 ms for 2,000 ids here, waits on the pipelined write's turns of
the event loop, 5-10 ms; bench/notes.md). A restart leaves at most one reservation unused
(the sequence has gaps anyway)."""

YIELD_AFTER = 0.001
"""Seconds of decoding, judging or row building between two yields to the event loop, so the
write in flight, the consumer's fetches and heartbeats and the probes go on while a batch is
judged, however long its records take (a hostile record at the size limit takes up to ~20 ms
at the edge; a batch of them would otherwise hold the loop for tens of seconds).

Each of the write's round trips waits for a yield twice (its answer is read at one, the write
goes on at the next), so this bounds how long the write in flight takes: traced here at 5 ms,
PostgreSQL's end of the journal COPY was seen 12.5 ms later on average, and the next batch
then waited 13-15 ms for it; at 1 ms, 2.9 ms later, and the wait fell to 4-5 ms
(bench/notes.md, "The morning of 2026-12-02, a trace"). A yield costs tens of microseconds."""


@dataclass(slots=True)
class _Judged:
    """A batch judged and its rows built, not yet written."""

    records: list[InputRecord]
    """The whole batch as received (to process again if its write fails)."""
    result: StepResult
    rows: StepRows
    touched: set[str]
    expected: dict[Partition, int]
    """The stored position its write must find, per partition."""
    counted: Tally
    """The tally before the batch."""


OnCommitted = Callable[[StepResult], None]
"""Called when a batch's transaction has committed (to wake the relay, count, commit offsets)."""

StageObserver = Callable[[str, float], None]
"""Told how long each stage of a batch took (stage name, seconds), for the breakdown:
``decode`` (the edge), ``load`` (games and prints read, journal ids reserved), ``judge``,
``rows``, ``wait`` (for the write before it), ``copy`` (fence and appends), ``commit``, and
``outbox_hold`` (the writers' outbox lock held, from taking it to the commit's end)."""


class ProcessingStep:
    """The unit of work of the referee, bound to one consumer group."""

    def __init__(
        self,
        store: StepStore,
        group_id: str,
        *,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        cache_games: int = 100_000,
        on_committed: OnCommitted | None = None,
        observe: StageObserver | None = None,
    ) -> None:
        self.store = store
        self.group_id = group_id
        self.referee = Referee(max_event_bytes, eager_prints=True)
        self.cache_games = cache_games
        self.on_committed = on_committed
        self.observe: StageObserver = observe or _unobserved
        self._recency: OrderedDict[str, None] = OrderedDict()
        self._lock = asyncio.Lock()
        """Held while a batch is judged or settled; the rebalance listener waits for it."""
        self.positions: dict[Partition, int] = {}
        """The offset the next batch must find stored, per (topic, partition): the last
        processed, counting the batch in flight."""
        self.committed: dict[Partition, int] = {}
        """The last offset known committed, per (topic, partition)."""
        self._in_flight: tuple[_Judged, asyncio.Task[None]] | None = None
        self._ids: list[int] = []
        """Journal ids reserved and not yet used, ascending (``JOURNAL_ID_BLOCK``)."""

    async def forget_partitions(self, partitions: set[Partition]) -> None:
        """Drops what this instance knew of partitions it no longer owns.

        It waits for the batch in flight (judged, and written): the rebalance listener runs
        concurrently with the batch handler, and a cache emptied under a batch would make it
        judge from missing state. Game states need no finer dropping: a game missing from the
        cache is reloaded from its newest projection version.
        """
        async with self._lock:
            await self._settle()
            self._ids.clear()
            for tp in partitions:
                self.positions.pop(tp, None)
                self.committed.pop(tp, None)
            self.referee.games.clear()
            self._recency.clear()

    async def load_positions(self, topic: str, partitions: list[int]) -> dict[int, int]:
        """Reads the stored positions of these partitions (and remembers them)."""
        async with self._lock:
            await self._settle()
            self._ids.clear()
            return await self._read_positions(topic, partitions)

    async def process(self, records: list[InputRecord]) -> StepResult:
        """Processes a batch in one transaction, waiting for it; on failure nothing is kept,
        not even cache.

        A batch that fails for another reason than a database outage holds a record the
        referee cannot process (a defect): the batch is split in halves, each processed in its
        own transaction, until the failing record is alone; that record is quarantined
        (journaled and dead-lettered as ``internal_error``, taking no place) and the rest go
        on. An outage is raised for the caller to retry, and nothing is quarantined.
        """
        async with self._lock:
            await self._settle()
            return await self._isolating(records)

    async def submit(self, records: list[InputRecord]) -> None:
        """Judges a batch now and writes it once the batch in flight has committed, without
        waiting for its own write (``settle`` or the next call does).

        A failure of the batch in flight comes out here: an outage or a moved position is
        raised (nothing of either batch is kept, the positions are the stored ones), and a
        record that cannot be written is isolated as ``process`` isolates it.
        """
        async with self._lock:
            try:
                judged = await self._judge(records)
            except Exception as exc:
                if isinstance(exc, PositionMoved) or self.store.is_outage(exc):
                    await self._settle()
                    raise
                # a defect outside the per-record boundary (building rows, say)
                await self._settle()
                self._report(await self._isolating(records))
                return
            waited = time.perf_counter()
            consumed = await self._settle(judged)
            self.observe("wait", time.perf_counter() - waited)
            if judged is None:
                self._report(StepResult(skipped=len(records)))  # all processed before
            elif not consumed:
                write = asyncio.create_task(self._write(judged, announce=True))
                self._in_flight = (judged, write)
                # Let the write send its first statement now, before the consumer hands over
                # the next batch (fetched and unpacked without a yield: 3-4 ms traced here).
                await asyncio.sleep(0)

    async def settle(self) -> None:
        """Waits for the batch in flight to be written (raises as ``submit`` does)."""
        async with self._lock:
            await self._settle()

    # --- the pipeline ----------------------------------------------------------------------

    async def _settle(self, next_batch: _Judged | None = None) -> bool:
        """Waits for the write in flight, then keeps or undoes its effects (and, when it
        failed, those of ``next_batch``, judged on top of it). Returns whether
        ``next_batch`` was processed here already (after its predecessor was isolated)."""
        if self._in_flight is None:
            return False
        judged, write = self._in_flight
        self._in_flight = None
        try:
            await write
        except BaseException as exc:
            self._undo(judged, next_batch)
            if isinstance(exc, PositionMoved) or not isinstance(exc, Exception):
                raise
            if self.store.is_outage(exc):
                raise
            # a record of the batch could not be written: isolate it, then the next batch
            self._report(await self._isolating(judged.records))
            if next_batch is None:
                return False
            self._report(await self._isolating(next_batch.records))
            return True
        self._kept(judged, pinned=next_batch.touched if next_batch is not None else set())
        return False

    async def _write(self, judged: _Judged, *, announce: bool) -> None:
        started = time.perf_counter()
        written = await self._fenced(judged.expected, judged.rows)
        ended = time.perf_counter()
        locked = written.locked
        self.observe("copy", written.appended - started)
        self.observe("commit", ended - written.appended)
        if locked is not None:  # how long every writer's outbox rows waited on this batch
            self.observe("outbox_hold", ended - locked)
        if announce and self.on_committed is not None:
            # at once: the relay publishes (and metrics count) without waiting for the
            # next batch; the cache is settled later, under the lock
            self.on_committed(judged.result)

    def _kept(self, judged: _Judged, pinned: set[str]) -> None:
        committed = self.committed
        for position in judged.rows.positions:  # each partition's last record of the batch
            committed[position.topic, position.partition] = position.offset
        self._trim(judged.touched, pinned)

    def _undo(self, *batches: _Judged | None) -> None:
        """Forgets every effect of judged batches whose write failed: their games (evicted,
        to be loaded again as stored), their positions and their counts."""
        judged = [b for b in batches if b is not None]
        for b in judged:
            self._evict(b.touched)
        self.referee.tally = judged[0].counted
        self.positions = dict(self.committed)

    def _report(self, result: StepResult) -> None:
        if self.on_committed is not None and (result.processed or result.skipped):
            self.on_committed(result)

    # --- one batch ---------------------------------------------------------------------------

    async def _isolating(self, records: list[InputRecord]) -> StepResult:
        try:
            return await self._process(records)
        except PositionMoved:
            raise
        except Exception as exc:
            if self.store.is_outage(exc):
                raise
            failure = exc
        if len(records) == 1:
            return await self._quarantine(records[0], failure_detail(failure))
        log.warning(
            "batch failed on a record; isolating it",
            extra={"records": len(records), "error": f"{type(failure).__name__}: {failure}"},
        )
        half = len(records) // 2
        result = await self._isolating(records[:half])
        result.extend(await self._isolating(records[half:]))
        return result

    async def _quarantine(self, record: InputRecord, detail: str) -> StepResult:
        """Appends a record the referee failed on as rejected (``internal_error``), alone."""
        await self._ensure_positions([record])
        tp = (record.topic, record.partition)
        result = StepResult()
        if record.offset <= self.positions[tp]:
            result.skipped = 1
            return result
        ids = await self._take_ids(None, 1)
        processed = self.referee.quarantine(record.raw, record.source, detail)
        result.processed = [(record, processed)]
        await self._fenced({tp: self.positions[tp]}, await self._rows(result.processed, ids))
        result.transactions = 1
        self.positions[tp] = self.committed[tp] = record.offset
        return result

    async def _process(self, records: list[InputRecord]) -> StepResult:
        judged = await self._judge(records)
        if judged is None:
            return StepResult(skipped=len(records))
        try:
            await self._write(judged, announce=False)
        except BaseException:
            self._undo(judged)
            raise
        self._kept(judged, pinned=set())
        return judged.result

    async def _judge(self, records: list[InputRecord]) -> _Judged | None:
        """Judges the fresh records of a batch and builds its rows; the games and positions
        in memory move on at once (``_undo`` takes them back if the write fails)."""
        await self._ensure_positions(records)
        positions = self.positions
        fresh = [r for r in records if r.offset > positions[r.topic, r.partition]]
        if not fresh:
            return None
        result = StepResult(skipped=len(records) - len(fresh), transactions=1)
        referee = self.referee
        decoding = time.perf_counter()
        parsed: list[InputEvent | Unparsed] = []
        parse = referee.parse
        clock = time.perf_counter
        slice_end = decoding + YIELD_AFTER
        for r in fresh:
            parsed.append(parse(r.raw))
            if clock() > slice_end:
                await asyncio.sleep(0)
                slice_end = clock() + YIELD_AFTER
        self.observe("decode", clock() - decoding)
        touched = {g for p in parsed if (g := p.game_id) is not None}
        counted = referee.tally.copy()
        try:
            started = time.perf_counter()
            ids = await self._read(parsed, touched, len(fresh))
            loaded = time.perf_counter()
            processed = result.processed
            apply = referee.apply
            slice_end = clock() + YIELD_AFTER
            for record, event in zip(fresh, parsed, strict=True):
                processed.append((record, apply(record.raw, record.source, event)))
                if clock() > slice_end:
                    await asyncio.sleep(0)
                    slice_end = clock() + YIELD_AFTER
            judged = time.perf_counter()
            rows = await self._rows(processed, ids)
            self.observe("load", loaded - started)
            self.observe("judge", judged - loaded)
            self.observe("rows", time.perf_counter() - judged)
        except BaseException:
            self._evict(touched)
            referee.tally = counted
            raise
        # The position rows hold each partition's last record of the batch: the stored
        # position the write must find is the one before them, and then theirs is the next.
        expected: dict[Partition, int] = {}
        for position in rows.positions:
            tp = position.topic, position.partition
            expected[tp] = positions[tp]
            positions[tp] = position.offset
        return _Judged(records, result, rows, touched, expected, counted)

    async def _fenced(self, expected: dict[Partition, int], rows: StepRows) -> Written:
        """Writes rows in one transaction fenced by the batch's partitions: it locks each
        and checks nobody moved it.

        After a rebalance, the old owner may still be committing a batch of a partition the
        new owner has started on; the lock serialises them and the check makes the second one
        give up and re-seek, so no record is ever processed twice.
        """
        fence = [
            Fenced(topic, partition, offset) for (topic, partition), offset in expected.items()
        ]
        written = await self.store.write(self.group_id, fence, rows)
        moved = written.moved
        if moved is not None:
            # Another writer numbered records after every id in hand: ids from a block
            # reserved before would put this consumer's next records before its in the journal.
            self._ids.clear()
            self.committed[moved.topic, moved.partition] = moved.stored
            raise PositionMoved(
                moved.topic, moved.partition, moved.stored, expected[moved.topic, moved.partition]
            )
        return written

    async def _read_positions(self, topic: str, partitions: list[int]) -> dict[int, int]:
        stored = await self.store.load_positions(self.group_id, topic, partitions)
        for partition in partitions:
            self.positions[topic, partition] = self.committed[topic, partition] = stored.get(
                partition, -1
            )
        return stored

    async def _ensure_positions(self, records: list[InputRecord]) -> None:
        missing: dict[str, list[int]] = {}
        for r in records:
            if (r.topic, r.partition) not in self.positions:
                missing.setdefault(r.topic, []).append(r.partition)
        for topic, partitions in missing.items():
            await self._read_positions(topic, sorted(set(partitions)))

    async def _read(
        self, parsed: list[InputEvent | Unparsed], touched: set[str], count: int
    ) -> list[int]:
        """Loads what the batch needs of the store (games missing from the cache, the prints
        of places a cached game does not hold) and returns ``count`` journal ids; a batch of
        cached games, with ids left in hand, reads nothing and opens no connection."""
        games = self.referee.games
        absent = sorted(g for g in touched if g not in games)
        # With every game cached, the prints wanted are known now; else once they are loaded.
        wanted = None if absent else self._wanted_prints(parsed, touched)
        if wanted is not None and not any(wanted) and len(self._ids) >= count:
            return await self._take_ids(None, count)  # in hand: no connection
        async with self.store.reads() as tx:
            if wanted is None:
                for stored in await tx.load_games(absent):
                    games[stored.game_id] = GameLedger(
                        decode_state(stored.state), stored.last_seq, complete=False
                    )
                wanted = self._wanted_prints(parsed, touched)
            seqs, event_ids = wanted
            if seqs or event_ids:
                for row in await tx.load_prints(seqs, event_ids):
                    ledger = games[row.game_id]
                    ledger.remember(row.seq, row.event_id, Fingerprint(row.fingerprint))
            return await self._take_ids(tx, count)

    async def _take_ids(self, tx: StepReads | None, count: int) -> list[int]:
        """Takes ``count`` journal ids from those in hand, reserving a block first (by
        ``tx``, or a connection of its own) when too few are left.

        Ids stay ascending in processing order: a block is reserved after every id in hand
        (a sequence only grows), and the ids in hand are dropped whenever partitions are
        assigned or revoked and whenever a write finds a partition moved by another writer,
        so a partition's new owner (or an old owner going on after it) uses ids reserved
        after the other's last.
        """
        pool = self._ids
        if len(pool) < count:
            wanted = max(count - len(pool), JOURNAL_ID_BLOCK, JOURNAL_ID_BATCHES * count)
            if tx is None:
                async with self.store.reads() as reads:
                    pool += await reads.reserve_journal_ids(wanted)
            else:
                pool += await tx.reserve_journal_ids(wanted)
        taken = pool[:count]
        del pool[:count]
        return taken

    def _wanted_prints(
        self, parsed: list[InputEvent | Unparsed], touched: set[str]
    ) -> tuple[list[tuple[str, int]], list[tuple[str, str]]]:
        """The places of this batch whose prints a game loaded from the store lacks: a seq
        at or below its last, an event id (each may be a duplicate of a stored record)."""
        games = self.referee.games
        seqs: list[tuple[str, int]] = []
        event_ids: list[tuple[str, str]] = []
        # The games loaded from the store, found among the batch's few games: usually none,
        # and then no record need be looked at.
        loaded = {
            g for g in touched if (ledger := games.get(g)) is not None and not ledger.complete
        }
        if not loaded:
            return seqs, event_ids
        for p in parsed:
            game_id = p.game_id
            if game_id is None or game_id not in loaded:
                continue
            ledger = games[game_id]
            if p.seq is not None and p.seq <= ledger.last_seq:
                seqs.append((game_id, p.seq))
            if p.event_id is not None:
                event_ids.append((game_id, p.event_id))
        return seqs, event_ids

    async def _rows(
        self, processed: list[tuple[InputRecord, Processed]], ids: list[int]
    ) -> StepRows:
        rows = StepRows()
        clock = time.perf_counter
        slice_end = clock() + YIELD_AFTER
        last_of_game: dict[str, int] = {}
        last_of_partition: dict[tuple[str, int], tuple[int, int]] = {}
        games = self.referee.games
        max_event_bytes = self.referee.max_event_bytes
        journal = rows.journal.append
        # The rows are built by their typed constructors, so mypy holds each field to its
        # column; the outcome's text comes from a table (an enum's .value is a descriptor).
        for journal_id, (record, p) in zip(ids, processed, strict=True):
            rejection = p.rejection
            content = p.content
            game_id = p.game_id
            took_place = p.took_place
            if isinstance(content, Fingerprint):  # fingerprinted as it was judged
                fp = content  # (where it took a place, its ledger holds that already)
            else:
                fp = event_print(content)
                if took_place and game_id is not None and p.seq is not None:
                    games[game_id].settle(p.seq, p.event_id, record.raw, fp)
            journal(
                JournalRow(
                    journal_id,
                    record.topic,
                    record.partition,
                    record.offset,
                    game_id,
                    p.seq,
                    p.event_id,
                    p.event_type,
                    _OUTCOME_TEXT[p.outcome],
                    None if rejection is None else rejection.reason.value,
                    took_place,
                    fp,
                    record.raw,
                    max_event_bytes,
                )
            )
            if took_place and game_id is not None and p.seq is not None:
                last_of_game[game_id] = journal_id
            for v in p.verdicts:
                rows.verdicts.append(
                    VerdictRow(
                        v.verdict_id,
                        v.game_id,
                        v.__struct_config__.tag,  # type: ignore[arg-type]
                        v.cause_seq,
                        journal_id,
                        encode_canonical(v).decode(),
                    )
                )
            if rejection is not None:
                rows.dead_letters.append(
                    DeadLetterRow(
                        journal_id,
                        record.key if record.key is not None else _key_of(game_id),
                        rejection.reason.value,
                        encode_canonical(rejection).decode(),
                    )
                )
            last_of_partition[record.topic, record.partition] = (record.offset, journal_id)
            if clock() > slice_end:
                await asyncio.sleep(0)
                slice_end = clock() + YIELD_AFTER
        for game_id, journal_id in last_of_game.items():
            ledger = games[game_id]
            rows.versions.append(
                GameVersionRow(
                    game_id, ledger.last_seq, encode_state(ledger.state).decode(), journal_id
                )
            )
        for (topic, partition), (offset, journal_id) in last_of_partition.items():
            rows.positions.append(PositionRow(self.group_id, topic, partition, offset, journal_id))
        return rows

    def _evict(self, game_ids: set[str]) -> None:
        for g in game_ids:
            self.referee.games.pop(g, None)
            self._recency.pop(g, None)

    def _trim(self, touched: set[str], pinned: set[str]) -> None:
        """Marks the games of a committed batch most recent (those it started included), then
        drops the least recent beyond the bound, never a game of the batch judged next
        (``pinned``): its write is not settled, so the store does not hold its state yet."""
        games = self.referee.games
        recency = self._recency
        for g in touched:
            if g in games:
                recency[g] = None
                recency.move_to_end(g)
        kept: list[str] = []
        while len(recency) > self.cache_games:
            oldest, _ = recency.popitem(last=False)
            if oldest in pinned:
                kept.append(oldest)
            else:
                games.pop(oldest, None)
        for g in kept:
            recency[g] = None


def _unobserved(stage: str, seconds: float) -> None:
    """Observes nothing (no breakdown asked for)."""
