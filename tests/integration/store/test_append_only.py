"""No UPDATE, DELETE or TRUNCATE ever touches the store: the database refuses them."""

from __future__ import annotations

import uuid

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from referee.store.schema import APP_ROLE, APPEND_ONLY_TABLES
from tests.integration.conftest import execute, fetch

ROW = (
    "INSERT INTO journal (source_topic, source_partition, source_offset, outcome, took_place, "
    "fingerprint, raw) VALUES ('t', 0, 1, 'rejected', false, '\\x00', '\\x7b')"
)


@pytest.mark.parametrize("table", APPEND_ONLY_TABLES)
async def test_update_and_delete_fail_even_for_a_superuser(
    migrated_database: str, table: str
) -> None:
    await execute(migrated_database, ROW)
    await execute(
        migrated_database,
        "INSERT INTO game_versions VALUES ('g', 1, '{}', 1, now());"
        "INSERT INTO verdicts (verdict_id, game_id, type, cause_seq, journal_id, body) "
        "VALUES ('v', 'g', 'GameWon', 1, 1, '{}');"
        "INSERT INTO dead_letters (journal_id, reason, body) VALUES (1, 'too_large', '{}');"
        "INSERT INTO consumer_positions VALUES ('grp', 't', 0, 1, 1, now());"
        "INSERT INTO relay_checkpoints VALUES ('verdicts', 1, now());"
        "INSERT INTO outbox_checkpoints VALUES ('verdicts', 't', 0, 1, now());"
        "INSERT INTO input_partitions VALUES ('grp', 't', 4, now());"
        "INSERT INTO game_revisions VALUES ('g', 1, '0.2.0', 1, now());"
        "INSERT INTO carried_prints VALUES ('g', 1, 'e', '\\x00', 1, now());"
        "INSERT INTO partition_owners VALUES ('grp', 't', 0, 1, 1, 'a', 'x', now());"
        "INSERT INTO withheld_rows VALUES ('verdicts', 't', 0, 1, 1, 'too large', now());"
        "INSERT INTO input_gaps VALUES ('grp', 't', 0, 1, 5, now())",
    )
    column = {
        "consumer_positions": '"offset"',
        "game_versions": "version",
        "relay_checkpoints": "position",
        "outbox_checkpoints": "position",
        "input_partitions": "partitions",
        "partition_owners": "epoch",
        "withheld_rows": "position",
        "input_gaps": "next_offset",
    }.get(table, "recorded_at")
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only"):
        await execute(migrated_database, f"UPDATE {table} SET {column} = {column}")
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only"):
        await execute(migrated_database, f"DELETE FROM {table}")
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only"):
        await execute(migrated_database, f"TRUNCATE {table}")
    rows = await fetch(migrated_database, f"SELECT count(*) AS n FROM {table}")
    assert rows[0]["n"] == 1


async def test_the_application_role_may_only_select_and_insert(migrated_database: str) -> None:
    user = f"referee_app_login_{uuid.uuid4().hex[:8]}"
    await execute(migrated_database, f"CREATE ROLE {user} LOGIN PASSWORD 'pw' IN ROLE {APP_ROLE}")
    app_url = (
        make_url(migrated_database)
        .set(username=user, password="pw")
        .render_as_string(hide_password=False)
    )
    try:
        await execute(app_url, ROW)
        rows = await fetch(app_url, "SELECT count(*) AS n FROM journal")
        assert rows[0]["n"] == 1
        await execute(app_url, "SELECT * FROM current_games")
        await execute(app_url, "SELECT version_num FROM alembic_version")  # serve checks it
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await execute(app_url, "UPDATE journal SET outcome = 'applied'")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await execute(app_url, "DELETE FROM journal")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await execute(app_url, "DROP TABLE journal")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await execute(app_url, "ALTER TABLE journal DISABLE TRIGGER journal_append_only")
    finally:
        await execute(migrated_database, f"DROP OWNED BY {user}")
        await execute(migrated_database, f"DROP ROLE {user}")


async def test_the_reader_role_may_read_everything_and_write_nothing(
    migrated_database: str,
) -> None:
    user = f"analyst_{uuid.uuid4().hex[:8]}"
    await execute(migrated_database, ROW)
    await execute(
        migrated_database, f"CREATE ROLE {user} LOGIN PASSWORD 'pw' IN ROLE referee_reader"
    )
    reader_url = (
        make_url(migrated_database)
        .set(username=user, password="pw")
        .render_as_string(hide_password=False)
    )
    try:
        for relation in (
            "journal",
            "game_versions",
            "verdicts",
            "dead_letters",
            "consumer_positions",
            "relay_checkpoints",
            "current_games",
            "standings",
            "player_fouls",
            "current_positions",
            "verdict_log",
        ):
            await fetch(reader_url, f"SELECT * FROM {relation} LIMIT 1")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await execute(reader_url, ROW)
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await execute(reader_url, "CREATE TABLE mine (x int)")
    finally:
        await execute(migrated_database, f"DROP OWNED BY {user}")
        await execute(migrated_database, f"DROP ROLE {user}")
