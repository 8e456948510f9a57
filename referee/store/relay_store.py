"""What the relay reads and appends, in PostgreSQL (the relay's port, implemented).

One session holds the relay lock while its relay leads: a PostgreSQL session advisory lock,
so a relay whose session dies loses the lead at once. Through that session the relay reads
the outbox rows past its cursor, in position order, and appends its checkpoints.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from referee.store.locks import OUTBOX_CHANNEL, RELAY_LOCK

OUTBOX_KEYS = {"verdicts": "game_id", "dead_letters": "key"}
"""The outbox tables, and the column each record's Kafka key is taken from."""

APPLICATION_NAME = "referee-relay"
"""The leading relay's session in ``pg_stat_activity``."""


class OutboxRow(NamedTuple):
    """One row of an outbox, as it is published."""

    position: int
    key: bytes | None
    body: bytes


class Backlog(NamedTuple):
    """What an outbox holds past a position: rows not yet published, and the oldest's age."""

    rows: int
    oldest_seconds: float


class PostgresRelayStore:
    """The relay's store on PostgreSQL."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    @asynccontextmanager
    async def session(self) -> AsyncIterator[PostgresRelaySession]:
        """A session of its own; the relay lock, if taken, goes with it.

        Its statements each stand alone (autocommit): a read of an outbox is then one round
        trip, not three (BEGIN, the read, COMMIT), and every read sees the newest commits.
        """
        async with self.engine.connect() as conn:
            yield PostgresRelaySession(await conn.execution_options(isolation_level="AUTOCOMMIT"))

    async def backlog(self, outbox: str, after: int) -> Backlog:
        """Returns how many rows of ``outbox`` are past ``after``, and the oldest one's age."""
        table = _table(outbox)
        async with self.engine.connect() as conn:
            result = await conn.execute(
                text(
                    f"SELECT count(*), min(recorded_at), now() FROM {table} "  # noqa: S608 - a known table
                    "WHERE position > :p"
                ),
                {"p": after},
            )
            count, oldest, now = result.one()
        age = 0.0 if oldest is None else max((now - oldest) / dt.timedelta(seconds=1), 0.0)
        return Backlog(int(count), age)


class PostgresRelaySession:
    """The reads and appends of a relay, on one session."""

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn
        self._listener: Callable[..., None] | None = None

    async def listen(self, wake: Callable[[], None]) -> None:
        """Calls ``wake`` whenever a transaction that wrote outbox rows commits."""

        def notified(*_: object) -> None:
            wake()

        await (await self._driver()).add_listener(OUTBOX_CHANNEL, notified)
        self._listener = notified

    async def unlisten(self) -> None:
        """Stops listening (before the session goes back to the pool)."""
        if self._listener is not None:
            await (await self._driver()).remove_listener(OUTBOX_CHANNEL, self._listener)
            self._listener = None

    async def _driver(self) -> Any:
        """The asyncpg connection under the session (notifications are asyncpg's)."""
        driver = (await self.conn.get_raw_connection()).driver_connection
        if driver is None:
            raise RuntimeError("the relay's session has no connection")
        return driver

    async def try_lead(self) -> bool:
        """Takes the relay lock if no other session holds it; names the session if so."""
        got = (
            await self.conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": RELAY_LOCK})
        ).scalar()
        await self.conn.commit()
        if got:
            await self._name(APPLICATION_NAME)
        return bool(got)

    async def release(self) -> None:
        """Gives the relay lock back (a closed session gives it back too)."""
        await self.conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": RELAY_LOCK})
        await self._name("")

    async def checkpoint(self, outbox: str) -> int:
        """Returns how far ``outbox`` is known to be published (0: nothing known)."""
        position = (
            await self.conn.execute(
                text("SELECT max(position) FROM relay_checkpoints WHERE outbox = :o"),
                {"o": _table(outbox)},
            )
        ).scalar()
        await self.conn.commit()
        return int(position or 0)

    async def rows_after(self, outbox: str, cursor: int, limit: int) -> list[OutboxRow]:
        """Returns up to ``limit`` rows of ``outbox`` past ``cursor``, in position order.

        Read on the asyncpg connection itself (the session is in autocommit), its statement
        prepared once: the relay reads every outbox on every pump."""
        rows = await (await self._driver()).fetch(_ROWS_AFTER[_table(outbox)], cursor, limit)
        return [OutboxRow(int(p), _key_bytes(k), str(b).encode()) for p, k, b in rows]

    async def save_checkpoint(self, outbox: str, position: int) -> None:
        """Appends that every row of ``outbox`` up to ``position`` is on its topic."""
        await (await self._driver()).execute(
            "INSERT INTO relay_checkpoints (outbox, position) VALUES ($1, $2) "
            "ON CONFLICT DO NOTHING",
            _table(outbox),
            position,
        )

    async def _name(self, name: str) -> None:
        # so an operator (or a test) finds the leader's session in pg_stat_activity
        await self.conn.execute(
            text("SELECT set_config('application_name', :n, false)"), {"n": name}
        )
        await self.conn.commit()


_ROWS_AFTER = {
    table: f"SELECT position, {keys}, body FROM {table} "  # noqa: S608 - known names
    "WHERE position > $1 ORDER BY position LIMIT $2"
    for table, keys in OUTBOX_KEYS.items()
}


def _table(outbox: str) -> str:
    if outbox not in OUTBOX_KEYS:
        raise ValueError(f"no outbox {outbox!r}")
    return outbox


def _key_bytes(key: object) -> bytes | None:
    if key is None or isinstance(key, bytes):
        return key
    if isinstance(key, memoryview):
        return key.tobytes()
    return str(key).encode()
