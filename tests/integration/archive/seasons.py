"""A store that lived a few seasons, made quickly: short time partitions by hand, a simulated
log replayed into them slice by slice (``referee replay --database``, resuming), and what the
archive tests check afterwards.

Partitions shorter than a minute cannot be asked of ``referee_create_partitions``; the tests
create the first few themselves, a few seconds long each, as the table's owner would, and the
referee's own partition maker makes the regular ones after them.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg

from referee.store.database import migrate, newest_revision
from referee.store.partitions import PARTITIONED
from tests.integration.conftest import _plain

SLICE_SECONDS = 4.0
"""How long each hand-made partition is: long enough for one slice's replay to fit."""


@dataclass(frozen=True)
class Season:
    """A store whose journal lies in slices of a log, each in a partition of its own."""

    url: str
    log: Path
    slices: list[Path]
    bounds: list[tuple[datetime, datetime]]
    """The hand-made partitions, oldest first (the first a gap of under a second, empty)."""


def referee(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs the referee's CLI; returns what it did (not checked)."""
    return subprocess.run(
        [sys.executable, "-m", "referee", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "REFEREE_PARTITION_INTERVAL": "1m", **(env or {})},
        check=False,
    )


def simulate(path: Path, games: int = 60, seed: int = 35) -> Path:
    done = referee(
        "simulate", "--games", str(games), "--seed", str(seed), "--concurrency", str(games),
        "--duplicate-rate", "0.03", "--bad-rate", "0.01", "--output", str(path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return path


def split(log: Path, parts: int) -> list[Path]:
    """The log's first 1/parts, 2/parts, ... (each a prefix: a replay resumes after the last)."""
    lines = log.read_bytes().splitlines(keepends=True)
    prefixes = []
    for i in range(1, parts + 1):
        prefix = log.with_suffix(f".{i}.jsonl")
        prefix.write_bytes(b"".join(lines[: len(lines) * i // parts]))
        prefixes.append(prefix)
    return prefixes


async def short_partitions(
    url: str, count: int, lead: float = 1.0
) -> list[tuple[datetime, datetime]]:
    """Makes, for each of the five tables, a partition from the end of the legacy one to
    ``lead`` seconds from now (a whole second), then ``count`` of SLICE_SECONDS; returns the
    bounds of all of them."""
    conn = await asyncpg.connect(_plain(url))
    try:
        start: datetime = await conn.fetchval(
            "SELECT upper_bound FROM referee_partition_bounds('journal_p_legacy')"
        )
        now: datetime = await conn.fetchval("SELECT clock_timestamp()")
        first = now.replace(microsecond=0) + timedelta(seconds=round(lead))
        bounds = [(start, first)]
        for i in range(count):
            lo = first + timedelta(seconds=SLICE_SECONDS * i)
            bounds.append((lo, lo + timedelta(seconds=SLICE_SECONDS)))
        for lo, hi in bounds:
            for table in PARTITIONED:
                name = f"{table}_p{lo.astimezone(UTC):%Y%m%dt%H%M%S}"
                await conn.execute(
                    f"CREATE TABLE {name} PARTITION OF {table} "
                    f"FOR VALUES FROM ('{lo.isoformat()}') TO ('{hi.isoformat()}')"
                )
        return bounds
    finally:
        await conn.close()


async def wait_until(moment: datetime) -> None:
    """Sleeps until the database's clock (this machine's) is past ``moment``."""
    delay = (moment - datetime.now(moment.tzinfo)).total_seconds()
    await asyncio.sleep(max(delay, 0.0) + 0.1)


async def live_season(url: str, workdir: Path, slices: int = 3) -> Season:
    """Migrates ``url``, makes ``slices`` short partitions and replays each slice of a
    simulated log in its own (the last slice is left for the test to replay)."""
    # the newest revision by its name: no partitions made, the test makes them
    await asyncio.to_thread(migrate, url, newest_revision())
    log = simulate(workdir / "season.jsonl")
    prefixes = split(log, slices)
    bounds = await short_partitions(url, slices - 1)
    for prefix, (lo, _) in zip(prefixes[:-1], bounds[1:], strict=True):
        await wait_until(lo)
        started = time.monotonic()
        done = await asyncio.to_thread(replay, url, prefix)
        assert done.returncode == 0, done.stderr
        assert time.monotonic() - started < SLICE_SECONDS, "a slice outgrew its partition"
    await wait_until(bounds[-1][1])
    return Season(url, log, prefixes, bounds)


def replay(url: str, log: Path) -> subprocess.CompletedProcess[str]:
    """``referee replay LOG --database URL --source-name season``: resumes where it stopped."""
    return referee(
        "replay", str(log), "--database", url, "--source-name", "season", "--output", os.devnull
    )


def in_memory_verdicts(log: Path, workdir: Path) -> dict[str, list[str]]:
    """Every verdict of ``referee replay LOG`` (no store), by game, in order."""
    out = workdir / "in-memory.jsonl"
    done = referee("replay", str(log), "--output", str(out), "--workers", "1")
    assert done.returncode == 0, done.stderr
    by_game: dict[str, list[str]] = defaultdict(list)
    for line in out.read_text().splitlines():
        by_game[json.loads(line)["game_id"]].append(line)
    return dict(by_game)


async def segment_tables(url: str) -> dict[str, set[str]]:
    """The segments of the five tables in the database (attached or not), by segment name."""
    conn = await asyncpg.connect(_plain(url))
    try:
        rows = await conn.fetch(
            "SELECT relname::text FROM pg_class WHERE relkind IN ('r', 'p') "
            "AND relname::text ~ '_p(_legacy|[0-9]{8}t[0-9]{6})$'"
        )
    finally:
        await conn.close()
    found: dict[str, set[str]] = defaultdict(set)
    for (name,) in rows:
        table, _, segment = name.rpartition("_p")
        found["p" + segment].add(table)
    return dict(found)
