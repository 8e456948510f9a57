"""``referee serve``'s sessions carry their limits, and a batch stopped by any of them fails as
an outage (retried from the stored positions, never quarantined): a lock waited for too long
(55P03), a statement run too long (57014), a session idle inside its transaction too long
(25P03, the server ends it). The next batch goes through on a connection of its own."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from referee.processing.rows import Fenced, JournalRow, PositionRow, StepRows
from referee.service.settings import Settings
from referee.store.database import SessionLimits, create_engine
from referee.store.errors import sqlstate
from referee.store.step_store import PostgresStepStore
from tests.integration.conftest import _plain

pytestmark = pytest.mark.postgres

TOPIC = "events"


def batch(offset: int) -> StepRows:
    """One record of partition 0 at ``offset``, written by COPY (``insert_below=0``)."""
    rows = StepRows()
    rows.journal.append(
        JournalRow(
            offset + 1, TOPIC, 0, offset, "g", offset + 1, None, "Passed", "fouled", None,
            True, b"f" * 16, b"{}", 65536, "0.4.0",
        )
    )  # fmt: skip
    rows.positions.append(PositionRow("g", TOPIC, 0, offset, offset + 1))
    return rows


async def write(store: PostgresStepStore, offset: int) -> BaseException | None:
    """Writes the record at ``offset`` after ``offset - 1``; returns the failure, if any."""
    try:
        written = await store.write("g", [Fenced(TOPIC, 0, offset - 1)], batch(offset))
    except Exception as exc:  # noqa: BLE001 - the failure is what the test looks at
        return exc
    assert written.moved is None
    return None


async def shown(engine: AsyncEngine) -> list[str]:
    async with engine.connect() as conn:
        raw = await conn.get_raw_connection()
        driver = raw.driver_connection
        return [
            await driver.fetchval(f"SHOW {name}")  # type: ignore[union-attr]
            for name in ("statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout")
        ]


async def test_serves_sessions_carry_the_limits_and_the_cli_s_none(migrated_database: str) -> None:
    serving = create_engine(migrated_database, limits=Settings().session_limits)
    reading = create_engine(migrated_database)
    try:
        assert await shown(serving) == ["1min", "30s", "30s"]
        assert await shown(reading) == ["0", "0", "0"]
    finally:
        await serving.dispose()
        await reading.dispose()


async def test_a_batch_stopped_by_each_limit_fails_as_an_outage(migrated_database: str) -> None:
    engine = create_engine(
        migrated_database, limits=SessionLimits(statement=0.5, lock=0.2, idle_in_transaction=0.5)
    )
    store = PostgresStepStore(engine, insert_below=0)
    admin = await asyncpg.connect(_plain(migrated_database))
    try:
        assert await write(store, 0) is None

        # a lock held longer than lock_timeout
        async with admin.transaction():
            await admin.execute("LOCK TABLE journal IN ACCESS EXCLUSIVE MODE")
            locked = await write(store, 1)
        assert locked is not None
        assert sqlstate(locked) == "55P03"
        assert store.is_outage(locked)
        assert await write(store, 1) is None

        # a statement longer than statement_timeout (a trigger that sleeps)
        await admin.execute(
            "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN PERFORM pg_sleep(2); RETURN NULL; END $$; "
            "CREATE TRIGGER slow AFTER INSERT ON consumer_positions "
            "FOR EACH STATEMENT EXECUTE FUNCTION slow()"
        )
        slow = await write(store, 2)
        assert slow is not None
        assert sqlstate(slow) == "57014"
        assert store.is_outage(slow)
        await admin.execute("DROP TRIGGER slow ON consumer_positions")
        assert await write(store, 2) is None

        # a session idle inside its transaction longer than the timeout: the server ends it
        async with engine.connect() as conn:
            raw = await conn.get_raw_connection()
            driver = raw.driver_connection
            assert driver is not None
            idle: BaseException | None = None
            try:
                async with driver.transaction():
                    await driver.execute("SELECT 1")
                    await asyncio.sleep(1.5)
                    await driver.execute("SELECT 1")
            except Exception as exc:  # noqa: BLE001 - the failure is what the test looks at
                idle = exc
        assert idle is not None
        assert store.is_outage(idle), repr(idle)
        assert await write(store, 3) is None
    finally:
        await admin.close()
        await engine.dispose()
