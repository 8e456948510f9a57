"""Upgrades with data: a store written by an earlier release, at each earlier schema revision,
is migrated by this release to its newest revision, then audits cleanly, and refereeing
resumes from the stored positions with nothing lost or judged twice.

For every schema revision before this release's newest, the last commit at that revision
(tests/releases.py) is built by the test from its commit, in a virtual environment of its own
(one build a session, shared with tests/reliability/test_upgrade.py), and writes the first half
of a log into an empty database exactly as that code did: ``referee replay LOG --database``,
which migrates to its own newest revision (every one of those commits has it, so no revision
needs another way to write). This release then runs ``referee migrate`` (the store must end at
the head that this release's migration scripts compute, whatever that head is), ``referee
audit``, and ``referee replay`` of the whole log into the same store: the log's stored
positions say where the earlier release stopped, and only the rest is judged. The store's
verdicts and dead letters must then be the in-memory replay's, each once, and the audit must
pass again. The live service resuming from the stored positions (``serve``) is
tests/reliability/test_upgrade.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from referee.store.database import known_revisions, newest_revision
from referee.usecases.audit import UNRECORDED_WRITER
from tests.integration.conftest import fetch
from tests.integration.kafka.checks import assert_same_verdicts
from tests.releases import BY_SCHEMA, EARLIER, ROOT, Builds, newest_schema, python_of, version_of

GAMES = ("--games", "60", "--seed", "11", "--concurrency", "20")
"""A small log (about 5,000 lines): every earlier release referees half of it."""
DIRTY = ("--bad-rate", "0.01", "--duplicate-rate", "0.01")
"""Bad lines (dead letters) and re-sent events (duplicates) in every log."""
UNPINNED = "0009"
"""The first schema revision that records the rules revision and the referee version that
started each game (game_revisions): before it, a game has no row there."""
WRITERS = "0011"
"""The first schema revision whose journal rows name the release that wrote them."""


def run(python: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``python -m referee ARGS`` with no ``REFEREE_*`` setting of the test's environment."""
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


def audit(url: str) -> dict[str, Any]:
    """This release's ``referee audit --json`` of the store; asserts it passed."""
    done = run(sys.executable, "audit", "--json", "--database", url)
    assert done.returncode == 0, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["passed"] is True
    assert report["differences"] == []
    return report


_LOGS: dict[tuple[str, ...], list[str]] = {}


def simulated(directory: Path, flags: tuple[str, ...]) -> list[str]:
    """The lines of this release's ``referee simulate`` (cached for the session)."""
    if flags not in _LOGS:
        made = run(sys.executable, "simulate", *GAMES, *DIRTY, *flags, cwd=directory)
        assert made.returncode == 0, made.stderr
        _LOGS[flags] = made.stdout.splitlines(keepends=True)
    return _LOGS[flags]


async def earlier_rows(url: str, last: int) -> dict[str, list[tuple[object, ...]]]:
    """What the earlier release wrote (journal rows up to ``last``), in the columns every
    revision has: the records, their outcomes and places, the verdicts and dead letters."""
    queries = {
        "journal": "SELECT id, source_topic, source_offset, game_id, seq, event_id, outcome, "
        "reason, took_place, fingerprint, raw FROM journal WHERE id <= $1 ORDER BY id",
        "verdicts": "SELECT position, verdict_id, journal_id, body FROM verdicts "
        "WHERE journal_id <= $1 ORDER BY position",
        "dead_letters": "SELECT position, journal_id, reason, body FROM dead_letters "
        "WHERE journal_id <= $1 ORDER BY position",
        "game_versions": "SELECT game_id, version, state::text AS state, journal_id "
        "FROM game_versions WHERE journal_id <= $1 ORDER BY game_id, version",
    }
    return {
        table: [tuple(r) for r in await fetch(url, query, last)] for table, query in queries.items()
    }


async def games_started(url: str, where: str, *args: object) -> set[str]:
    """The games whose GameStarted took place in the journal rows ``where`` says."""
    rows = await fetch(
        url,
        "SELECT game_id FROM journal WHERE event_type = 'GameStarted' AND took_place AND " + where,
        *args,
    )
    return {r["game_id"] for r in rows}


def git(*args: str) -> list[str]:
    done = subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_every_earlier_schema_revision_has_its_release() -> None:
    """Each revision but the newest has its release here, at that revision, and the commit
    named is the last at it (the parent of the commit that added the next migration): a
    new migration fails this until the last commit before it is added to tests/releases.py."""
    newest = newest_schema()
    assert newest == newest_revision()
    revisions = sorted(known_revisions())
    assert [r.schema for r in EARLIER] == revisions[:-1]
    for release, following in zip(EARLIER, revisions[1:], strict=True):
        files = git("ls-tree", "--name-only", release.commit, "migrations/versions/")
        heads = sorted(Path(name).name[:4] for name in files if name.endswith(".py"))
        assert heads[-1] == release.schema, release
        if release.last:
            (added,) = (ROOT / "migrations" / "versions").glob(f"{following}_*.py")
            parents = git(
                "log", "--diff-filter=A", "--format=%P", "--", f"migrations/versions/{added.name}"
            )
            assert release.commit in parents, f"{following} was not added on {release.commit}"


@pytest.mark.slow
@pytest.mark.parametrize("schema", sorted(BY_SCHEMA))
async def test_a_store_of_an_earlier_release_upgrades_audits_and_resumes(
    schema: str, empty_database: str, earlier_release: Builds, tmp_path: Path
) -> None:
    release = BY_SCHEMA[schema]
    tree = await asyncio.to_thread(earlier_release, release.commit)
    old = python_of(tree)
    url = empty_database
    newest = newest_schema()
    assert newest > schema

    lines = simulated(tmp_path, release.simulate)
    half = len(lines) // 2
    log = tmp_path / "games.jsonl"
    log.write_text("".join(lines[:half]))

    # given a store written by the earlier release, at its schema revision
    done = await asyncio.to_thread(
        run, old, "replay", str(log), "--database", url, "--output", "/dev/null", cwd=tree
    )
    assert done.returncode == 0, done.stderr
    at = await fetch(url, "SELECT version_num FROM alembic_version")
    assert [r["version_num"] for r in at] == [schema]
    before = await fetch(url, "SELECT count(*) AS n, max(id) AS last FROM journal")
    assert before[0]["n"] == half
    last_old = before[0]["last"]
    first = await games_started(url, "id <= $1", last_old)
    assert first
    # and what the earlier release rejects in that half, replayed in memory on the same path
    theirs_file = tmp_path / "theirs.jsonl"
    done = await asyncio.to_thread(
        run, old, "replay", str(log), "--output", "/dev/null", "--rejected", str(theirs_file),
        cwd=tree,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    theirs = theirs_file.read_text().splitlines()
    old_verdicts = (await fetch(url, "SELECT count(*) AS n FROM verdicts"))[0]["n"]
    old_dead = (await fetch(url, "SELECT count(*) AS n FROM dead_letters"))[0]["n"]
    assert old_verdicts > 0, "the earlier release wrote verdicts"
    assert old_dead > 0, "the earlier release wrote dead letters"
    assert old_dead == len(theirs)
    written = await earlier_rows(url, last_old)

    # when this release migrates it to its newest revision
    migrated = await asyncio.to_thread(run, sys.executable, "migrate", "--database", url)
    assert migrated.returncode == 0, migrated.stderr
    at = await fetch(url, "SELECT version_num FROM alembic_version")
    assert [r["version_num"] for r in at] == [newest]

    # then it audits cleanly, every game under the revision and referee that started it
    report = await asyncio.to_thread(audit, url)
    assert report["schema_revision"] == newest
    assert report["journal_rows"] == half
    old_writer = UNRECORDED_WRITER if schema < WRITERS else version_of(tree)
    assert report["written_by"] == {old_writer: half}
    assert report["verdicts_stored"] == report["verdicts_derived"] == old_verdicts
    assert report["dead_letters_stored"] == report["dead_letters_derived"] == old_dead
    assert set(report["rules_revisions"]) == {"1"}
    assert sum(report["started_by"].values()) == len(first)
    assert set(report["started_by"]) == {"before 0.2.0" if schema < UNPINNED else version_of(tree)}

    # and it referees the whole log into it: it resumes where the earlier release stopped
    log.write_text("".join(lines))
    resumed = await asyncio.to_thread(
        run, sys.executable, "replay", str(log), "--database", url, "--output", "/dev/null"
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed: {half} lines were already in the store" in resumed.stderr
    journal = await fetch(
        url,
        "SELECT count(*) AS n, count(DISTINCT (source_topic, source_offset)) AS d FROM journal",
    )
    assert journal[0]["n"] == journal[0]["d"] == len(lines)  # nothing twice, nothing skipped
    # and what the earlier release wrote is there as it wrote it, byte for byte
    assert await earlier_rows(url, last_old) == written
    report = await asyncio.to_thread(audit, url)
    assert report["journal_rows"] == len(lines)
    # the earlier release's rows are its own, this release wrote only the rest
    writers = Counter({old_writer: half})
    writers[version("referee")] += len(lines) - half  # one writer if both have one version
    assert report["written_by"] == dict(writers)

    # then the store holds exactly the verdicts and dead letters of the whole log, each once
    memory, rejected = tmp_path / "memory.jsonl", tmp_path / "rejected.jsonl"
    replayed = await asyncio.to_thread(
        run,
        sys.executable,
        "replay",
        str(log),
        "--output",
        str(memory),
        "--rejected",
        str(rejected),
    )
    assert replayed.returncode == 0, replayed.stderr
    stored = await fetch(url, "SELECT body FROM verdicts ORDER BY position")
    assert_same_verdicts([r["body"] for r in stored], memory.read_text().splitlines(), "stored")
    # the dead letters: the earlier release's of the first half, as its own replay of that
    # half rejects them (0001's referee read a file line without its trailing whitespace,
    # raw and journal alike, so its audit re-derives what it stored; later ones keep the
    # line's bytes), and this release's of the rest
    dead = await fetch(url, "SELECT body FROM dead_letters")
    ours = [
        body
        for body in rejected.read_text().splitlines()
        if json.loads(body)["source"]["line"] > half
    ]
    assert Counter(r["body"] for r in dead) == Counter(theirs + ours)
    # games started after the upgrade are pinned by this release; the earlier release's
    # games are pinned by it from 0009 on, and have no row before
    later = await games_started(url, "id > $1", last_old)
    assert later
    pinned = {
        r["game_id"]: (r["rules_revision"], r["referee_version"])
        for r in await fetch(url, "SELECT * FROM game_revisions")
    }
    expected = {game: (1, version("referee")) for game in later}
    if schema >= UNPINNED:
        expected |= {game: (1, version_of(tree)) for game in first}
    assert pinned == expected
