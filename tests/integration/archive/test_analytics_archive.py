"""The archive is the analysts' dataset: the recipe of docs/analytics.md
(examples/analytics/archive.sql) run as written by DuckDB on an archive that `referee archive`
wrote, its answers checked against the archive's own rows."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from referee.archive import TABLES, iter_rows, open_archive
from tests.integration.archive.seasons import live_season, referee

pytestmark = [pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[3]
RECIPE = ROOT / "examples" / "analytics" / "archive.sql"


async def test_duckdb_reads_the_archive_as_the_recipe_says(
    empty_database: str, tmp_path: Path
) -> None:
    season = await live_season(empty_database, tmp_path, slices=2)
    target = tmp_path / "archive"
    done = referee(
        "archive", "--database", empty_database, "--to", str(target),
        "--before", season.bounds[-1][1].isoformat(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    db = duckdb.connect()
    try:
        db.execute(RECIPE.read_text(encoding="utf-8").replace("'archive/", f"'{target}/"))
        by_day = db.execute("SELECT day, type, verdicts FROM verdicts_by_day").fetchall()
        won = db.execute("SELECT game_id, winner FROM games_won").fetchall()
        outcomes = db.execute("SELECT outcome, reason, records FROM outcomes").fetchall()
    finally:
        db.close()

    archive = open_archive(str(target))
    names = TABLES["verdicts"].names
    verdicts = [dict(zip(names, r, strict=True)) for r in iter_rows(archive, "verdicts")]
    assert verdicts, "the season archived verdicts"
    days = {f"{v['recorded_at']:%Y-%m-%d}" for v in verdicts}
    assert {str(d) for d, _, _ in by_day} == days
    assert Counter({t: n for _, t, n in by_day}) == Counter(v["type"] for v in verdicts)
    assert sorted(won) == sorted(
        (v["game_id"], json.loads(str(v["body"]))["winner"])
        for v in verdicts
        if v["type"] == "GameWon"
    )
    journal = TABLES["journal"].names
    heard = Counter(
        (r[journal.index("outcome")], r[journal.index("reason")])
        for r in iter_rows(archive, "journal")
    )
    assert {(o, r): n for o, r, n in outcomes} == dict(heard)
