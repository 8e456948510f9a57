"""The season test of issue 35: a log replayed in time slices into partitions, the oldest
archived (to a directory and to the S3 server), the live store smaller by them, the games
that began in the archive finished live with the verdicts of an in-memory replay of the whole
log, and ``referee audit --archive`` passing, then failing on a tampered file."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import asyncpg
import pytest

from referee.archive import TABLES, iter_rows, open_archive
from referee.store.partitions import PARTITIONED
from tests.integration.archive.seasons import (
    in_memory_verdicts,
    live_season,
    referee,
    replay,
    segment_tables,
)
from tests.integration.conftest import _plain

pytestmark = [pytest.mark.postgres]


@pytest.fixture(params=["directory", "s3"])
def archive_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "directory":
        return str(tmp_path / "archive")
    url: str = request.getfixturevalue("s3_archive_url")
    return url


async def live_bytes(url: str) -> int:
    """The bytes of every partition of the five tables, indexes included."""
    conn = await asyncpg.connect(_plain(url))
    try:
        size: int = await conn.fetchval(
            "SELECT coalesce(sum(pg_total_relation_size(i.inhrelid)), 0) FROM pg_inherits i "
            "WHERE i.inhparent = ANY($1::regclass[])",
            list(PARTITIONED),
        )
        return size
    finally:
        await conn.close()


async def stored_verdicts(url: str, archive_url: str) -> dict[str, list[str]]:
    """Every verdict, archived and live, by game in outbox order."""
    names = TABLES["verdicts"].names
    at = [names.index(c) for c in ("position", "game_id", "body")]
    rows = [tuple(r[i] for i in at) for r in iter_rows(open_archive(archive_url), "verdicts")]
    conn = await asyncpg.connect(_plain(url))
    try:
        rows += [tuple(r) for r in await conn.fetch("SELECT position, game_id, body FROM verdicts")]
    finally:
        await conn.close()
    by_game: dict[str, list[str]] = defaultdict(list)
    for _, game, body in sorted(rows):
        by_game[str(game)].append(str(body))
    return dict(by_game)


async def test_a_season_archived_then_finished_live_audits_as_one_journal(
    empty_database: str, archive_url: str, tmp_path: Path
) -> None:
    url = empty_database
    season = await live_season(url, tmp_path)
    archived_segments = {f"p{lo:%Y%m%dt%H%M%S}" for lo, _ in season.bounds} | {"p_legacy"}
    assert archived_segments <= set(await segment_tables(url))
    size_before = await live_bytes(url)

    done = referee(
        "archive", "--database", url, "--to", archive_url,
        "--before", season.bounds[-1][1].isoformat(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"archived {len(archived_segments)} segment(s)" in done.stderr, done.stderr

    # the archived partitions are gone from PostgreSQL, attached or not; the store is smaller
    assert not archived_segments & set(await segment_tables(url))
    assert await live_bytes(url) < size_before

    # the last slice, live: games that began in the archive go on and finish in PostgreSQL
    done = replay(url, season.slices[-1])
    assert done.returncode == 0, done.stderr
    archive = open_archive(archive_url)
    journal = TABLES["journal"].names
    kind, game = journal.index("event_type"), journal.index("game_id")
    began_archived = {r[game] for r in iter_rows(archive, "journal") if r[kind] == "GameStarted"}
    stored = await stored_verdicts(url, archive_url)
    conn = await asyncpg.connect(_plain(url))
    try:
        won_live = {
            r["game_id"]
            for r in await conn.fetch("SELECT game_id FROM verdicts WHERE type = 'GameWon'")
        }
    finally:
        await conn.close()
    assert began_archived & won_live, "no game began in the archive and was won live"
    assert stored == in_memory_verdicts(season.log, tmp_path)

    done = referee("audit", "--database", url, "--archive", archive_url, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["passed"]
    assert report["archived_rows"] > 0
    assert report["games"] == len(stored)

    # an archived file altered by a byte: the audit names it and fails
    path = next(p for p in archive.list_files("journal") if p.endswith(".parquet"))
    archive.write_bytes(path, archive.read_bytes(path) + b"\0")
    done = referee("audit", "--database", url, "--archive", archive_url)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"altered: {path}" in done.stdout
