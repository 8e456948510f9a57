"""What the processing step reads and appends, in PostgreSQL (the step's port, implemented).

``ProcessingStep`` depends on the protocol in ``referee/processing/ports.py``; this is the
implementation on a real database. The hot path appends with COPY, in one transaction.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from functools import cache
from typing import Any

from sqlalchemy import Table, select, text, tuple_
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from referee.store.errors import is_outage
from referee.store.locks import OUTBOX_CHANNEL, OUTBOX_LOCK, position_lock_name
from referee.store.rows import (
    DEAD_LETTER_COLUMNS,
    JOURNAL_COLUMNS,
    POSITION_COLUMNS,
    VERDICT_COLUMNS,
    VERSION_COLUMNS,
    StepRows,
    StoredGame,
    StoredPrint,
)
from referee.store.schema import consumer_positions, dead_letters, game_versions, journal, verdicts


class PostgresStepStore:
    """The step's store on PostgreSQL: positions outside a transaction, the rest inside one."""

    def __init__(self, engine: AsyncEngine, *, insert_below: int | None = None) -> None:
        self.engine = engine
        self.insert_below = INSERT_BELOW if insert_below is None else insert_below
        """Batches of at most this many journal rows are appended by INSERT, larger by COPY."""

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

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PostgresStepTransaction]:
        """One transaction: committed when the block ends, rolled back if it raises."""
        async with self.engine.begin() as conn:
            yield PostgresStepTransaction(conn, self.insert_below)

    @asynccontextmanager
    async def reads(self) -> AsyncIterator[PostgresStepTransaction]:
        """A connection whose statements each stand alone (autocommit): no BEGIN and no
        COMMIT round trip around a batch's reads."""
        async with self.engine.connect() as conn:
            yield PostgresStepTransaction(
                await conn.execution_options(isolation_level="AUTOCOMMIT")
            )

    def is_outage(self, exc: BaseException) -> bool:
        """Checks if a failure is PostgreSQL being unavailable (``store/errors.py``)."""
        return is_outage(exc)


class PostgresStepTransaction:
    """The reads and appends of one processing step, inside its transaction."""

    def __init__(self, conn: AsyncConnection, insert_below: int = 0) -> None:
        self.conn = conn
        self.insert_below = insert_below

    async def lock_position(self, group_id: str, topic: str, partition: int) -> int:
        """Takes the partition's transaction lock; returns its stored offset (-1 if none)."""
        await self.conn.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"),
            {"k": position_lock_name(group_id, topic, partition)},
        )
        result = await self.conn.execute(
            text(
                'SELECT max("offset") FROM consumer_positions '
                "WHERE group_id = :g AND topic = :t AND partition = :p"
            ),
            {"g": group_id, "t": topic, "p": partition},
        )
        stored = result.scalar()
        return -1 if stored is None else int(stored)

    async def load_games(self, game_ids: Sequence[str]) -> list[StoredGame]:
        """Returns the newest version of each of these games that has one."""
        if not game_ids:
            return []
        result = await self.conn.execute(
            text(
                "SELECT DISTINCT ON (game_id) game_id, version, state::text FROM game_versions "
                "WHERE game_id = ANY(:ids) ORDER BY game_id, version DESC"
            ),
            {"ids": list(game_ids)},
        )
        return [StoredGame(g, int(v), s) for g, v, s in result.all()]

    async def load_prints(
        self, seqs: Sequence[tuple[str, int]], event_ids: Sequence[tuple[str, str]]
    ) -> list[StoredPrint]:
        """Returns the journal's fingerprints of these (game, seq) and (game, event id) places."""
        rows: list[StoredPrint] = []
        columns = (journal.c.game_id, journal.c.seq, journal.c.event_id, journal.c.fingerprint)
        if seqs:
            result = await self.conn.execute(
                select(*columns).where(
                    journal.c.took_place, tuple_(journal.c.game_id, journal.c.seq).in_(seqs)
                )
            )
            rows += [StoredPrint(*r) for r in result.all()]
        if event_ids:
            result = await self.conn.execute(
                select(*columns).where(
                    journal.c.took_place,
                    tuple_(journal.c.game_id, journal.c.event_id).in_(event_ids),
                )
            )
            rows += [StoredPrint(*r) for r in result.all()]
        return rows

    async def reserve_journal_ids(self, count: int) -> list[int]:
        """Returns ``count`` fresh journal ids, ascending (arrival order)."""
        result = await self.conn.execute(
            text("SELECT array_agg(nextval('journal_id_seq')) FROM generate_series(1, :n)"),
            {"n": count},
        )
        ids: list[int] = result.scalar_one()
        return sorted(ids)

    async def append(self, rows: StepRows) -> float | None:
        """Appends one step's rows with COPY.

        The outbox rows go last, under a transaction lock shared by every writer: outbox
        positions are then taken in commit order, so a relay reading positions in order never
        passes over a row that commits later.
        """
        raw = await self.conn.get_raw_connection()
        driver: Any = raw.driver_connection
        # SQLAlchemy's asyncpg adapter begins the transaction at its first statement (the
        # fence, in the step); driver calls before it would commit on their own.
        if not driver.is_in_transaction():
            raise RuntimeError("append needs the transaction begun by a statement first")
        # A small batch goes in one INSERT a statement (a COPY costs two round trips per
        # table); a large one by COPY, which moves rows faster (docs/benchmarks.md).
        by_insert = len(rows.journal) <= self.insert_below
        await _append(driver, _PLAIN, (rows.journal, rows.versions, rows.positions), by_insert)
        if not rows.verdicts and not rows.dead_letters:
            return None
        # One round trip: the writers' lock, and a notification the relay receives when this
        # transaction commits (PostgreSQL delivers NOTIFY at commit, never before).
        await driver.execute(
            "SELECT pg_advisory_xact_lock($1), pg_notify($2, '')", OUTBOX_LOCK, OUTBOX_CHANNEL
        )
        locked = time.perf_counter()
        await _append(driver, _OUTBOXES, (rows.verdicts, rows.dead_letters), by_insert)
        return locked


INSERT_BELOW = 100
"""Journal rows a batch may have to be appended by INSERT rather than COPY. Measured here:
five rows in three tables take 3.1 ms by one INSERT against 3.8 ms by three COPYs, 2,000
rows 50 ms against 28 ms."""

_Tables = tuple[tuple[Table, tuple[str, ...]], ...]
_PLAIN: _Tables = (
    (journal, JOURNAL_COLUMNS),
    (game_versions, VERSION_COLUMNS),
    (consumer_positions, POSITION_COLUMNS),
)
_OUTBOXES: _Tables = ((verdicts, VERDICT_COLUMNS), (dead_letters, DEAD_LETTER_COLUMNS))


async def _append(
    driver: Any,
    tables: _Tables,
    records: Sequence[Sequence[tuple[Any, ...]]],
    by_insert: bool,
) -> None:
    """Appends the rows of these tables: by one INSERT, or by a COPY a table with rows."""
    if by_insert:
        await _insert(driver, tables, records)
        return
    for (table, columns), rows in zip(tables, records, strict=True):
        if rows:
            await driver.copy_records_to_table(table.name, records=rows, columns=columns)


async def _insert(
    driver: Any, tables: _Tables, records: Sequence[Sequence[tuple[Any, ...]]]
) -> None:
    """Appends the rows of several tables in one statement: an INSERT of ``unnest`` of one
    array a column, a table per data-modifying WITH clause. Tables without rows are left out.
    """
    written = tuple(i for i, rows in enumerate(records) if rows)
    if not written:
        return
    columns: list[list[Any]] = []
    for i in written:
        width = len(tables[i][1])
        rows = records[i]
        columns += [[row[c] for row in rows] for c in range(width)]
    await driver.execute(_insert_statement(tables, written), *columns)


@cache
def _insert_statement(tables: _Tables, written: tuple[int, ...]) -> str:
    """The statement ``_insert`` runs for rows in these of the tables."""
    dialect: Any = postgresql.dialect()  # type: ignore[no-untyped-call]
    parts: list[str] = []
    n = 0
    for i in written:
        table, columns = tables[i]
        arrays = []
        for name in columns:
            n += 1
            arrays.append(f"${n}::{table.c[name].type.compile(dialect=dialect)}[]")
        names = ", ".join(f'"{name}"' for name in columns)
        # Names and types come from schema.py, never from input (the rows go as parameters).
        # The rows go in in the arrays' order, so an outbox position (a default) follows it.
        parts.append(
            f"INSERT INTO {table.name} ({names}) SELECT {names} FROM unnest({', '.join(arrays)})"  # noqa: S608
            f" WITH ORDINALITY AS u({names}, row_number) ORDER BY row_number"
        )
    *first, last = parts
    if not first:
        return last
    clauses = ", ".join(f"w{k} AS ({part})" for k, part in enumerate(first))
    return f"WITH {clauses} {last}"
