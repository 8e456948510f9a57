"""The processing step: a batch of raw records in, one PostgreSQL transaction out.

Validate, deduplicate against what is stored, fold each game (from the hot cache, or from
its newest projection version on a miss), and append journal, projection, verdicts, dead
letters and consumer positions in one transaction. The positions are the truth about what
was processed: after a crash at any instant, a restart from them gives exactly the rows of a
run that never crashed.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import NamedTuple

from referee.contracts.parse import DEFAULT_MAX_EVENT_BYTES, Unparsed
from referee.contracts.rejection import Source
from referee.contracts.state_codec import decode_state, encode_state
from referee.contracts.verdicts import encode_canonical
from referee.contracts.wire import InputEvent
from referee.processing.ledger import Fingerprint, GameLedger
from referee.processing.outcome import Processed
from referee.processing.ports import StepStore, StepTransaction
from referee.processing.referee import Referee, failure_detail
from referee.store.rows import (
    DeadLetterRow,
    GameVersionRow,
    JournalRow,
    PositionRow,
    StepRows,
    VerdictRow,
)

log = logging.getLogger("referee.step")


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


@dataclass(slots=True)
class StepResult:
    """What one step appended (for publishing, metrics and tests)."""

    processed: list[tuple[InputRecord, Processed]] = field(default_factory=list)
    skipped: int = 0
    """Records at or below the stored position: already processed before."""
    transactions: int = 0
    """Transactions committed (more than one when a failing record had to be isolated)."""

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


class ProcessingStep:
    """The unit of work of the referee, bound to one consumer group."""

    def __init__(
        self,
        store: StepStore,
        group_id: str,
        *,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        cache_games: int = 100_000,
    ) -> None:
        self.store = store
        self.group_id = group_id
        self.referee = Referee(max_event_bytes)
        self.cache_games = cache_games
        self._recency: OrderedDict[str, None] = OrderedDict()
        self._lock = asyncio.Lock()
        """Held by a batch in flight; the rebalance listener waits for it."""
        self.positions: dict[tuple[str, int], int] = {}
        """The last processed offset per (topic, partition), as stored."""

    async def forget_partitions(self, partitions: set[tuple[str, int]]) -> None:
        """Drops what this instance knew of partitions it no longer owns.

        It waits for the batch in flight: the rebalance listener runs concurrently with the
        batch handler, and a cache emptied under a batch would make it judge from missing
        state. Game states need no finer dropping: a game missing from the cache is reloaded
        from its newest projection version.
        """
        async with self._lock:
            for tp in partitions:
                self.positions.pop(tp, None)
            self.referee.games.clear()
            self._recency.clear()

    async def load_positions(self, topic: str, partitions: list[int]) -> dict[int, int]:
        """Reads the stored positions of these partitions (and remembers them)."""
        async with self._lock:
            return await self._read_positions(topic, partitions)

    async def _read_positions(self, topic: str, partitions: list[int]) -> dict[int, int]:
        stored = await self.store.load_positions(self.group_id, topic, partitions)
        for partition in partitions:
            self.positions[topic, partition] = stored.get(partition, -1)
        return stored

    async def process(self, records: list[InputRecord]) -> StepResult:
        """Processes a batch in one transaction; on failure nothing is kept, not even cache.

        A batch that fails for another reason than a database outage holds a record the
        referee cannot process (a defect): the batch is split in halves, each processed in its
        own transaction, until the failing record is alone; that record is quarantined
        (journaled and dead-lettered as ``internal_error``, taking no place) and the rest go
        on. An outage is raised for the caller to retry, and nothing is quarantined.
        """
        async with self._lock:
            return await self._isolating(records)

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
        result = StepResult()
        if record.offset <= self.positions[record.topic, record.partition]:
            result.skipped = 1
            return result
        async with self.store.transaction() as tx:
            await self._fence(tx, {(record.topic, record.partition)})
            processed = self.referee.quarantine(record.raw, record.source, detail)
            result.processed = [(record, processed)]
            await tx.append(self._rows(result.processed, await tx.reserve_journal_ids(1)))
        result.transactions = 1
        self.positions[record.topic, record.partition] = record.offset
        return result

    async def _process(self, records: list[InputRecord]) -> StepResult:
        await self._ensure_positions(records)
        fresh = [r for r in records if r.offset > self.positions[r.topic, r.partition]]
        result = StepResult(skipped=len(records) - len(fresh))
        if not fresh:
            return result
        parsed = [self.referee.parse(r.raw) for r in fresh]
        touched = {g for p in parsed if (g := p.game_id) is not None}
        counted = self.referee.tally.copy()
        try:
            async with self.store.transaction() as tx:
                await self._fence(tx, {(r.topic, r.partition) for r in fresh})
                await self._load(tx, parsed, touched)
                result.processed = [
                    (record, self.referee.apply(record.raw, record.source, event))
                    for record, event in zip(fresh, parsed, strict=True)
                ]
                await tx.append(
                    self._rows(result.processed, await tx.reserve_journal_ids(len(fresh)))
                )
        except BaseException:
            self._evict(touched)
            self.referee.tally = counted
            raise
        result.transactions = 1
        for record in fresh:
            self.positions[record.topic, record.partition] = record.offset
        self._trim(touched)
        return result

    async def _fence(self, tx: StepTransaction, partitions: set[tuple[str, int]]) -> None:
        """Locks the batch's partitions for this transaction and checks nobody moved them.

        After a rebalance, the old owner may still be committing a batch of a partition the
        new owner has started on; the lock serialises them and the check makes the second one
        give up and re-seek, so no record is ever processed twice.
        """
        for topic, partition in sorted(partitions):
            stored = await tx.lock_position(self.group_id, topic, partition)
            expected = self.positions[topic, partition]
            if stored != expected:
                self.positions[topic, partition] = stored
                raise PositionMoved(topic, partition, stored, expected)

    async def _ensure_positions(self, records: list[InputRecord]) -> None:
        missing: dict[str, list[int]] = {}
        for r in records:
            if (r.topic, r.partition) not in self.positions:
                missing.setdefault(r.topic, []).append(r.partition)
        for topic, partitions in missing.items():
            await self._read_positions(topic, sorted(set(partitions)))

    async def _load(
        self, tx: StepTransaction, parsed: list[InputEvent | Unparsed], touched: set[str]
    ) -> None:
        games = self.referee.games
        absent = sorted(g for g in touched if g not in games)
        for stored in await tx.load_games(absent):
            games[stored.game_id] = GameLedger(
                decode_state(stored.state), stored.last_seq, complete=False
            )
        seqs: list[tuple[str, int]] = []
        event_ids: list[tuple[str, str]] = []
        for p in parsed:
            ledger = games.get(p.game_id) if p.game_id is not None else None
            if ledger is None or ledger.complete or p.game_id is None:
                continue
            if p.seq is not None and p.seq <= ledger.last_seq:
                seqs.append((p.game_id, p.seq))
            if p.event_id is not None:
                event_ids.append((p.game_id, p.event_id))
        for row in await tx.load_prints(seqs, event_ids):
            ledger = games[row.game_id]
            ledger.remember(row.seq, row.event_id, Fingerprint(row.fingerprint))

    def _rows(self, processed: list[tuple[InputRecord, Processed]], ids: list[int]) -> StepRows:
        rows = StepRows()
        last_of_game: dict[str, int] = {}
        last_of_partition: dict[tuple[str, int], tuple[int, int]] = {}
        games = self.referee.games
        max_event_bytes = self.referee.max_event_bytes
        for journal_id, (record, p) in zip(ids, processed, strict=True):
            rejection = p.rejection
            fp = p.fingerprint
            rows.journal.append(
                JournalRow(
                    journal_id,
                    record.topic,
                    record.partition,
                    record.offset,
                    p.game_id,
                    p.seq,
                    p.event_id,
                    p.event_type,
                    p.outcome.value,
                    None if rejection is None else rejection.reason.value,
                    p.took_place,
                    fp,
                    record.raw,
                    max_event_bytes,
                )
            )
            if p.took_place and p.game_id is not None and p.seq is not None:
                last_of_game[p.game_id] = journal_id
                games[p.game_id].settle(p.seq, p.event_id, record.raw, fp)
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
                        record.key if record.key is not None else _key_of(p.game_id),
                        rejection.reason.value,
                        encode_canonical(rejection).decode(),
                    )
                )
            last_of_partition[record.topic, record.partition] = (record.offset, journal_id)
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

    def _trim(self, touched: set[str]) -> None:
        """Marks the games of a committed batch most recent (those it started included), then
        drops the least recent beyond the bound."""
        games = self.referee.games
        recency = self._recency
        for g in touched:
            if g in games:
                recency[g] = None
                recency.move_to_end(g)
        while len(recency) > self.cache_games:
            oldest, _ = recency.popitem(last=False)
            games.pop(oldest, None)
