"""What the processing step reads and appends, in PostgreSQL (the step's port, implemented).

``ProcessingStep`` depends on the protocol in ``referee/processing/ports.py``; this is the
implementation on a real database. The hot path appends with COPY, in one transaction.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import select, text, tuple_
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
from referee.store.schema import journal


class PostgresStepStore:
    """The step's store on PostgreSQL: positions outside a transaction, the rest inside one."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

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
            yield PostgresStepTransaction(conn)

    def is_outage(self, exc: BaseException) -> bool:
        """Checks if a failure is PostgreSQL being unavailable (``store/errors.py``)."""
        return is_outage(exc)


class PostgresStepTransaction:
    """The reads and appends of one processing step, inside its transaction."""

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

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
        plain: tuple[tuple[str, tuple[str, ...], list[Any]], ...] = (
            ("journal", JOURNAL_COLUMNS, rows.journal),
            ("game_versions", VERSION_COLUMNS, rows.versions),
            ("consumer_positions", POSITION_COLUMNS, rows.positions),
        )
        for table, columns, records in plain:
            if records:
                await driver.copy_records_to_table(table, records=records, columns=columns)
        if not rows.verdicts and not rows.dead_letters:
            return None
        # One round trip: the writers' lock, and a notification the relay receives when this
        # transaction commits (PostgreSQL delivers NOTIFY at commit, never before).
        await driver.execute(
            "SELECT pg_advisory_xact_lock($1), pg_notify($2, '')", OUTBOX_LOCK, OUTBOX_CHANNEL
        )
        locked = time.perf_counter()
        outboxes: tuple[tuple[str, tuple[str, ...], list[Any]], ...] = (
            ("verdicts", VERDICT_COLUMNS, rows.verdicts),
            ("dead_letters", DEAD_LETTER_COLUMNS, rows.dead_letters),
        )
        for table, columns, records in outboxes:
            if records:
                await driver.copy_records_to_table(table, records=records, columns=columns)
        return locked
