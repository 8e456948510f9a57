"""The processing step: a batch of raw records in, one PostgreSQL transaction out.

Validate, deduplicate against what is stored, fold each game (from the hot cache, or from
its newest projection version on a miss), and append journal, projection, the input
partitions' outboxes and consumer positions in one transaction. The positions are the truth
about what was processed: after a crash at any instant, a restart from them gives exactly
the rows of a run that never crashed.

Batches can be pipelined (``submit``): batch N+1 is judged while batch N's transaction is in
flight, and written once N has committed. docs/design.md, "Pipelining", says why that keeps
every guarantee. The cache (``cache.py``), the numbering (``ids.py``), the rows
(``appends.py``) and the isolation of a failing record (``isolation.py``) are modules of their
own; this one is the pipeline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

from referee.contracts.parse import DEFAULT_MAX_EVENT_BYTES, Unparsed
from referee.contracts.state_codec import decode_state
from referee.contracts.wire import InputEvent
from referee.domain.revisions import NEWEST, judge_of
from referee.processing import slices
from referee.processing.appends import build_rows, outbox_counts
from referee.processing.cache import GameCache
from referee.processing.ids import IdPool
from referee.processing.isolation import isolating
from referee.processing.ledger import Fingerprint, GameLedger
from referee.processing.outcome import Processed, Tally
from referee.processing.ports import StepStore
from referee.processing.records import (
    InputRecord,
    OutboxChunk,
    Partition,
    PositionMoved,
    StepResult,
    chunks_of,
)
from referee.processing.referee import Referee
from referee.processing.rows import Fenced, StepRows, Written

__all__ = ["InputRecord", "PositionMoved", "ProcessingStep", "StepResult"]


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


_UNOWNED = 2**63
"""The position of a partition the step does not hold: every record of it is skipped."""

OnCommitted = Callable[[StepResult], None]
"""Called when a batch's transaction has committed (to count, to commit offsets)."""

OnAppended = Callable[[list[OutboxChunk]], None]
"""Called at once after every transaction that commits, in commit order, with what it
appended to each input partition's outbox (the partitions' publishers go on from there)."""

StageObserver = Callable[[str, float], None]
"""Told how long each stage of a batch took (stage name, seconds), for the breakdown:
``decode`` (the edge), ``load`` (games and prints read, numbers reserved), ``judge``,
``rows``, ``wait`` (for the write before it), ``copy`` (fence and appends), ``commit``."""


def _unobserved(stage: str, seconds: float) -> None:
    """Observes nothing (no breakdown asked for)."""


def _unannounced(chunks: list[OutboxChunk]) -> None:
    """Hands the outbox to nobody (a replay into the store: nothing is published)."""


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
        on_appended: OnAppended | None = None,
        observe: StageObserver | None = None,
        rules_revision: int = NEWEST,
        owned_only: bool = False,
    ) -> None:
        self.store = store
        self.owned_only = owned_only
        """Judges only the partitions adopted (``adopt``): the live service's, each taken under
        a term of ownership. Otherwise a partition's position is read when its first record
        comes (a replay of a log)."""
        self.group_id = group_id
        self.referee = Referee(max_event_bytes, eager_prints=True, rules_revision=rules_revision)
        self.cache = GameCache(self.referee.games, cache_games)
        self.ids = IdPool()
        self.on_committed = on_committed
        self.on_appended: OnAppended = on_appended or _unannounced
        self.observe: StageObserver = observe or _unobserved
        self._lock = asyncio.Lock()
        """Held while a batch is judged or settled; the rebalance listener waits for it."""
        self.positions: dict[Partition, int] = {}
        """The offset the next batch must find stored, per (topic, partition): the last
        processed, counting the batch in flight."""
        self.committed: dict[Partition, int] = {}
        """The last offset known committed, per (topic, partition)."""
        self.epochs: dict[Partition, int] = {}
        """The term of ownership each adopted partition is written under (its fence checks
        that it is still the partition's newest)."""
        self._discarded: dict[Partition, int] = {}
        """Partitions whose records are skipped in batches received up to a number."""
        self._in_flight: tuple[_Judged, asyncio.Task[None]] | None = None

    # --- partitions come and go ------------------------------------------------------------

    async def pause(self) -> None:
        """Settles the batch in flight and drops the numbers in hand: the partitions are being
        reassigned (what is known of them stays until ``adopt`` or ``forget``)."""
        async with self._lock:
            await self._settle()
            self.ids.clear()

    async def adopt(self, topic: str, terms: Mapping[int, tuple[int | None, int]]) -> None:
        """Makes these partitions of ``topic`` this step's, each under a term of ownership and
        from a stored position (``{partition: (epoch, stored)}``; an epoch of None is not
        fenced): whatever it knew of them before (games, positions) is dropped."""
        async with self._lock:
            await self._settle()
            self.ids.clear()
            adopted = {(topic, p) for p in terms}
            self.cache.evict_partitions(adopted)
            for partition, (epoch, stored) in terms.items():
                tp = topic, partition
                if epoch is None:
                    self.epochs.pop(tp, None)
                else:
                    self.epochs[tp] = epoch
                self.positions[tp] = self.committed[tp] = stored

    async def forget(self, partitions: Iterable[Partition]) -> None:
        """Drops what this step knew of partitions it no longer owns (games, positions, term)."""
        async with self._lock:
            await self._settle()
            self.ids.clear()
            gone = set(partitions)
            for tp in gone:
                self.positions.pop(tp, None)
                self.committed.pop(tp, None)
                self.epochs.pop(tp, None)
            self.cache.evict_partitions(gone)

    def discard(self, tp: Partition, through: int) -> None:
        """Skips the partition's records in every batch received up to number ``through``
        (its consumer paused it then: what was fetched before is stale, and its take seeks it
        again from the stored position). Batches are numbered from 1: up to 0 is none."""
        if through > 0:
            self._discarded[tp] = max(through, self._discarded.get(tp, through))

    def epoch_of(self, tp: Partition) -> int | None:
        """Returns the term this step writes a partition under (None: none, not fenced)."""
        return self.epochs.get(tp)

    # --- batches ---------------------------------------------------------------------------

    async def process(self, records: list[InputRecord], received: int = 0) -> StepResult:
        """Processes a batch in one transaction, waiting for it; on failure nothing is kept,
        not even cache. A record it cannot process is isolated (``isolation.py``).
        ``received``: the batch's number, for ``discard``."""
        async with self._lock:
            await self._settle()
            return await self._isolating(self._kept_records(records, received))

    async def submit(self, records: list[InputRecord], received: int = 0) -> None:
        """Judges a batch now and writes it once the batch in flight has committed, without
        waiting for its own write (``settle`` or the next call does).

        A failure of the batch in flight comes out here: an outage or a moved position is
        raised (nothing of either batch is kept, the positions are the stored ones), and a
        record that cannot be written is isolated as ``process`` isolates it.
        """
        async with self._lock:
            records = self._kept_records(records, received)
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
                # Let the write send its first statement before the consumer hands over the
                # next batch (fetched and unpacked without a yield).
                await asyncio.sleep(0)

    async def settle(self) -> None:
        """Waits for the batch in flight to be written (raises as ``submit`` does)."""
        async with self._lock:
            await self._settle()

    @asynccontextmanager
    async def settled(self) -> AsyncIterator[Exception | None]:
        """Settles the batch in flight and holds the step's writes back until the block ends:
        inside it the store holds of the step's partitions what ``committed`` says. Yields
        the settling's failure, if any (the batch's effects undone: ``committed`` stays)."""
        async with self._lock:
            failure: Exception | None = None
            try:
                await self._settle()
            except Exception as exc:  # noqa: BLE001 - the caller says what it does with it
                failure = exc
            yield failure

    def _kept_records(self, records: list[InputRecord], received: int) -> list[InputRecord]:
        """The batch without the records of partitions discarded up to its number."""
        discarded = self._discarded
        if not discarded:
            return records
        stale = set()
        for tp, through in list(discarded.items()):
            if received <= through:
                stale.add(tp)
            else:  # later batches are all fetched after the partition's pause
                del discarded[tp]
        if not stale:
            return records
        return [r for r in records if (r.topic, r.partition) not in stale]

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
        self.observe("copy", written.appended - started)
        self.observe("commit", time.perf_counter() - written.appended)
        if announce and self.on_committed is not None:
            # at once: metrics count without waiting for the next batch; the cache is
            # settled later, under the lock
            self.on_committed(judged.result)

    def _kept(self, judged: _Judged, pinned: set[str]) -> None:
        committed = self.committed
        for position in judged.rows.positions:  # each partition's last record of the batch
            committed[position.topic, position.partition] = position.offset
        self.cache.trim(judged.touched, pinned)

    def _undo(self, *batches: _Judged | None) -> None:
        """Forgets every effect of judged batches whose write failed: their games (evicted,
        to be loaded again as stored), their positions and their counts."""
        judged = [b for b in batches if b is not None]
        for b in judged:
            self.cache.evict(b.touched)
        self.referee.tally = judged[0].counted
        self.positions = dict(self.committed)

    def _report(self, result: StepResult) -> None:
        if self.on_committed is not None and (result.processed or result.skipped):
            self.on_committed(result)

    # --- one batch -------------------------------------------------------------------------

    async def _isolating(self, records: list[InputRecord]) -> StepResult:
        return await isolating(records, self._process, self._quarantine, self.store.is_outage)

    async def _quarantine(self, record: InputRecord, detail: str) -> StepResult:
        """Appends a record the referee failed on as rejected (``internal_error``), alone."""
        await self._ensure_positions([record])
        tp = (record.topic, record.partition)
        result = StepResult()
        if record.offset <= self.positions.get(tp, _UNOWNED):
            result.skipped = 1
            return result
        processed = self.referee.quarantine(record.raw, record.source, detail)
        result.processed = [(record, processed)]
        await self._fenced({tp: self.positions[tp]}, await self._rows(result.processed))
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
        fresh = [r for r in records if r.offset > positions.get((r.topic, r.partition), _UNOWNED)]
        if not fresh:
            return None
        result = StepResult(skipped=len(records) - len(fresh), transactions=1)
        referee = self.referee
        decoding = time.perf_counter()
        parsed: list[InputEvent | Unparsed] = []
        parse, keep = referee.parse, parsed.append
        await slices.each(fresh, lambda r: keep(parse(r.raw)))
        self.observe("decode", time.perf_counter() - decoding)
        placed = {
            g: (r.topic, r.partition)
            for r, p in zip(fresh, parsed, strict=True)
            if (g := p.game_id) is not None
        }
        self.cache.place(placed)
        touched = set(placed)
        counted = referee.tally.copy()
        try:
            started = time.perf_counter()
            await self._read(parsed, touched, len(fresh))
            loaded = time.perf_counter()
            apply, done = referee.apply, result.processed.append

            def judge(pair: tuple[InputRecord, InputEvent | Unparsed]) -> None:
                record, event = pair
                done((record, apply(record.raw, record.source, event)))

            await slices.each(zip(fresh, parsed, strict=True), judge)
            judged = time.perf_counter()
            rows = await self._rows(result.processed)
            self.observe("load", loaded - started)
            self.observe("judge", judged - loaded)
            self.observe("rows", time.perf_counter() - judged)
        except BaseException:
            self.cache.evict(touched)
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
        and checks nobody moved it; announces the outbox rows once it has committed.

        After a rebalance, the old owner may still be committing a batch of a partition the
        new owner has started on; the lock serialises them and the check makes the second one
        give up and re-seek, so no record is ever processed twice.
        """
        epochs = self.epochs
        fence = [
            Fenced(topic, partition, offset, epochs.get((topic, partition)))
            for (topic, partition), offset in expected.items()
        ]
        written = await self.store.write(self.group_id, fence, rows)
        moved = written.moved
        if moved is not None:
            # Another writer numbered records after every number in hand: those reserved
            # before would put this consumer's next rows before its in the journal and the
            # partition's outbox. Its games may have moved on too (or back: the store lost
            # commits), so they are read again.
            tp = moved.topic, moved.partition
            mine = epochs.get(tp)
            lost = mine is not None and (
                moved.epoch > mine or (moved.epoch == mine and moved.released)
            )
            self.ids.clear()
            self.committed[tp] = moved.stored
            self.cache.evict_partitions({tp})
            raise PositionMoved(moved.topic, moved.partition, moved.stored, expected[tp], lost=lost)
        if self.on_appended is not _unannounced:
            self.on_appended(chunks_of(expected, rows))
        return written

    async def _read_positions(self, topic: str, partitions: list[int]) -> dict[int, int]:
        stored = await self.store.load_positions(self.group_id, topic, partitions)
        for partition in partitions:
            self.positions[topic, partition] = self.committed[topic, partition] = stored.get(
                partition, -1
            )
        return stored

    async def _ensure_positions(self, records: list[InputRecord]) -> None:
        if self.owned_only:
            return  # a partition not adopted is not this step's: its records are skipped
        missing: dict[str, list[int]] = {}
        for r in records:
            if (r.topic, r.partition) not in self.positions:
                missing.setdefault(r.topic, []).append(r.partition)
        for topic, partitions in missing.items():
            await self._read_positions(topic, sorted(set(partitions)))

    async def _read(
        self, parsed: list[InputEvent | Unparsed], touched: set[str], count: int
    ) -> None:
        """Loads what the batch needs of the store (games missing from the cache, the prints
        of places a cached game does not hold) and reserves numbers for ``count`` records if
        too few are in hand; a batch of cached games, with numbers in hand, reads nothing and
        opens no connection."""
        games = self.referee.games
        absent = sorted(g for g in touched if g not in games)
        # With every game cached, the prints wanted are known now; else once they are loaded.
        wanted = None if absent else self._wanted_prints(parsed, touched)
        if wanted is not None and not any(wanted) and self.ids.has(count, count, count):
            return  # in hand: no connection
        async with self.store.reads() as tx:
            if wanted is None:
                for stored in await tx.load_games(absent):
                    games[stored.game_id] = GameLedger(
                        decode_state(stored.state),
                        stored.last_seq,
                        complete=False,
                        rules_revision=stored.rules_revision,
                        judge=judge_of(stored.rules_revision),
                    )
                wanted = self._wanted_prints(parsed, touched)
            seqs, event_ids = wanted
            if seqs or event_ids:
                for row in await tx.load_prints(seqs, event_ids):
                    ledger = games[row.game_id]
                    ledger.remember(row.seq, row.event_id, Fingerprint(row.fingerprint))
            await self.ids.top_up(tx, count, count, count)

    async def _rows(self, processed: list[tuple[InputRecord, Processed]]) -> StepRows:
        """Numbers and builds the rows of judged records (reserving more numbers first, on a
        connection of its own, in the rare batch that gives more verdicts than records)."""
        verdicts, dead = outbox_counts(processed)
        ids = self.ids
        if not ids.has(len(processed), verdicts, dead):
            async with self.store.reads() as reads:
                await ids.top_up(reads, len(processed), verdicts, dead)
        journal_ids = ids.take_journal_ids(len(processed))
        verdict_positions, dead_positions = ids.take_positions(verdicts, dead)
        return await build_rows(
            processed,
            self.referee.games,
            self.group_id,
            self.referee.max_event_bytes,
            journal_ids,
            verdict_positions,
            dead_positions,
        )

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
