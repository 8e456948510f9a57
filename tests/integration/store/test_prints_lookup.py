"""The step's prints lookups on the journal's hash indexes (migration 0010): each finds
exactly the rows of the places asked, by an index, also in the generic plan a prepared
statement settles on (a partial expression index would have no statistics, and its lookups
would turn into scans of the whole partition as the journal grows), and before the partition
was ever analyzed (a join over the whole array was hashed against a scan of the partition
then, and the JIT compiled it: a new owner's every batch paid 35-500 ms)."""

from __future__ import annotations

import asyncpg
import pytest

from referee.store.database import create_engine
from referee.store.step_store import _PRINTS_OF_EVENT_IDS, _PRINTS_OF_SEQS
from tests.integration.conftest import _plain

pytestmark = pytest.mark.postgres

GAMES = 200
EVENTS = 100  # a game


async def test_the_prints_lookups_find_exactly_their_places_by_index(
    migrated_database: str,
) -> None:
    conn = await asyncpg.connect(_plain(migrated_database))
    try:
        await _fill(conn)
        await conn.execute("ANALYZE journal")
        places = [("g-7", 3), ("g-7", 3), ("g-8", 99), ("g-9", EVENTS)]  # twice; one not there
        found = await conn.fetch(_PRINTS_OF_SEQS, [g for g, _ in places], [s for _, s in places])
        assert sorted((r["game_id"], r["seq"]) for r in found) == [("g-7", 3), ("g-8", 99)]
        ids = [("g-7", "e-607"), ("g-8", "e-607"), ("g-8", "e-19808")]  # e-607 is g-7's
        found = await conn.fetch(_PRINTS_OF_EVENT_IDS, [g for g, _ in ids], [e for _, e in ids])
        assert sorted((r["game_id"], r["event_id"]) for r in found) == [
            ("g-7", "e-607"),
            ("g-8", "e-19808"),
        ]
        filled = await conn.fetchval("SELECT tableoid::regclass::text FROM journal LIMIT 1")
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        for query, example in (
            (_PRINTS_OF_SEQS, "ARRAY['g-1'], ARRAY[1::bigint]"),
            (_PRINTS_OF_EVENT_IDS, "ARRAY['g-1'], ARRAY['e-1']"),
        ):
            await conn.execute(f"PREPARE lookup AS {query}")
            plan = [r[0] for r in await conn.fetch(f"EXPLAIN EXECUTE lookup({example})")]
            await conn.execute("DEALLOCATE lookup")
            scans = [line for line in plan if f" on {filled} " in line]
            assert scans, plan
            assert all("Index Scan" in line for line in scans), plan
    finally:
        await conn.close()


async def _fill(conn: asyncpg.Connection) -> None:
    await conn.execute(
        "INSERT INTO journal (id, source_topic, source_partition, source_offset, game_id,"
        " seq, event_id, event_type, outcome, took_place, fingerprint, raw)"
        " SELECT n, 't', 0, n, 'g-' || (n % $1::int), n / $1::int, 'e-' || n, 'TilePlayed',"
        " 'applied', true, sha256(n::text::bytea), '{}'::bytea"
        " FROM generate_series(0, $1::int * $2::int - 1) AS n",
        GAMES,
        EVENTS,
    )


async def test_the_lookups_probe_the_index_of_a_partition_never_analyzed(
    migrated_database: str,
) -> None:
    # on the service's own connection, as a new owner's first batches run them: custom plans
    engine = create_engine(migrated_database)
    try:
        async with engine.connect() as pooled:
            conn = (await pooled.get_raw_connection()).driver_connection
            assert conn is not None
            assert await conn.fetchval("SHOW jit") == "off"
            for (partition,) in await conn.fetch(
                "SELECT inhrelid::regclass::text FROM pg_inherits"
                " WHERE inhparent = 'journal'::regclass"
            ):  # autovacuum must not analyze it meanwhile
                await conn.execute(f"ALTER TABLE {partition} SET (autovacuum_enabled = false)")
            await _fill(conn)
            filled = await conn.fetchval("SELECT tableoid::regclass::text FROM journal LIMIT 1")
            never = "SELECT reltuples < 0 FROM pg_class WHERE oid = $1::regclass"
            assert await conn.fetchval(never, filled), "the partition has statistics already"
            games = [f"g-{n % GAMES}" for n in range(250)]
            for query, args in (
                (_PRINTS_OF_SEQS, (games, [n % EVENTS for n in range(250)])),
                (_PRINTS_OF_EVENT_IDS, (games, [f"e-new-{n}" for n in range(250)])),
            ):
                plan = [r[0] for r in await conn.fetch(f"EXPLAIN {query}", *args)]
                scans = [line for line in plan if f" on {filled} " in line]
                assert scans, plan
                # an index scan, or a bitmap heap scan of what its index scan found
                assert not any("Seq Scan" in line for line in scans), "\n".join(plan)
                probes = [line for line in plan if f"{filled}_hashtextextended" in line]
                assert any("Index Scan" in line for line in probes), "\n".join(plan)
            assert await conn.fetchval(never, filled), "analyzed while the test ran"
    finally:
        await engine.dispose()
