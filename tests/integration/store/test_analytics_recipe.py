"""The analysts' recipe of docs/analytics.md, run as written: the verdict log exported from
PostgreSQL by the read-only role, loaded into DuckDB, written to Parquet and read back."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import asyncpg
import duckdb
from sqlalchemy.engine import make_url

from tests.integration.conftest import _plain, execute, fetch

ROOT = Path(__file__).resolve().parents[3]
RECIPE = ROOT / "examples" / "analytics" / "verdicts_to_parquet.sql"
EXAMPLE = ROOT / "examples" / "tournament.jsonl"


async def test_the_verdict_log_goes_from_postgresql_through_duckdb_to_parquet(
    migrated_database: str, tmp_path: Path
) -> None:
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "referee", "replay", str(EXAMPLE), "--database", migrated_database],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    analyst = f"analyst_{uuid.uuid4().hex[:8]}"
    await execute(
        migrated_database, f"CREATE ROLE {analyst} LOGIN PASSWORD 'pw' IN ROLE referee_reader"
    )
    url = make_url(migrated_database).set(username=analyst, password="pw")
    try:
        # Step 1 of the recipe: \copy (SELECT body FROM verdicts ORDER BY position) TO ...
        conn = await asyncpg.connect(_plain(url.render_as_string(hide_password=False)))
        try:
            await conn.copy_from_query(
                "SELECT body FROM verdicts ORDER BY position",
                output=str(tmp_path / "verdicts.jsonl"),
                format="text",
            )
        finally:
            await conn.close()
    finally:
        await execute(migrated_database, f"DROP OWNED BY {analyst}")
        await execute(migrated_database, f"DROP ROLE {analyst}")

    # Step 2: the recipe's SQL, run where the export is.
    db = duckdb.connect(str(tmp_path / "analytics.duckdb"))
    try:
        # the recipe names its files relative to where it runs
        script = RECIPE.read_text(encoding="utf-8").replace("'verdicts.", f"'{tmp_path}/verdicts.")
        db.execute(script)
        parquet = db.execute(
            f"SELECT type, count(*) FROM read_parquet('{tmp_path}/verdicts.parquet') GROUP BY 1"
        ).fetchall()
        awards = db.execute(
            f"SELECT verdict_id::VARCHAR, awards FROM read_parquet('{tmp_path}/verdicts.parquet')"
            " WHERE type = 'RoundScored' ORDER BY verdict_id LIMIT 1"
        ).fetchone()
    finally:
        db.close()

    stored = [
        json.loads(r["body"]) for r in await fetch(migrated_database, "SELECT body FROM verdicts")
    ]
    assert dict(parquet) == Counter(v["type"] for v in stored)
    assert sum(count for _, count in parquet) == 71
    assert awards is not None
    original = next(v for v in stored if v["verdict_id"] == awards[0])
    assert dict(awards[1]) == original["awards"], "maps survive as maps"
