"""The relay's store on a real PostgreSQL: the lock, and the notification at commit."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from referee.store.database import create_engine
from referee.store.relay_store import PostgresRelayStore
from referee.store.rows import DeadLetterRow, JournalRow, StepRows
from referee.store.step_store import PostgresStepStore

pytestmark = pytest.mark.postgres


def one_dead_letter() -> StepRows:
    rows = StepRows()
    rows.journal.append(
        JournalRow(
            1,
            "t",
            0,
            0,
            None,
            None,
            None,
            None,
            "rejected",
            "malformed_json",
            False,
            b"f" * 16,
            b"x",
            65536,
        )
    )
    rows.dead_letters.append(DeadLetterRow(1, None, "malformed_json", "{}"))
    return rows


async def test_a_commit_of_outbox_rows_notifies_the_listening_relay_at_commit_only(
    migrated_database: str,
) -> None:
    engine = create_engine(migrated_database)
    woken = asyncio.Event()
    try:
        async with PostgresRelayStore(engine).session() as session:
            assert await session.try_lead()
            await session.listen(woken.set)
            # A batch written by COPY notifies, then appends its outbox rows: an admin's lock
            # on the outbox table holds the write there, after the NOTIFY, before the commit.
            writer = PostgresStepStore(create_engine(migrated_database), insert_below=0)
            admin = await asyncpg.connect(migrated_database)
            try:
                holding = admin.transaction()
                await holding.start()
                await admin.execute("LOCK TABLE dead_letters IN SHARE MODE")
                write = asyncio.create_task(writer.write("g", [], one_dead_letter()))
                await wait_for_lock_wait(admin)
                await asyncio.sleep(0.3)
                assert not woken.is_set(), "NOTIFY is delivered at commit, never before"
                await holding.rollback()
                assert (await write).moved is None
                await asyncio.wait_for(woken.wait(), 5)
            finally:
                await admin.close()
                await writer.engine.dispose()
            await session.unlisten()
            await session.release()
            assert (await session.rows_after("dead_letters", 0, 10))[0].position >= 1
    finally:
        await engine.dispose()


async def wait_for_lock_wait(admin: asyncpg.Connection) -> None:
    """Waits until another session waits for a lock (the write, held by the admin's)."""
    for _ in range(500):
        await admin.execute("SELECT pg_stat_clear_snapshot()")  # a transaction caches it
        waiting = await admin.fetchval(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        if waiting:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the write never waited for the lock")


async def test_one_session_leads_at_a_time(migrated_database: str) -> None:
    engine = create_engine(migrated_database)
    try:
        store = PostgresRelayStore(engine)
        async with store.session() as first, store.session() as second:
            assert await first.try_lead()
            assert not await second.try_lead()
            await first.release()
            assert await second.try_lead()
    finally:
        await engine.dispose()
