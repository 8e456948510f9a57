"""``referee explain --database``: the store's journal explained, read as ``audit`` reads it.

The same log explained from a file and from the store gives the same explanations, byte for
byte: the journal's records are judged by the same referee, and each verdict explained is the
stored one. A store that is not reachable or not migrated fails as the other store commands do.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[3]
EDITION2 = ROOT / "examples" / "edition2.jsonl"


def referee(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")}
    return subprocess.run(
        [sys.executable, "-m", "referee", *map(str, args)],
        capture_output=True,
        check=False,
        timeout=300,
        text=True,
        env=env,
    )


async def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(referee, *args)


async def test_the_store_explains_what_the_log_explains(migrated_database: str) -> None:
    stored = await run("replay", EDITION2, "--database", migrated_database, "--output", os.devnull)
    assert stored.returncode == 0, stored.stderr

    from_log = await run("explain", EDITION2, "--json")
    from_store = await run("explain", "--database", migrated_database, "--json")
    text_log = await run("explain", EDITION2, "--as", "spectator")
    text_store = await run("explain", "--database", migrated_database, "--as", "spectator")

    assert from_store.returncode == 0, from_store.stderr
    assert from_store.stdout == from_log.stdout
    assert from_store.stdout.count("\n") > 10
    assert text_store.stdout == text_log.stdout
    verdicts = await run("audit", "--database", migrated_database, "--json")
    assert json.loads(verdicts.stdout)["verdicts_stored"] == from_store.stdout.count("\n")


async def test_one_event_of_one_game_from_the_store(migrated_database: str) -> None:
    stored = await run("replay", EDITION2, "--database", migrated_database, "--output", os.devnull)
    assert stored.returncode == 0, stored.stderr
    first = json.loads((await run("explain", EDITION2, "--json")).stdout.splitlines()[0])
    game, seq = first["game_id"], str(first["cause_seq"])

    found = await run("explain", "--database", migrated_database, "--game", game, "--seq", seq,
                      "--json")  # fmt: skip
    missing = await run("explain", "--database", migrated_database, "--game", "nowhere")

    assert json.loads(found.stdout.splitlines()[0]) == first
    assert missing.returncode == 2
    assert "no game 'nowhere' in" in missing.stderr


async def test_a_store_without_the_schema_is_exit_3(empty_database: str) -> None:
    done = await run("explain", "--database", empty_database)

    assert done.returncode == 3, done.stderr
    assert "referee migrate" in done.stderr
    assert len(done.stderr.splitlines()) == 1
