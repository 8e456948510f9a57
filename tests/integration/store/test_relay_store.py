"""The relay's store on a real PostgreSQL: the lock, and the notification at commit."""

from __future__ import annotations

import asyncio

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
            writer = PostgresStepStore(create_engine(migrated_database))
            try:
                async with writer.transaction() as tx:
                    await tx.reserve_journal_ids(1)  # the step's first statements begin it
                    await tx.append(one_dead_letter())
                    await asyncio.sleep(0.3)
                    assert not woken.is_set(), "NOTIFY is delivered at commit, never before"
                await asyncio.wait_for(woken.wait(), 5)
            finally:
                await writer.engine.dispose()
            await session.unlisten()
            await session.release()
            assert (await session.rows_after("dead_letters", 0, 10))[0].position >= 1
    finally:
        await engine.dispose()


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


async def test_an_append_before_any_statement_is_refused_not_committed_alone(
    migrated_database: str,
) -> None:
    writer = PostgresStepStore(create_engine(migrated_database))
    try:
        with pytest.raises(RuntimeError, match="transaction begun"):
            async with writer.transaction() as tx:
                await tx.append(one_dead_letter())
    finally:
        await writer.engine.dispose()
