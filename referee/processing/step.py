"""The processing step: a batch of raw records in, one PostgreSQL transaction out.

Validate, deduplicate against what is stored, fold each game (from the hot cache, or from
its newest projection version on a miss), and append journal, projection, verdicts, dead
letters and consumer positions in one transaction. The positions are the truth about what
was processed: after a crash at any instant, a restart from them gives exactly the rows of a
run that never crashed.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy.ext.asyncio import AsyncEngine

from referee.contracts.parse import DEFAULT_MAX_EVENT_BYTES, Unparsed
from referee.contracts.rejection import Source
from referee.contracts.state_codec import decode_state, encode_state
from referee.contracts.verdicts import encode_canonical
from referee.contracts.wire import InputEvent
from referee.processing.referee import GameLedger, Print, Processed, Referee
from referee.store import repository
from referee.store.repository import Rows


class InputRecord(NamedTuple):
    """One raw input record and where it came from."""

    raw: bytes
    topic: str
    partition: int
    offset: int
    source: Source
    key: str | None = None


@dataclass(slots=True)
class StepResult:
    """What one step appended (for publishing, metrics and tests)."""

    processed: list[tuple[InputRecord, Processed]] = field(default_factory=list)
    skipped: int = 0
    """Records at or below the stored position: already processed before."""


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
        engine: AsyncEngine,
        group_id: str,
        *,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        cache_games: int = 100_000,
    ) -> None:
        self.engine = engine
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
        async with self.engine.connect() as conn:
            stored = await repository.load_positions(conn, self.group_id, topic, partitions)
        for partition in partitions:
            self.positions[topic, partition] = stored.get(partition, -1)
        return stored

    async def process(self, records: list[InputRecord]) -> StepResult:
        """Processes a batch in one transaction; on failure nothing is kept, not even cache."""
        async with self._lock:
            return await self._process(records)

    async def _process(self, records: list[InputRecord]) -> StepResult:
        await self._ensure_positions(records)
        fresh = [r for r in records if r.offset > self.positions[r.topic, r.partition]]
        result = StepResult(skipped=len(records) - len(fresh))
        if not fresh:
            return result
        parsed = [self.referee.parse(r.raw) for r in fresh]
        touched = {g for p in parsed if (g := p.game_id) is not None}
        try:
            async with self.engine.begin() as conn:
                await self._fence(conn, {(r.topic, r.partition) for r in fresh})
                await self._load(conn, parsed, touched)
                result.processed = [
                    (record, self.referee.apply(record.raw, record.source, event))
                    for record, event in zip(fresh, parsed, strict=True)
                ]
                rows = self._rows(
                    result.processed, await repository.reserve_journal_ids(conn, len(fresh))
                )
                await repository.append(conn, rows)
        except BaseException:
            self._evict(touched)
            raise
        for record in fresh:
            self.positions[record.topic, record.partition] = record.offset
        self._trim()
        return result

    async def _fence(self, conn: Any, partitions: set[tuple[str, int]]) -> None:
        """Locks the batch's partitions for this transaction and checks nobody moved them.

        After a rebalance, the old owner may still be committing a batch of a partition the
        new owner has started on; the lock serialises them and the check makes the second one
        give up and re-seek, so no record is ever processed twice.
        """
        for topic, partition in sorted(partitions):
            stored = await repository.lock_position(conn, self.group_id, topic, partition)
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
        self, conn: Any, parsed: list[InputEvent | Unparsed], touched: set[str]
    ) -> None:
        games = self.referee.games
        absent = sorted(g for g in touched if g not in games)
        for stored in await repository.load_games(conn, absent):
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
        for row in await repository.load_prints(conn, seqs, event_ids):
            ledger = games[row.game_id]
            ledger.seq_prints[row.seq] = Print(row.fingerprint)
            if row.event_id is not None:
                ledger.event_prints.setdefault(row.event_id, Print(row.fingerprint))
        for g in touched:
            if g in games:
                self._recency[g] = None
                self._recency.move_to_end(g)

    def _rows(self, processed: list[tuple[InputRecord, Processed]], ids: list[int]) -> Rows:
        rows = Rows([], [], [], [], [])
        last_of_game: dict[str, int] = {}
        last_of_partition: dict[tuple[str, int], tuple[int, int]] = {}
        games = self.referee.games
        for journal_id, (record, p) in zip(ids, processed, strict=True):
            rejection = p.rejection
            fp = p.fingerprint
            rows.journal.append(
                (
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
                )
            )
            if p.took_place and p.game_id is not None and p.seq is not None:
                last_of_game[p.game_id] = journal_id
                games[p.game_id].settle(p.seq, p.event_id, record.raw, fp)
            for v in p.verdicts:
                rows.verdicts.append(
                    (
                        v.verdict_id,
                        v.game_id,
                        v.__struct_config__.tag,
                        v.cause_seq,
                        journal_id,
                        encode_canonical(v).decode(),
                    )
                )
            if rejection is not None:
                rows.dead_letters.append(
                    (
                        journal_id,
                        record.key if record.key is not None else p.game_id,
                        rejection.reason.value,
                        encode_canonical(rejection).decode(),
                    )
                )
            last_of_partition[record.topic, record.partition] = (record.offset, journal_id)
        for game_id, journal_id in last_of_game.items():
            ledger = games[game_id]
            rows.versions.append(
                (game_id, ledger.last_seq, encode_state(ledger.state).decode(), journal_id)
            )
        for (topic, partition), (offset, journal_id) in last_of_partition.items():
            rows.positions.append((self.group_id, topic, partition, offset, journal_id))
        return rows

    def _evict(self, game_ids: set[str]) -> None:
        for g in game_ids:
            self.referee.games.pop(g, None)
            self._recency.pop(g, None)

    def _trim(self) -> None:
        games = self.referee.games
        while len(self._recency) > self.cache_games:
            oldest, _ = self._recency.popitem(last=False)
            games.pop(oldest, None)
