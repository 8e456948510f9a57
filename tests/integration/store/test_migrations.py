"""The schema exists only through Alembic, and the models match what it creates."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.engine import Connection

from referee.store.database import create_engine, downgrade, migrate
from referee.store.schema import APPEND_ONLY_TABLES, include_object, metadata
from tests.integration.conftest import execute, fetch

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tournament.jsonl"
VIEWS = {"current_games", "standings", "player_fouls", "current_positions", "verdict_log"}


async def _tables(url: str) -> set[str]:
    rows = await fetch(
        url,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
    )
    return {r["table_name"] for r in rows}


async def test_upgrade_from_empty_to_head_then_down_to_base_and_up_again(
    empty_database: str,
) -> None:
    await asyncio.to_thread(migrate, empty_database)
    assert await _tables(empty_database) >= {*APPEND_ONLY_TABLES, *VIEWS, "alembic_version"}
    await asyncio.to_thread(downgrade, empty_database)
    assert await _tables(empty_database) == {"alembic_version"}
    await asyncio.to_thread(migrate, empty_database)
    assert await _tables(empty_database) >= {*APPEND_ONLY_TABLES, *VIEWS}


async def test_autogenerate_finds_no_difference_between_models_and_migrations(
    migrated_database: str,
) -> None:
    engine = create_engine(migrated_database)

    def diff(conn: Connection) -> list[object]:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "include_object": include_object}
        )
        return list(compare_metadata(context, metadata))

    try:
        async with engine.connect() as conn:
            differences = await conn.run_sync(diff)
    finally:
        await engine.dispose()
    assert differences == []


async def test_an_interrupted_0008_finishes_on_the_next_migrate(empty_database: str) -> None:
    """0008 builds its indexes CONCURRENTLY, outside the migration's transaction: cut off
    there, it leaves its columns and tables committed, the version at 0007 and an index
    missing or INVALID. The next `referee migrate` must finish it, not fail on the columns."""
    await asyncio.to_thread(migrate, empty_database, "0008")
    await execute(empty_database, "UPDATE alembic_version SET version_num = '0007'")
    await execute(
        empty_database,
        "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'verdicts_outbox'::regclass",
    )
    await execute(empty_database, "DROP INDEX dead_letters_legacy")
    await asyncio.to_thread(migrate, empty_database, "0008")
    rows = await fetch(
        empty_database,
        "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " WHERE c.relname IN ('verdicts_outbox', 'dead_letters_legacy')",
    )
    assert {(r["relname"], r["indisvalid"]) for r in rows} == {
        ("verdicts_outbox", True),
        ("dead_letters_legacy", True),
    }
    version = await fetch(empty_database, "SELECT version_num FROM alembic_version")
    assert [r["version_num"] for r in version] == ["0008"]
    await asyncio.to_thread(migrate, empty_database)  # and on to the newest revision


async def test_a_rollback_downgrades_0011_keeping_every_row_but_the_writers(
    migrated_database: str,
) -> None:
    """``referee migrate --down-to 0010`` (a rollback to 0.3.0) drops the journal's writers
    and nothing else; ``referee migrate`` brings them back as not recorded."""

    def referee(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "referee", *args], capture_output=True, text=True, check=False
        )

    url = migrated_database
    log = EXAMPLE
    done = await asyncio.to_thread(
        referee, "replay", str(log), "--database", url, "--output", "/dev/null"
    )
    assert done.returncode == 0, done.stderr
    before = await fetch(url, "SELECT count(*) AS n, count(referee_version) AS w FROM journal")
    assert before[0]["n"] == before[0]["w"] > 0

    unknown = await asyncio.to_thread(referee, "migrate", "--down-to", "0099", "--database", url)
    assert unknown.returncode == 2
    assert "no schema revision '0099'" in unknown.stderr
    down = await asyncio.to_thread(referee, "migrate", "--down-to", "0010", "--database", url)
    assert down.returncode == 0, down.stderr
    assert (await fetch(url, "SELECT version_num FROM alembic_version"))[0]["version_num"] == "0010"
    columns = await fetch(
        url,
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'journal'",
    )
    assert "referee_version" not in {c["column_name"] for c in columns}
    assert (await fetch(url, "SELECT count(*) AS n FROM journal"))[0]["n"] == before[0]["n"]
    again = await asyncio.to_thread(referee, "migrate", "--down-to", "0010", "--database", url)
    assert again.returncode == 2
    assert "nothing to downgrade" in again.stderr

    up = await asyncio.to_thread(referee, "migrate", "--database", url)
    assert up.returncode == 0, up.stderr
    audited = await asyncio.to_thread(referee, "audit", "--json", "--database", url)
    assert audited.returncode == 0, audited.stdout + audited.stderr
    assert json.loads(audited.stdout)["written_by"] == {"not recorded": before[0]["n"]}
