"""The archive's detach beside a reader that holds the tables: it waits a bounded time for its
``ACCESS EXCLUSIVE`` locks, tries again, and leaves the segment attached; an insert made
meanwhile waits behind it for no longer than that bound (``store/ddl.py``)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from referee.store.ddl import LockPatience
from referee.store.seasons_store import TablesBusy, attached_segments, carry_and_detach
from tests.integration.conftest import _plain

pytestmark = pytest.mark.postgres

INSERT = (
    "INSERT INTO journal (source_topic, source_partition, source_offset, outcome, took_place,"
    " fingerprint, raw) VALUES ('t', 0, $1, 'applied', false, '', '')"
)


async def test_the_detach_beside_a_reader_gives_up_and_an_insert_waits_a_bounded_time(
    migrated_database: str,
) -> None:
    url = _plain(migrated_database)
    reader, archive, writer, watcher = [await asyncpg.connect(url) for _ in range(4)]
    patience = LockPatience(timedelta(milliseconds=100), tries=4, pause=0.2)
    try:
        reading = reader.transaction(isolation="repeatable_read")
        await reading.start()
        await reader.fetchval("SELECT count(*) FROM journal")
        (legacy, *_) = await attached_segments(archive)
        assert legacy.name == "p_legacy"
        writer_pid = await writer.fetchval("SELECT pg_backend_pid()")
        detaching = asyncio.create_task(
            carry_and_detach(archive, legacy, datetime.now(UTC), patience)
        )
        longest = 0.0
        offset = 0
        while not detaching.done():
            inserting = asyncio.create_task(writer.execute(INSERT, offset))
            while not inserting.done():
                waited = await watcher.fetchval(
                    "SELECT max(extract(epoch FROM clock_timestamp() - waitstart))::float8"
                    " FROM pg_locks WHERE pid = $1 AND NOT granted",
                    writer_pid,
                )
                longest = max(longest, waited or 0.0)
                await asyncio.sleep(0.01)
            await inserting
            offset += 1
        with pytest.raises(TablesBusy):
            await detaching
        assert "p_legacy" in {s.name for s in await attached_segments(archive)}
        assert offset > 0
        assert longest < 1.0, f"an insert waited {longest:.2f} s behind the detach"
        await reading.rollback()
        await carry_and_detach(archive, legacy, datetime.now(UTC), patience)
        assert "p_legacy" not in {s.name for s in await attached_segments(archive)}
    finally:
        for conn in (reader, archive, writer, watcher):
            await conn.close()
