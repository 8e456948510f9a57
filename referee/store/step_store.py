"""What the processing step reads and appends, in PostgreSQL (the step's port, implemented).

``ProcessingStep`` depends on the protocol in ``referee/processing/ports.py``; this is the
implementation on a real database. A batch is written in one transaction: one statement for
a small batch, COPYs for a large one.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from functools import cache
from typing import Any

from sqlalchemy import Table, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncEngine

from referee.processing.rows import (
    DEAD_LETTER_COLUMNS,
    GAME_REVISION_COLUMNS,
    JOURNAL_COLUMNS,
    POSITION_COLUMNS,
    VERDICT_COLUMNS,
    VERSION_COLUMNS,
    Fenced,
    Moved,
    Reserved,
    StepRows,
    StoredGame,
    StoredPrint,
    Taken,
    Term,
    Written,
)
from referee.store.errors import is_missing_partition, is_outage
from referee.store.locks import position_lock_name
from referee.store.partitions import PartitionMaker
from referee.store.schema import (
    consumer_positions,
    dead_letters,
    game_revisions,
    game_versions,
    journal,
    verdicts,
)


class PostgresStepStore:
    """The step's store on PostgreSQL: reads standing alone, each batch's write in one
    transaction."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        insert_below: int | None = None,
        partitions: PartitionMaker | None = None,
    ) -> None:
        self.engine = engine
        self.insert_below = INSERT_BELOW if insert_below is None else insert_below
        """Batches of at most this many journal rows are appended by INSERT, larger by COPY."""
        self.partitions = partitions
        """What makes the time partitions ahead of the rows, off this write path
        (``store/partitions.py``): told when a row found none."""

    async def load_positions(
        self, group_id: str, topic: str, partitions: Iterable[int]
    ) -> dict[int, int]:
        """Returns the last processed offset of each partition that has one."""
        wanted = list(partitions)
        if not wanted:
            return {}
        async with self.engine.connect() as conn:
            result = await conn.execute(
                text(
                    'SELECT partition, max("offset") FROM consumer_positions '
                    "WHERE group_id = :g AND topic = :t AND partition = ANY(:p) GROUP BY partition"
                ),
                {"g": group_id, "t": topic, "p": wanted},
            )
            return {int(p): int(o) for p, o in result.all()}

    async def take(
        self,
        group_id: str,
        topic: str,
        partitions: Sequence[int],
        owner: str,
        transactional_ids: Sequence[str],
    ) -> list[Taken]:
        """Takes these partitions by a new term each (``referee_take``, one transaction): once
        it returns, no writer of an earlier term can commit a batch of them."""
        if not partitions:
            return []
        ordered = sorted(zip(partitions, transactional_ids, strict=True))
        async with self.engine.connect() as conn:
            raw = await conn.get_raw_connection()
            driver: Any = raw.driver_connection
            async with driver.transaction():
                rows = await driver.fetch(
                    _TAKE,
                    group_id,
                    topic,
                    [p for p, _ in ordered],
                    [position_lock_name(group_id, topic, p) for p, _ in ordered],
                    owner,
                    [t for _, t in ordered],
                )
        return [
            Taken(int(p), int(e), int(s), int(pe), pv == _GIVEN_BACK, po, pt)
            for p, e, s, pe, pv, po, pt in rows
        ]

    async def terms(self, group_id: str, topic: str, partitions: Sequence[int]) -> list[Term]:
        """Returns each partition's newest term and stored position (a partition never taken
        has term 0)."""
        if not partitions:
            return []
        async with self.engine.connect() as conn:
            raw = await conn.get_raw_connection()
            driver: Any = raw.driver_connection
            found = {
                int(p): (int(e), v == _GIVEN_BACK)
                for p, e, v in await driver.fetch(_TERMS, group_id, topic, list(partitions))
            }
        stored = await self.load_positions(group_id, topic, partitions)
        return [Term(p, *found.get(p, (0, False)), stored.get(p, -1)) for p in sorted(partitions)]

    async def give_back(
        self,
        group_id: str,
        topic: str,
        owner: str,
        terms: Sequence[tuple[int, int, str]],
    ) -> None:
        """Records that these (partition, epoch, transactional id) terms were given back
        cleanly: nothing of theirs is in flight, so the next owner need not fence them."""
        if not terms:
            return
        async with self.engine.connect() as conn:
            raw = await conn.get_raw_connection()
            driver: Any = raw.driver_connection
            await driver.execute(
                _GIVE_BACK,
                group_id,
                topic,
                owner,
                [p for p, _, _ in terms],
                [e for _, e, _ in terms],
                [t for _, _, t in terms],
            )

    async def write(self, group_id: str, fence: Sequence[Fenced], rows: StepRows) -> Written:
        """Writes one step's rows in one transaction, if every fenced partition is still at
        the position expected (else writes nothing and says which moved).

        The fence (``referee_fence``, migration 0006) locks each partition's position until
        the transaction ends, then reads it. The outbox rows carry their positions, reserved
        by the step: the partition's lock, which only its owner takes, keeps them in commit
        order within the partition. No lock is shared by every writer.

        A small batch is one statement in its own transaction: the fence, then every table's
        INSERT, each gated on the fence's answer (one round trip, commit included). A large
        batch is a transaction of COPYs, which move rows faster (docs/benchmarks.md).

        It runs no DDL: a DDL statement waits for every reader of its table, and the write
        would wait with it (docs/store.md, "Time partitions"). A row with no partition to
        go to fails the batch as an outage, and the partition maker is woken.
        """
        ordered = sorted(fence)  # every writer locks in the same order: no deadlock
        async with self.engine.connect() as conn:
            raw = await conn.get_raw_connection()
            driver: Any = raw.driver_connection
            try:
                if len(rows.journal) <= self.insert_below:
                    return await _write_at_once(driver, group_id, ordered, rows)
                async with driver.transaction():
                    found = await driver.fetchval(_FENCE, *_fence_args(group_id, ordered))
                    if found is not None:  # nothing written: the empty transaction ends
                        return Written(_moved(ordered, found), time.perf_counter())
                    await _copy(driver, _ALL, _records(rows))
                    appended = time.perf_counter()
            except Exception as exc:
                if is_missing_partition(exc) and self.partitions is not None:
                    self.partitions.wake()  # the retry finds it made, if it can be
                raise
            return Written(None, appended)

    @asynccontextmanager
    async def reads(self) -> AsyncIterator[PostgresStepReads]:
        """A connection whose statements each stand alone (autocommit): no BEGIN and no
        COMMIT round trip around a batch's reads."""
        async with self.engine.connect() as conn:
            raw = await conn.get_raw_connection()
            yield PostgresStepReads(raw.driver_connection)

    def is_outage(self, exc: BaseException) -> bool:
        """Checks if a failure is PostgreSQL being unavailable (``store/errors.py``)."""
        return is_outage(exc)


class PostgresStepReads:
    """The reads of one processing step (games, prints, journal ids), each standing alone.

    They run on the pooled connection's asyncpg connection, as the writes do: a statement
    outside a transaction commits by itself, and asyncpg prepares each text once per
    connection, so a batch's reads cost the round trips and nothing of SQLAlchemy's
    statement compilation (per batch on the live path)."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver

    async def load_games(self, game_ids: Sequence[str]) -> list[StoredGame]:
        """Returns the newest version of each of these games that has one."""
        if not game_ids:
            return []
        rows = await self.driver.fetch(_LOAD_GAMES, list(game_ids))
        return [StoredGame(g, int(v), s, int(r)) for g, v, s, r in rows]

    async def load_prints(
        self, seqs: Sequence[tuple[str, int]], event_ids: Sequence[tuple[str, str]]
    ) -> list[StoredPrint]:
        """Returns the journal's fingerprints of these (game, seq) and (game, event id) places."""
        rows: list[StoredPrint] = []
        if seqs:
            games, numbers = zip(*seqs, strict=True)
            found = await self.driver.fetch(_PRINTS_OF_SEQS, list(games), list(numbers))
            rows += [StoredPrint(*r) for r in found]
        if event_ids:
            games, ids = zip(*event_ids, strict=True)
            found = await self.driver.fetch(_PRINTS_OF_EVENT_IDS, list(games), list(ids))
            rows += [StoredPrint(*r) for r in found]
        return rows

    async def reserve_ids(self, journal: int, verdicts: int, dead_letters: int) -> Reserved:
        """Returns fresh journal ids and outbox positions, ascending, in one round trip."""
        row = await self.driver.fetchrow(_RESERVE_IDS, journal, verdicts, dead_letters)
        return Reserved(*(sorted(ids or ()) for ids in row))


# A game without a row in game_revisions started before migration 0009: rules revision 1.
_LOAD_GAMES = (
    "SELECT v.game_id, v.version, v.state, COALESCE(r.rules_revision, 1) FROM ("
    "SELECT DISTINCT ON (game_id) game_id, version, state::text FROM game_versions "
    "WHERE game_id = ANY($1::text[]) ORDER BY game_id, version DESC"
    ") AS v LEFT JOIN game_revisions AS r ON r.game_id = v.game_id"
)
# (game, seq) and (game, event id) pairs as two parallel arrays, each place looked up by itself
# on the journal's hash indexes (migration 0010): the hash, which the index finds, and the
# place itself, which a colliding row does not have. The lateral subquery with OFFSET 0 is
# never flattened into a join, so the plan is one index probe a place whatever the journal's
# statistics say: a join over the whole array let the planner hash it and scan the partition
# whenever its statistics were missing (a fresh partition before autovacuum's first ANALYZE),
# many times the probes' time (docs/store.md, "Lookups that do not depend on statistics").
# UNION keeps each row once however often its place is asked for; each
# lookup also asks the prints carried past archived partitions (migration 0010).
_PRINTS_OF_SEQS = (
    "SELECT j.game_id, j.seq, j.event_id, j.fingerprint"
    " FROM unnest($1::text[], $2::bigint[]) AS u(g, s) CROSS JOIN LATERAL ("
    "SELECT game_id, seq, event_id, fingerprint FROM journal WHERE took_place"
    " AND hashtextextended(game_id, seq) = hashtextextended(u.g, u.s)"
    " AND game_id = u.g AND seq = u.s OFFSET 0) AS j"
    " UNION SELECT game_id, seq, event_id, fingerprint FROM carried_prints"
    " WHERE (game_id, seq) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))"
)
_PRINTS_OF_EVENT_IDS = (
    "SELECT j.game_id, j.seq, j.event_id, j.fingerprint"
    " FROM unnest($1::text[], $2::text[]) AS u(g, e) CROSS JOIN LATERAL ("
    "SELECT game_id, seq, event_id, fingerprint FROM journal WHERE took_place"
    " AND hashtextextended(event_id, hashtextextended(game_id, 0))"
    " = hashtextextended(u.e, hashtextextended(u.g, 0))"
    " AND game_id = u.g AND event_id = u.e OFFSET 0) AS j"
    " UNION SELECT game_id, seq, event_id, fingerprint FROM carried_prints"
    " WHERE (game_id, event_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))"
)
_RESERVE_IDS = (
    "SELECT (SELECT array_agg(nextval('journal_id_seq')) FROM generate_series(1, $1::int)),"
    " (SELECT array_agg(nextval('verdicts_position_seq')) FROM generate_series(1, $2::int)),"
    " (SELECT array_agg(nextval('dead_letters_position_seq')) FROM generate_series(1, $3::int))"
)


_GIVEN_BACK = 2
"""``partition_owners.event`` of a term given back (1: taken)."""

INSERT_BELOW = 100
"""Journal rows a batch may have to be written by one statement rather than by COPYs: a few
rows go faster in one round trip, many faster by COPY (bench/notes.md has the crossing)."""

_Tables = tuple[tuple[Table, tuple[str, ...]], ...]
_ALL: _Tables = (
    (journal, JOURNAL_COLUMNS),
    (game_versions, VERSION_COLUMNS),
    (consumer_positions, POSITION_COLUMNS),
    (verdicts, VERDICT_COLUMNS),
    (dead_letters, DEAD_LETTER_COLUMNS),
    (game_revisions, GAME_REVISION_COLUMNS),
)


def _records(rows: StepRows) -> tuple[Sequence[tuple[Any, ...]], ...]:
    """The rows of each table of ``_ALL``, in its order."""
    return (
        rows.journal,
        rows.versions,
        rows.positions,
        rows.verdicts,
        rows.dead_letters,
        rows.revisions,
    )


async def _copy(driver: Any, tables: _Tables, records: Sequence[Sequence[tuple[Any, ...]]]) -> None:
    """Appends the rows of these tables by a COPY a table with rows."""
    for (table, columns), rows in zip(tables, records, strict=True):
        if rows:
            await driver.copy_records_to_table(table.name, records=rows, columns=columns)


# The fence with each partition's term of ownership (migration 0012); ``referee_fence`` stays
# for earlier releases running beside this one in a rolling upgrade.
_FENCE = (
    "SELECT referee_fence_owned($1::text, $2::text[], $3::integer[], $4::bigint[], $5::text[], "
    "$6::bigint[])"
)
_FENCE_ARGS = 6


def _fence_args(group_id: str, ordered: Sequence[Fenced]) -> list[Any]:
    """The arguments of ``referee_fence_owned`` for these partitions (in locking order)."""
    return [
        group_id,
        [f.topic for f in ordered],
        [f.partition for f in ordered],
        [f.expected for f in ordered],
        [position_lock_name(group_id, f.topic, f.partition) for f in ordered],
        [f.epoch for f in ordered],
    ]


def _moved(ordered: Sequence[Fenced], found: Sequence[int]) -> Moved:
    """The partition the fence found moved: ``{index (1-based), stored offset, newest term,
    given back}``."""
    index, stored, epoch, released = found
    moved = ordered[index - 1]
    return Moved(moved.topic, moved.partition, int(stored), int(epoch), bool(released))


_TAKE = (
    "SELECT partition, epoch, stored, previous_epoch, previous_event, previous_owner,"
    " previous_transactional_id FROM referee_take($1::text, $2::text, $3::integer[],"
    " $4::text[], $5::text, $6::text[])"
)
_TERMS = (
    "SELECT DISTINCT ON (o.partition) o.partition, o.epoch, o.event FROM partition_owners o"
    " WHERE o.group_id = $1 AND o.topic = $2 AND o.partition = ANY($3::integer[])"
    " ORDER BY o.partition, o.epoch DESC, o.event DESC"
)
_GIVE_BACK = (
    "INSERT INTO partition_owners (group_id, topic, partition, epoch, event, owner,"
    " transactional_id) SELECT $1, $2, u.p, u.e, 2, $3, u.t"
    " FROM unnest($4::integer[], $5::bigint[], $6::text[]) AS u(p, e, t)"
    " ON CONFLICT DO NOTHING"
)


async def _write_at_once(
    driver: Any, group_id: str, ordered: Sequence[Fenced], rows: StepRows
) -> Written:
    """Writes a small batch by one statement, in a transaction of its own (autocommit)."""
    records = _records(rows)
    written = tuple(i for i, table_rows in enumerate(records) if table_rows)
    arguments = _fence_args(group_id, ordered)
    for i in written:
        width = len(_ALL[i][1])
        table_rows = records[i]
        arguments += [[row[c] for row in table_rows] for c in range(width)]
    found = await driver.fetchval(_insert_statement(written), *arguments)
    ended = time.perf_counter()
    return Written(None if found is None else _moved(ordered, found), ended)


@cache
def _insert_statement(written: tuple[int, ...]) -> str:
    """The statement ``_write_at_once`` runs for rows in these of the tables: the fence (its
    answer is the statement's result), then an INSERT of ``unnest`` of one array a column
    for each table with rows, each a data-modifying WITH clause that inserts only if the
    fence found every position as expected (a one-time filter, evaluated before any row)."""
    dialect: Any = postgresql.dialect()  # type: ignore[no-untyped-call]
    parts: list[str] = []
    n = _FENCE_ARGS
    for i in written:
        table, columns = _ALL[i]
        arrays = []
        for name in columns:
            n += 1
            arrays.append(f"${n}::{table.c[name].type.compile(dialect=dialect)}[]")
        names = ", ".join(f'"{name}"' for name in columns)
        # Names and types come from schema.py, never from input (the rows go as parameters).
        parts.append(
            f"INSERT INTO {table.name} ({names}) SELECT {names} FROM unnest({', '.join(arrays)})"  # noqa: S608
            f" AS u({names}) WHERE (SELECT moved FROM fence) IS NULL"
        )
    clauses = "".join(f", w{k} AS ({part})" for k, part in enumerate(parts))
    return f"WITH fence AS ({_FENCE} AS moved){clauses} SELECT moved FROM fence"  # noqa: S608
