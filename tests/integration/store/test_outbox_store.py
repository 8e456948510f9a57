"""The outboxes per input partition on a real PostgreSQL: no lock shared by the partitions'
writers, each partition's rows read in position order (those of earlier releases through
their journal rows), checkpoints, the recorded partition count and the takeover's steps."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from referee.processing.rows import (
    DeadLetterRow,
    Fenced,
    JournalRow,
    PositionRow,
    StepRows,
    VerdictRow,
)
from referee.store.database import create_engine
from referee.store.locks import position_lock_name
from referee.store.outbox_store import RETIRED, PostgresOutboxStore
from referee.store.step_store import PostgresStepStore

pytestmark = pytest.mark.postgres

TOPIC = "events"


def batch(partition: int, offset: int, journal_id: int, position: int) -> StepRows:
    """One record of a partition with a verdict and a dead letter at ``position``."""
    rows = StepRows()
    rows.journal.append(
        JournalRow(
            journal_id, TOPIC, partition, offset, f"g{partition}", offset + 1, None, "Passed",
            "fouled", None, True, b"f" * 16, b"{}", 65536, "0.4.0",
        )
    )  # fmt: skip
    rows.verdicts.append(
        VerdictRow(
            position, f"v-{journal_id}", f"g{partition}", "FoulRecorded", offset + 1,
            journal_id, f'{{"n":{journal_id}}}', TOPIC, partition,
        )
    )  # fmt: skip
    rows.dead_letters.append(
        DeadLetterRow(position, journal_id, b"k", "seq_gap", "{}", TOPIC, partition)
    )
    rows.positions.append(PositionRow("g", TOPIC, partition, offset, journal_id))
    return rows


@pytest.mark.parametrize("insert_below", [1000, 0], ids=["one-statement", "copy"])
async def test_a_partitions_write_never_waits_for_another_partitions(
    migrated_database: str, insert_below: int
) -> None:
    """Partition 0's fence lock held by an open transaction: partition 1's write, verdicts and
    dead letters included, commits meanwhile (releases up to 0.1 queued every writer with
    outbox rows behind one lock); partition 0's waits."""
    store = PostgresStepStore(create_engine(migrated_database), insert_below=insert_below)
    other = await asyncpg.connect(migrated_database)
    try:
        holding = other.transaction()
        await holding.start()
        await other.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            position_lock_name("g", TOPIC, 0),
        )
        waiting = asyncio.create_task(store.write("g", [Fenced(TOPIC, 0, -1)], batch(0, 0, 1, 1)))
        written = await asyncio.wait_for(
            store.write("g", [Fenced(TOPIC, 1, -1)], batch(1, 0, 2, 2)), 5
        )
        assert written.moved is None
        await asyncio.sleep(0.2)
        assert not waiting.done(), "partition 0's write waits for its own lock only"
        await holding.rollback()
        assert (await asyncio.wait_for(waiting, 5)).moved is None
    finally:
        await other.close()
        await store.engine.dispose()


async def test_a_partitions_rows_are_read_in_position_order_legacy_rows_included(
    migrated_database: str,
) -> None:
    engine = create_engine(migrated_database)
    conn = await asyncpg.connect(migrated_database)
    try:
        writer = PostgresStepStore(engine)
        await writer.write("g", [], batch(0, 0, 10, 10))
        await writer.write("g", [], batch(1, 0, 11, 11))
        # a row of a release before revision 0008: no partition, its journal row says which
        await conn.execute(
            "INSERT INTO journal (id, source_topic, source_partition, source_offset, outcome, "
            "took_place, fingerprint, raw) VALUES (5, $1, 0, 7, 'fouled', false, '\\x00', '')",
            TOPIC,
        )
        await conn.execute(
            "INSERT INTO verdicts (position, verdict_id, game_id, type, cause_seq, journal_id,"
            " body) VALUES (12, 'old', 'g0', 'FoulRecorded', 1, 5, '{}')"
        )
        await writer.write("g", [], batch(0, 1, 13, 13))
        store = PostgresOutboxStore(engine)
        assert [r.position for r in await store.rows_after("verdicts", TOPIC, 0, 0, 10)] == [
            10, 12, 13
        ]  # fmt: skip
        assert [r.position for r in await store.rows_after("verdicts", TOPIC, 0, 10, 1)] == [12]
        assert [r.position for r in await store.rows_after("verdicts", TOPIC, 1, 0, 10)] == [11]
        [dead] = await store.rows_after("dead_letters", TOPIC, 1, 0, 10)
        assert (dead.position, dead.key, dead.body) == (11, b"k", b"{}")
        assert await store.backlog(TOPIC, 0, {"verdicts": 10, "dead_letters": 0}) == 4
        assert await store.stored_position("g", TOPIC, 0) == 1
        assert await store.stored_position("g", TOPIC, 5) == -1
    finally:
        await conn.close()
        await engine.dispose()


async def test_checkpoints_count_the_takeovers_for_every_partition(migrated_database: str) -> None:
    engine = create_engine(migrated_database)
    try:
        store = PostgresOutboxStore(engine)
        assert await store.checkpoint("verdicts", TOPIC, 3) == 0
        await store.save_checkpoints(TOPIC, 3, {"verdicts": 40, "dead_letters": 2})
        assert await store.checkpoint("verdicts", TOPIC, 3) == 40
        assert await store.checkpoint("verdicts", TOPIC, 4) == 0
        async with store.takeover() as takeover:
            assert not await takeover.done(TOPIC)
            await takeover.record(TOPIC, {"verdicts": 55, "dead_letters": 1})
            assert await takeover.done(TOPIC)
        assert await store.checkpoint("verdicts", TOPIC, 3) == 55
        assert await store.checkpoint("dead_letters", TOPIC, 3) == 2
    finally:
        await engine.dispose()


async def test_retiring_the_global_relay_leaves_it_nothing_to_publish(
    migrated_database: str,
) -> None:
    """The global relay of earlier releases resumes from max(position) of relay_checkpoints:
    after the takeover that is past every outbox row, and what it had reached is still known."""
    engine = create_engine(migrated_database)
    conn = await asyncpg.connect(migrated_database)
    try:
        await conn.execute(
            "INSERT INTO relay_checkpoints (outbox, position) VALUES ('verdicts', 17)"
        )
        async with PostgresOutboxStore(engine).takeover() as takeover:
            assert await takeover.retire_relay() == {"verdicts": 17, "dead_letters": 0}
            assert await takeover.retire_relay() == {"verdicts": 17, "dead_letters": 0}
        resumes = await conn.fetchval(
            "SELECT max(position) FROM relay_checkpoints WHERE outbox = 'verdicts'"
        )
        assert resumes == RETIRED
    finally:
        await conn.close()
        await engine.dispose()


async def test_the_input_partition_count_is_recorded_once_and_read_back(
    migrated_database: str,
) -> None:
    engine = create_engine(migrated_database)
    try:
        store = PostgresOutboxStore(engine)
        assert await store.input_partitions("g", TOPIC) is None
        await store.record_input_partitions("g", TOPIC, 16)
        await store.record_input_partitions("g", TOPIC, 16)
        assert await store.input_partitions("g", TOPIC) == 16
        await store.record_input_partitions("g", TOPIC, 32)  # accepted after a drain
        assert await store.input_partitions("g", TOPIC) == 32
        assert await store.input_partitions("other", TOPIC) is None
    finally:
        await engine.dispose()
