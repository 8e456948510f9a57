"""Time partitions made off the write path, beside readers that hold the tables for minutes.

Migration 0012 makes each partition as a table of its own and attaches it: the partition is
the one ``CREATE TABLE ... PARTITION OF`` made (compared here catalogue entry by catalogue
entry), and making it waits for no reader and stops no insert. The DDL of the referee that
does take ``ACCESS EXCLUSIVE`` (the archive's DETACH) waits a bounded time, so an insert
queued behind its request waits no longer.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import asyncpg
import pytest

from referee.processing.rows import Fenced, JournalRow, PositionRow, StepRows
from referee.store.database import create_engine, migrate, newest_revision
from referee.store.ddl import LockPatience, LocksBusy
from referee.store.errors import is_missing_partition
from referee.store.partitions import (
    FAILED,
    LOCK_TIMEOUT,
    MADE,
    PARTITIONED,
    PartitionMaker,
    PartitionPolicy,
    create_partitions,
)
from referee.store.step_store import PostgresStepStore
from tests.integration.conftest import _plain

pytestmark = pytest.mark.postgres

# What a partition is, in the catalogue, whatever its name: columns, constraints, indexes
# (their definitions with the partition's name replaced), triggers, and its owner.
_COLUMNS = (
    "SELECT attname, format_type(atttypid, atttypmod), attnotnull, attcollation, attstorage,"
    " attcompression, attstattarget, attidentity, attgenerated,"
    " pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a"
    " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
    " WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
)
_CONSTRAINTS = (
    "SELECT replace(conname, $2, '<p>'), contype, pg_get_constraintdef(oid) FROM pg_constraint"
    " WHERE conrelid = $1::regclass ORDER BY 1"
)
_INDEXES = (
    "SELECT replace(pg_get_indexdef(indexrelid), $2, '<p>'), indisunique, indisprimary,"
    " (SELECT inhparent::regclass::text FROM pg_inherits WHERE inhrelid = indexrelid)"
    " FROM pg_index WHERE indrelid = $1::regclass ORDER BY 1"
)
_TRIGGERS = (
    "SELECT tgname, tgtype, tgfoid::regproc::text, tgenabled FROM pg_trigger"
    " WHERE tgrelid = $1::regclass ORDER BY 1"
)
_TABLE = (
    "SELECT relowner::regrole::text, relpersistence, relkind, reloptions, relispartition,"
    " pg_get_expr(relpartbound, oid) IS NOT NULL FROM pg_class WHERE oid = $1::regclass"
)


async def _described(conn: asyncpg.Connection, name: str) -> list[list[tuple[Any, ...]]]:
    return [
        [tuple(r) for r in await conn.fetch(_COLUMNS, name)],
        [tuple(r) for r in await conn.fetch(_CONSTRAINTS, name, name)],
        [tuple(r) for r in await conn.fetch(_INDEXES, name, name)],
        [tuple(r) for r in await conn.fetch(_TRIGGERS, name)],
        [tuple(r) for r in await conn.fetch(_TABLE, name)],
    ]


async def test_an_attached_partition_is_the_one_partition_of_made(
    migrated_database: str,
) -> None:
    conn = await asyncpg.connect(_plain(migrated_database))
    try:
        await create_partitions(conn, PartitionPolicy(timedelta(days=1), 4))  # one day more
        newest = {
            t: await conn.fetchval(
                "SELECT max(b.upper_bound) FROM pg_inherits i,"
                " LATERAL referee_partition_bounds(i.inhrelid::regclass) b"
                " WHERE i.inhparent = $1::regclass",
                t,
            )
            for t in PARTITIONED
        }
        for table in PARTITIONED:  # the way migration 0010 made them, a year ahead, under a
            # name as long as the referee's (index names are cut to 63 bytes)
            lower = newest[table] + timedelta(days=366)
            await conn.execute(
                f"CREATE TABLE {_in_place(table)} PARTITION OF {table} FOR VALUES FROM "
                f"('{lower.isoformat()}') TO ('{(lower + timedelta(days=1)).isoformat()}')"
            )
        for table in PARTITIONED:
            attached = await conn.fetchval(
                "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
                " WHERE i.inhparent = $1::regclass AND c.relname::text LIKE $2"
                " ORDER BY c.relname DESC LIMIT 1",
                table,
                f"{table}_p2%",
            )
            assert await _described(conn, attached) == await _described(conn, _in_place(table)), (
                table
            )
    finally:
        await conn.close()


def _in_place(table: str) -> str:
    return f"{table}_x{0:015}"  # as long as _p<YYYYMMDD>t<HHMMSS>


async def _locks_waited(conn: asyncpg.Connection, pid: int) -> list[str]:
    rows = await conn.fetch(
        "SELECT l.mode || ' on ' || coalesce(l.relation::regclass::text, l.locktype)"
        " FROM pg_locks l WHERE l.pid = $1 AND NOT l.granted",
        pid,
    )
    return [r[0] for r in rows]


async def _waiting(conn: asyncpg.Connection, pid: int) -> list[str]:
    """Polls until the session waits for a lock (10 s at most); returns what it waits for."""
    for _ in range(1000):
        waited = await _locks_waited(conn, pid)
        if waited:
            return waited
        await asyncio.sleep(0.01)
    raise AssertionError(f"session {pid} never waited for a lock")


async def test_partitions_are_made_beside_a_reader_and_inserts_pass_both(
    empty_database: str,
) -> None:
    """A repeatable-read reader holds the journal; the partitions of the next ten minutes are
    made meanwhile, waiting for no lock, and an insert beside the reader waits for none."""
    # the newest revision by its name: no partition made yet but the legacy ones
    await asyncio.to_thread(migrate, empty_database, newest_revision())
    url = _plain(empty_database)
    reader, maker, writer, watcher = [await asyncpg.connect(url) for _ in range(4)]
    try:
        reading = reader.transaction(isolation="repeatable_read")
        await reading.start()
        await reader.fetchval("SELECT count(*) FROM journal")
        maker_pid = await maker.fetchval("SELECT pg_backend_pid()")
        before = await maker.fetchval("SELECT count(*) FROM pg_inherits")
        making = asyncio.create_task(
            create_partitions(maker, PartitionPolicy(timedelta(minutes=1), 10))
        )
        waited: list[str] = []
        while not making.done() and not waited:
            waited += await _locks_waited(watcher, maker_pid)
            await asyncio.sleep(0.01)
        if waited:
            await reading.rollback()  # what CREATE TABLE ... PARTITION OF waits for
        await making
        assert waited == [], "making the partitions waited for the reader"
        made = await maker.fetchval("SELECT count(*) FROM pg_inherits") - before
        assert made >= 5 * 10, made
        async with asyncio.timeout(10):
            await writer.execute(
                "INSERT INTO journal (source_topic, source_partition, source_offset, outcome,"
                " took_place, fingerprint, raw) VALUES ('t', 0, 0, 'applied', false, '', '')"
            )
        await reading.rollback()
    finally:
        for conn in (reader, maker, writer, watcher):
            await conn.close()


async def test_a_reader_stops_partition_of_and_the_inserts_behind_it(
    migrated_database: str,
) -> None:
    """What migration 0010's way did (the failure this file is about): PARTITION OF waits
    for the reader, and an insert queues behind its waiting ACCESS EXCLUSIVE request."""
    url = _plain(migrated_database)
    reader, maker, writer, watcher = [await asyncpg.connect(url) for _ in range(4)]
    try:
        reading = reader.transaction(isolation="repeatable_read")
        await reading.start()
        await reader.fetchval("SELECT count(*) FROM journal")
        maker_pid, writer_pid = [
            await c.fetchval("SELECT pg_backend_pid()") for c in (maker, writer)
        ]
        making = asyncio.create_task(
            maker.execute(
                "CREATE TABLE journal_in_place PARTITION OF journal"
                " FOR VALUES FROM ('2100-01-01') TO ('2100-01-02')"
            )
        )
        assert await _waiting(watcher, maker_pid) == ["AccessExclusiveLock on journal"]
        inserting = asyncio.create_task(
            writer.execute(
                "INSERT INTO journal (source_topic, source_partition, source_offset, outcome,"
                " took_place, fingerprint, raw) VALUES ('t', 0, 0, 'applied', false, '', '')"
            )
        )
        assert await _waiting(watcher, writer_pid) == ["RowExclusiveLock on journal"]
        assert await _locks_waited(watcher, maker_pid) == ["AccessExclusiveLock on journal"]
        await reading.rollback()
        await asyncio.gather(making, inserting)
    finally:
        for conn in (reader, maker, writer, watcher):
            await conn.close()


async def test_the_write_path_makes_no_partition_it_fails_as_an_outage_and_wakes_the_maker(
    empty_database: str,
) -> None:
    """No partition past the legacy one: the batch fails as an outage and makes nothing (the
    write path runs no DDL); the maker is asked to try at once, and the retry goes through."""
    await asyncio.to_thread(migrate, empty_database, newest_revision())
    engine = create_engine(empty_database)
    maker = PartitionMaker(engine, PartitionPolicy(timedelta(minutes=1), 3))
    store = PostgresStepStore(engine, partitions=maker)
    conn = await asyncpg.connect(_plain(empty_database))
    try:
        before = await conn.fetchval("SELECT count(*) FROM pg_inherits")
        with pytest.raises(Exception) as failed:
            await store.write("g", [Fenced("events", 0, -1)], one_record())
        assert is_missing_partition(failed.value)
        assert store.is_outage(failed.value)
        assert await conn.fetchval("SELECT count(*) FROM pg_inherits") == before
        assert maker.woken
        await maker.make()
        written = await store.write("g", [Fenced("events", 0, -1)], one_record())
        assert written.moved is None
    finally:
        await conn.close()
        await engine.dispose()


def one_record() -> StepRows:
    rows = StepRows()
    rows.journal.append(
        JournalRow(
            1, "events", 0, 0, "g", 1, None, "Passed", "fouled", None, True, b"f" * 16, b"{}",
            65536, "0.4.0",
        )
    )  # fmt: skip
    rows.positions.append(PositionRow("g", "events", 0, 0, 1))
    return rows


async def test_the_maker_retries_a_lock_not_free_counts_each_try_and_makes_them_after(
    empty_database: str,
) -> None:
    """Another session holds a lock ATTACH needs (SHARE UPDATE EXCLUSIVE, as a long ANALYZE
    of the table would): each try waits its bounded time, is counted, and the round fails
    without raising out of the maker; once the lock goes, the next round makes them."""
    await asyncio.to_thread(migrate, empty_database, newest_revision())
    engine = create_engine(empty_database)
    outcomes: list[str] = []
    maker = PartitionMaker(
        engine,
        PartitionPolicy(timedelta(minutes=1), 2),
        patience=LockPatience(timedelta(milliseconds=50), tries=3, pause=0.05),
        observe=outcomes.append,
    )
    holder = await asyncpg.connect(_plain(empty_database))
    try:
        holding = holder.transaction()
        await holding.start()
        await holder.execute("LOCK TABLE verdicts IN SHARE UPDATE EXCLUSIVE MODE")
        with pytest.raises(LocksBusy):
            await maker.make()
        assert outcomes == [LOCK_TIMEOUT, LOCK_TIMEOUT, LOCK_TIMEOUT, FAILED]
        assert maker.covered_until is None
        await holding.rollback()
        covered = await maker.make()
        assert outcomes[-1] == MADE
        now = await holder.fetchval("SELECT now()")
        assert covered >= now + timedelta(minutes=2)
    finally:
        await holder.close()
        await engine.dispose()
