"""Upgrades with data: a store written by an earlier release, at its schema revision, is
migrated by this release and then audits cleanly, and refereeing resumes from the stored
positions with nothing lost or judged twice.

Each earlier release is built by the test from its commit, in a virtual environment of its
own (as tests/reliability/test_upgrade.py builds release 0.1.0), and writes the first half of
a log into an empty database exactly as that code did (`referee replay LOG --database`,
which migrates to its own newest revision). This release then runs `referee migrate`,
`referee audit`, and `referee replay` of the whole log into the same store: the log's stored
positions say where the earlier release stopped, and only the rest is judged. The store's
verdicts must then be the in-memory replay's, each once.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.integration.conftest import fetch

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]

RELEASES = {
    # the last commit at schema revision 0002: edition 1's referee (the issue's "edition-1
    # store written at revision 0002"); the rows of 0003's widened columns are written here
    "0002": ("8eef4f5898b45f2070151ec1457af1ddd81b289b", ("--rules", "edition1")),
    # release 0.1.0, at 0007 (the state as text), before the outbox per partition (0008)
    "0007": ("d45172308a390cd4adf94af2e8eeac77eab1b903", ("--bad-rate", "0.01")),
}


def build(commit: str, tree: Path) -> Path:
    """The tree of ``commit`` with its locked environment in its own ``.venv``."""
    tree.mkdir(parents=True, exist_ok=True)
    archive = tree / "source.tar"
    with archive.open("wb") as out:
        subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", commit], check=True, stdout=out
        )
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    }
    subprocess.run(["uv", "sync", "--frozen", "--quiet", "--no-dev"], cwd=tree, env=env, check=True)
    return tree


def run(python: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [python, "-m", "referee", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=env,
    )


@pytest.mark.parametrize("schema", sorted(RELEASES))
async def test_a_store_of_an_earlier_release_upgrades_audits_and_resumes(
    schema: str, empty_database: str, tmp_path: Path
) -> None:
    commit, extra = RELEASES[schema]
    tree = await asyncio.to_thread(build, commit, tmp_path / "release")
    old = str(tree / ".venv" / "bin" / "python")
    url = empty_database

    games = ("--games", "150", "--seed", "11", "--concurrency", "30")
    made = run(sys.executable, "simulate", *games, *extra, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    lines = made.stdout.splitlines(keepends=True)
    log = tmp_path / "games.jsonl"
    log.write_text("".join(lines[: len(lines) // 2]))

    # given a store written by the earlier release, at its schema revision
    done = await asyncio.to_thread(
        run, old, "replay", str(log), "--database", url, "--output", "/dev/null", cwd=tree
    )
    assert done.returncode == 0, done.stderr
    version = await fetch(url, "SELECT version_num FROM alembic_version")
    assert [r["version_num"] for r in version] == [schema]
    before = await fetch(url, "SELECT count(*) AS n FROM journal")
    assert before[0]["n"] == len(lines) // 2

    # when this release migrates it and audits it
    migrated = await asyncio.to_thread(run, sys.executable, "migrate", "--database", url)
    assert migrated.returncode == 0, migrated.stderr
    audited = await asyncio.to_thread(run, sys.executable, "audit", "--database", url)
    assert audited.returncode == 0, audited.stdout + audited.stderr
    assert "audit passed" in audited.stdout
    assert "games by rules revision: revision 1: " in audited.stdout
    assert "before 0.2.0: " in audited.stdout

    # and referees the whole log into it: it resumes where the earlier release stopped
    log.write_text("".join(lines))
    resumed = await asyncio.to_thread(
        run, sys.executable, "replay", str(log), "--database", url, "--output", "/dev/null"
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed: {len(lines) // 2} lines were already in the store" in resumed.stderr
    journal = await fetch(url, "SELECT count(*) AS n FROM journal")
    assert journal[0]["n"] == len(lines)  # nothing judged twice, nothing skipped
    audited = await asyncio.to_thread(run, sys.executable, "audit", "--database", url)
    assert audited.returncode == 0, audited.stdout + audited.stderr

    # then the store holds exactly the verdicts of the whole log, each once
    memory = tmp_path / "memory.jsonl"
    replayed = run(sys.executable, "replay", str(log), "--output", str(memory))
    assert replayed.returncode == 0, replayed.stderr
    stored = await fetch(url, "SELECT body FROM verdicts ORDER BY position")
    assert sorted(r["body"] for r in stored) == sorted(memory.read_text().splitlines())
    # games started after the upgrade are pinned; the earlier release's are not (revision 1)
    later = {
        json.loads(line)["game_id"]
        for line in lines[len(lines) // 2 :]
        if '"GameStarted"' in line and '"seq":1,' in line
    }
    pinned = await fetch(url, "SELECT game_id, rules_revision FROM game_revisions")
    assert later
    assert {r["game_id"] for r in pinned} == later
    assert {r["rules_revision"] for r in pinned} == {1}
