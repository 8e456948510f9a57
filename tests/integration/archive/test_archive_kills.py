"""``referee archive`` killed after every step (written, verified, detached, dropped), then run
again: nothing lost, nothing archived twice, every archived partition gone from PostgreSQL,
and ``referee audit --archive`` passing.

The kill is real: a process running the archive is ended with ``os._exit`` (no cleanup, no
flush, as SIGKILL would) at the moment the step named completes for the first segment
holding rows; a second process, ``referee archive``, then finishes the work.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import asyncpg
import pytest

from referee.archive import check_archive, open_archive, read_manifests
from referee.store.database import migrate, newest_revision
from tests.integration.archive.seasons import (
    live_season,
    referee,
    segment_tables,
    short_partitions,
    wait_until,
)
from tests.integration.conftest import _plain

pytestmark = [pytest.mark.postgres]

KILLED = 137

STOPPED_RUN = """
import asyncio, os, sys
from datetime import UTC, datetime
import asyncpg
from referee.archive import open_archive
from referee.usecases.archiver import archive_before

url, target, before, step, segment = sys.argv[1:]

def after(done, name):
    if done == step and name == segment:
        os._exit(137)

async def main():
    conn = await asyncpg.connect(url)
    await archive_before(
        conn, open_archive(target), datetime.fromisoformat(before), datetime.now(UTC), after=after
    )

asyncio.run(main())
"""


@pytest.mark.parametrize("step", ["written", "verified", "detached", "dropped"])
async def test_an_archive_killed_after_any_step_is_finished_by_the_next_run(
    empty_database: str, tmp_path: Path, step: str
) -> None:
    url = empty_database
    season = await live_season(url, tmp_path, slices=2)
    target = str(tmp_path / "archive")
    before = season.bounds[-1][1].isoformat()
    segment = f"p{season.bounds[-1][0]:%Y%m%dt%H%M%S}"
    stopped = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", STOPPED_RUN, _plain(url), target, before, step, segment],
        capture_output=True,
        text=True,
        check=False,
    )
    assert stopped.returncode == KILLED, stopped.stderr
    left = await segment_tables(url)
    if step in ("written", "verified"):
        assert segment in left, "killed before its detach: the partition is still there"
    elif step == "detached":
        assert segment in left, "killed between detach and drop: the detached tables remain"

    done = referee("archive", "--database", url, "--to", target, "--before", before)
    assert done.returncode == 0, done.stderr
    left = await segment_tables(url)
    archived = {f"p{lo:%Y%m%dt%H%M%S}" for lo, _ in season.bounds} | {"p_legacy"}
    assert not archived & set(left), left

    archive = open_archive(target)
    report = check_archive(archive)
    assert report.ok, [str(p) for p in report.problems]
    listed = [(e.table, e.segment) for m in read_manifests(archive) for e in m.files]
    assert len(listed) == len(set(listed)), "a partition archived twice"
    assert {s for _, s in listed} == archived

    done = referee("audit", "--database", url, "--archive", target, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    audit = json.loads(done.stdout)
    lines = season.slices[0].read_bytes().count(b"\n")
    assert audit["journal_rows"] == lines, "every record of the log, once"
    assert audit["archived_rows"] == lines


async def test_a_segment_an_open_transaction_could_still_write_is_left_alone(
    empty_database: str, tmp_path: Path
) -> None:
    url = empty_database
    await asyncio.to_thread(migrate, url, newest_revision())
    bounds = await short_partitions(url, 2)  # the newest segment is never archived
    lo, hi = bounds[1]
    segment = f"p{lo:%Y%m%dt%H%M%S}"
    target = str(tmp_path / "archive")
    before = (hi + timedelta(days=1)).isoformat()
    writer = await asyncpg.connect(_plain(url))
    try:
        # a transaction that begins inside the segment, as a batch whose rows take its start
        # as their recorded_at, and is still open once the segment has ended
        await wait_until(lo)
        await writer.execute("BEGIN")
        began = await writer.fetchval("SELECT now()")
        assert lo <= began < hi
        await wait_until(hi)
        done = referee("archive", "--database", url, "--to", target, "--before", before)
        assert done.returncode == 0, done.stderr
        assert f"segment {segment} waits: a transaction open since" in done.stderr
        assert segment in await segment_tables(url), "left in PostgreSQL"
        assert "p_legacy" not in await segment_tables(url), "the segments before it went"
    finally:
        await writer.execute("ROLLBACK")
        await writer.close()
    done = referee("archive", "--database", url, "--to", target, "--before", before)
    assert done.returncode == 0, done.stderr
    assert segment not in await segment_tables(url), "archived once the transaction ended"


async def test_a_second_archive_run_at_once_does_nothing(
    empty_database: str, tmp_path: Path
) -> None:
    url = empty_database
    season = await live_season(url, tmp_path, slices=2)
    before = season.bounds[-1][1].isoformat()
    target = str(tmp_path / "archive")
    holder = await asyncpg.connect(_plain(url))
    try:
        assert await holder.fetchval(
            "SELECT pg_try_advisory_lock(hashtextextended('referee archive', 0))"
        )
        done = referee("archive", "--database", url, "--to", target, "--before", before)
        assert done.returncode == 0, done.stderr
        assert "another referee archive runs on this database: nothing done" in done.stderr
        assert "p_legacy" in await segment_tables(url)
        assert not (tmp_path / "archive").exists(), "not one file written"
    finally:
        await holder.close()
    done = referee("archive", "--database", url, "--to", target, "--before", before)
    assert done.returncode == 0, done.stderr
    assert "p_legacy" not in await segment_tables(url)


async def test_the_archive_makes_the_live_partitions_what_it_carries_goes_to(
    empty_database: str, tmp_path: Path
) -> None:
    """Writers stopped longer than the partitions made ahead reach: the archive carries the
    newest states into a partition of now, which it makes itself."""
    url = empty_database
    season = await live_season(url, tmp_path, slices=3)
    conn = await asyncpg.connect(_plain(url))
    try:
        # the partitions the replay's writer made ahead, empty: as if their time had passed
        ahead = [
            r["relname"]
            for r in await conn.fetch(
                "SELECT c.relname::text AS relname FROM pg_inherits i "
                "JOIN pg_class c ON c.oid = i.inhrelid, "
                "LATERAL referee_partition_bounds(c.oid::regclass) b WHERE b.lower_bound >= $1",
                season.bounds[-1][1],
            )
        ]
        assert ahead, "the replay made partitions ahead"
        for name in ahead:
            await conn.execute(f"DROP TABLE {name}")
        done = referee(
            "archive", "--database", url, "--to", str(tmp_path / "archive"),
            "--before", season.bounds[-2][1].isoformat(),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        carried = await conn.fetchval(
            "SELECT count(*) FROM game_versions WHERE recorded_at >= $1", season.bounds[-1][1]
        )
        assert carried > 0, "states carried into a partition of now"
    finally:
        await conn.close()
