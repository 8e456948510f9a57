"""Telling an outage from a defect, on failures a real PostgreSQL gives.

An outage is retried and never quarantines anything; a value the database refuses is the
record's doing, and the step isolates that record.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from sqlalchemy import text

from referee.store.database import create_engine
from referee.store.errors import is_outage, sqlstate
from tests.integration.conftest import _plain
from tools.testkit.kafkatools import free_port

pytestmark = pytest.mark.postgres


async def failure(url: str, *statements: str, args: tuple[object, ...] = ()) -> BaseException:
    conn = await asyncpg.connect(_plain(url))
    try:
        for statement in statements[:-1]:
            await conn.execute(statement)
        await conn.execute(statements[-1], *args)
    except Exception as exc:  # noqa: BLE001 - the failure is what the test looks at
        return exc
    finally:
        await conn.close()
    raise AssertionError("the statement did not fail")


async def test_a_value_postgresql_refuses_is_a_defect(migrated_database: str) -> None:
    exc = await failure(
        migrated_database,
        "CREATE TEMP TABLE t (x text)",
        "INSERT INTO t VALUES ($1)",
        args=("a\x00b",),
    )
    assert sqlstate(exc) == "22021"
    assert not is_outage(exc)


async def test_a_value_the_driver_refuses_is_a_defect(migrated_database: str) -> None:
    exc = await failure(migrated_database, "SELECT $1::int", args=(2**40,))
    assert isinstance(exc, asyncpg.DataError)
    assert not is_outage(exc)


async def test_a_statement_timeout_is_an_outage(migrated_database: str) -> None:
    exc = await failure(migrated_database, "SET statement_timeout = 50", "SELECT pg_sleep(2)")
    assert sqlstate(exc) == "57014"
    assert is_outage(exc)


async def test_a_lock_timeout_is_an_outage(migrated_database: str) -> None:
    holder = await asyncpg.connect(_plain(migrated_database))
    try:
        await holder.execute("BEGIN; LOCK TABLE journal IN ACCESS EXCLUSIVE MODE")
        exc = await failure(
            migrated_database, "SET lock_timeout = 50", "SELECT count(*) FROM journal"
        )
    finally:
        await holder.close()
    assert sqlstate(exc) == "55P03"
    assert is_outage(exc)


async def test_a_missing_table_is_an_outage_not_a_record_s_fault(empty_database: str) -> None:
    exc = await failure(empty_database, "SELECT * FROM journal")
    assert sqlstate(exc) == "42P01"
    assert is_outage(exc)


async def test_a_terminated_session_is_an_outage_through_sqlalchemy(
    migrated_database: str,
) -> None:
    engine = create_engine(migrated_database)
    try:
        async with engine.connect() as conn:
            pid = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar()
            killer = await asyncpg.connect(_plain(migrated_database))
            await killer.execute("SELECT pg_terminate_backend($1)", pid)
            await killer.close()
            with pytest.raises(Exception) as caught:  # any wrapper will do
                await conn.execute(text("SELECT 1"))
    finally:
        await engine.dispose()
    assert is_outage(caught.value)


async def test_no_server_at_all_is_an_outage() -> None:
    port = free_port()
    with pytest.raises(OSError) as caught:
        await asyncio.wait_for(
            asyncpg.connect(f"postgresql://nobody@127.0.0.1:{port}/none"), timeout=10
        )
    assert is_outage(caught.value)
