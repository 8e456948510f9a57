"""A batch's write, by one statement (small batches) and by COPYs (large ones): the same
rows, every column and the outbox order included; the same fence, which writes nothing for
a partition moved on, and which waits for a concurrent write and then sees what it committed.
"""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from referee.processing.rows import (
    DeadLetterRow,
    Fenced,
    GameVersionRow,
    JournalRow,
    Moved,
    PositionRow,
    StepRows,
    VerdictRow,
)
from referee.store.database import create_engine, migrate
from referee.store.locks import position_lock_name
from referee.store.step_store import PostgresStepStore
from tests.integration.conftest import create_database, drop_database, fetch

pytestmark = pytest.mark.postgres

BIG = 2**53 - 1


def awkward_rows() -> StepRows:
    """Rows with every kind of value the edge lets through: NULLs, the largest integers,
    NUL and invalid UTF-8 in the raw bytes, non-ASCII text."""
    rows = StepRows()
    raw = b'{"type":"Passed","game_id":"t\xc3\xa9","seq":9007199254740991}\x00\xff'
    for i in range(1, 6):
        rows.journal.append(
            JournalRow(
                i,
                "file:/logs/ünï.jsonl",
                2**31 - 1,
                BIG,
                None if i == 3 else f"g-{i}",
                None if i == 3 else BIG - i,
                None if i == 3 else f"é-{i}",
                None if i == 3 else "Passed",
                "rejected" if i == 3 else "applied",
                "malformed_json" if i == 3 else None,
                i != 3,
                bytes([i]) * 16,
                raw,
                None if i == 2 else 64 * 1024,
                None if i == 4 else "0.4.0+ü",
            )
        )
    rows.versions += [
        GameVersionRow("g-1", BIG - 1, '{"players": ["ä", "b"], "round": null}', 1),
        GameVersionRow("g-2", 1, '{"note": "\\u00e9 and \\n"}', 2),
    ]
    source = ("file:/logs/ünï.jsonl", 2**31 - 1)
    rows.verdicts += [
        VerdictRow(
            BIG - 10 + k,
            f"v-{k}",
            "g-1",
            "FoulRecorded",
            BIG - k,
            1,
            f'{{"k": {k}, "t": "ü"}}',
            *source,
        )
        for k in (1, 2, 3, 4, 5)  # the positions the step reserved, ascending
    ]
    rows.dead_letters += [
        DeadLetterRow(7, 3, None, "malformed_json", '{"raw": "\\u0000"}', *source),
        DeadLetterRow(BIG, 4, b"\x00key\xff", "seq_gap", "{}", *source),
    ]
    rows.positions += [
        PositionRow("replay", "file:/logs/ünï.jsonl", 2**31 - 1, BIG, 5),
        PositionRow("replay", "other", 0, 0, 4),
    ]
    return rows


TABLES = {
    "journal": "SELECT * FROM journal ORDER BY id",
    "game_versions": "SELECT * FROM game_versions ORDER BY game_id, version",
    "verdicts": "SELECT * FROM verdicts ORDER BY position",
    "dead_letters": "SELECT * FROM dead_letters ORDER BY position",
    "consumer_positions": "SELECT * FROM consumer_positions ORDER BY topic",
}


async def appended(url: str, insert_below: int) -> dict[str, list[dict[str, object]]]:
    store = PostgresStepStore(create_engine(url), insert_below=insert_below)
    try:
        assert (await store.write("replay", [], awkward_rows())).moved is None
    finally:
        await store.engine.dispose()
    return {
        table: [{k: v for k, v in dict(r).items() if k != "recorded_at"} for r in rows]
        for table, query in TABLES.items()
        if (rows := await fetch(url, query))
    }


async def test_insert_and_copy_append_the_same_rows(admin_url: str, migrated_database: str) -> None:
    other = await create_database(admin_url)
    try:
        await asyncio.to_thread(migrate, other)
        by_insert = await appended(migrated_database, insert_below=1000)
        by_copy = await appended(other, insert_below=0)
    finally:
        await drop_database(admin_url, other)
    assert by_insert == by_copy
    assert set(by_insert) == set(TABLES)
    assert [v["verdict_id"] for v in by_insert["verdicts"]] == [f"v-{k}" for k in (1, 2, 3, 4, 5)]
    assert [v["position"] for v in by_insert["verdicts"]] == [
        BIG - 9,
        BIG - 8,
        BIG - 7,
        BIG - 6,
        BIG - 5,
    ]
    assert {(v["source_topic"], v["source_partition"]) for v in by_insert["verdicts"]} == {
        ("file:/logs/ünï.jsonl", 2**31 - 1)
    }
    assert by_insert["journal"][2]["raw"] == awkward_rows().journal[2].raw
    assert by_insert["journal"][1]["max_event_bytes"] is None


@pytest.mark.parametrize("insert_below", [1000, 0], ids=["one-statement", "copy"])
async def test_a_row_the_database_refuses_fails_the_whole_transaction(
    migrated_database: str, insert_below: int
) -> None:
    store = PostgresStepStore(create_engine(migrated_database), insert_below=insert_below)
    rows = awkward_rows()
    # the same verdict id twice (at another position): a unique violation
    rows.verdicts.append(rows.verdicts[0]._replace(position=1))

    try:
        with pytest.raises(Exception, match="verdict_id"):
            await store.write("replay", [], rows)
    finally:
        await store.engine.dispose()
    assert await fetch(migrated_database, "SELECT id FROM journal") == []


PATHS = pytest.mark.parametrize("insert_below", [1000, 0], ids=["one-statement", "copy"])
TOPIC = "file:/logs/ünï.jsonl"


@PATHS
async def test_a_moved_partition_writes_nothing_and_says_where_it_is(
    migrated_database: str, insert_below: int
) -> None:
    store = PostgresStepStore(create_engine(migrated_database), insert_below=insert_below)
    try:
        first = awkward_rows()
        fence = [Fenced(TOPIC, 2**31 - 1, -1), Fenced("other", 0, -1)]
        assert (await store.write("replay", fence, first)).moved is None
        again = awkward_rows()
        again.journal = [r._replace(id=r.id + 10) for r in again.journal]
        stale = [Fenced("other", 0, 0), Fenced(TOPIC, 2**31 - 1, 7)]  # the second moved
        written = await store.write("replay", stale, again)
    finally:
        await store.engine.dispose()
    assert written.moved == Moved(TOPIC, 2**31 - 1, BIG)
    assert [r["id"] for r in await fetch(migrated_database, "SELECT id FROM journal")] == [
        1, 2, 3, 4, 5
    ]  # fmt: skip
    assert len(await fetch(migrated_database, "SELECT * FROM verdicts")) == 5


@PATHS
async def test_the_fence_waits_for_a_concurrent_write_and_sees_its_position(
    migrated_database: str, insert_below: int
) -> None:
    """The lock and the read are two statements of the fence function: a read with the
    snapshot of a statement begun before the lock wait would miss the other's commit."""
    store = PostgresStepStore(create_engine(migrated_database), insert_below=insert_below)
    other = await asyncpg.connect(migrated_database)
    try:
        holding = other.transaction()
        await holding.start()
        await other.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            position_lock_name("replay", "other", 0),
        )
        await other.execute(
            "INSERT INTO journal (id, source_topic, source_partition, source_offset, outcome, "
            "took_place, fingerprint, raw) VALUES (99, 'other', 0, 41, 'rejected', false, "
            "'\\x00', '')"
        )
        await other.execute("INSERT INTO consumer_positions VALUES ('replay', 'other', 0, 41, 99)")
        write = asyncio.create_task(store.write("replay", [Fenced("other", 0, -1)], awkward_rows()))
        await asyncio.sleep(0.3)
        assert not write.done(), "the fence waits for the position's lock"
        await holding.commit()
        written = await asyncio.wait_for(write, 10)
    finally:
        await other.close()
        await store.engine.dispose()
    assert written.moved == Moved("other", 0, 41)
    assert [r["id"] for r in await fetch(migrated_database, "SELECT id FROM journal")] == [99]
