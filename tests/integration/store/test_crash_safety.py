"""Killing the worker at any instant loses nothing and doubles nothing.

The worker is ``referee replay LOG --database URL`` in a subprocess, SIGKILLed at random
moments and restarted until it finishes; the store must then hold exactly the rows of a run
that was never interrupted, and the verdicts of a replay without any database.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import create_database, drop_database, fetch

KILLS = 20
GAMES = 120

JOURNAL = (
    "SELECT source_topic, source_partition, source_offset, game_id, seq, event_id, event_type, "
    "outcome, reason, took_place, fingerprint, raw FROM journal ORDER BY id"
)
PROJECTION = "SELECT game_id, last_seq, state::text FROM current_games ORDER BY game_id"
VERDICTS = "SELECT verdict_id, body FROM verdicts ORDER BY position"
DEAD = "SELECT key, reason, body FROM dead_letters ORDER BY position"
POSITIONS = 'SELECT group_id, topic, partition, "offset" FROM current_positions'


def _referee(*args: str) -> list[str]:
    return [sys.executable, "-m", "referee", *args]


def _worker(log: Path, url: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        _referee(
            "replay", str(log), "--database", url, "--batch-size", "150", "--output", os.devnull
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


async def _snapshot(url: str) -> dict[str, list[tuple[object, ...]]]:
    return {
        name: [tuple(r) for r in await fetch(url, query)]
        for name, query in (
            ("journal", JOURNAL),
            ("projection", PROJECTION),
            ("verdicts", VERDICTS),
            ("dead_letters", DEAD),
            ("positions", POSITIONS),
        )
    }


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("crash") / "games.jsonl"
    subprocess.run(
        _referee(
            "simulate",
            "--games",
            str(GAMES),
            "--seed",
            "11",
            "--bad-rate",
            "0.02",
            "--duplicate-rate",
            "0.02",
            "--output",
            str(path),
        ),
        check=True,
        capture_output=True,
    )
    return path


async def test_sigkill_at_random_moments_loses_and_doubles_nothing(
    admin_url: str, log: Path, tmp_path: Path
) -> None:
    calm = await create_database(admin_url)
    crashed = await create_database(admin_url)
    try:
        quiet = await asyncio.to_thread(
            subprocess.run,
            _referee("replay", str(log), "--database", calm, "--batch-size", "150"),
            capture_output=True,
            check=True,
        )
        rng = random.Random(2026)
        kills = 0
        finished = False
        # Migrate once so that every kill lands in refereeing, not in set-up.
        await asyncio.to_thread(
            subprocess.run,
            _referee("migrate", "--database", crashed),
            check=True,
            capture_output=True,
        )
        while not finished:
            worker = _worker(log, crashed)
            if kills < KILLS:
                await asyncio.sleep(rng.uniform(0.6, 2.0))
                if worker.poll() is None:
                    worker.send_signal(signal.SIGKILL)
                    await asyncio.to_thread(worker.wait)
                    kills += 1
                    continue
            _, err = await asyncio.to_thread(worker.communicate)
            assert worker.returncode == 0, err.decode()
            finished = kills >= KILLS
            if not finished:  # it ended before the kill: start over on a new store
                await drop_database(admin_url, crashed)
                crashed = await create_database(admin_url)
                await asyncio.to_thread(
                    subprocess.run,
                    _referee("migrate", "--database", crashed),
                    check=True,
                    capture_output=True,
                )
        assert kills >= KILLS
        want = await _snapshot(calm)
        have = await _snapshot(crashed)
        lines = await asyncio.to_thread(log.read_bytes)
        assert len(want["journal"]) == sum(1 for line in lines.splitlines() if line)
        for table in want:
            assert have[table] == want[table], f"{table} differs after {kills} kills"

        in_memory = tmp_path / "verdicts.jsonl"
        await asyncio.to_thread(
            subprocess.run,
            _referee("replay", str(log), "--output", str(in_memory)),
            check=True,
            capture_output=True,
        )
        stored = "".join(f"{body}\n" for _, body in have["verdicts"])
        assert stored == in_memory.read_text(encoding="utf-8")
        assert quiet.returncode == 0
    finally:
        await drop_database(admin_url, calm)
        await drop_database(admin_url, crashed)
