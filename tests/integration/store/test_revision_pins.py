"""A game pinned to a rules revision other than 1, on the real store: judged by it to its end.

The tests' revision 2 (``tests/revision2.py``: every foul costs one point more) is put in
place with ``monkeypatch`` in this process, and by ``python -m tests.revision2 CMD`` for the
referee's commands; revision 1 stays the default of this process's referee, so a game that
lost its pin would be judged by revision 1 and its fouls' verdicts would show it. The games
start under revision 2 through the live step (``ProcessingStep`` on ``PostgresStepStore``, as
``serve`` runs it); a fresh step, with nothing cached, judges their later events after
loading them from the store; ``referee audit --database`` re-derives them under revision 2
(and fails, naming the game, when its ``game_revisions`` row says 1); ``referee explain
--database`` explains them under revision 2.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from referee.domain import revisions
from referee.simulate import SimulationOptions, simulate
from referee.store.database import create_engine
from referee.usecases.replay import replay
from referee.usecases.replay_store import replay_into_store
from tests.integration.conftest import execute, fetch
from tests.revision2 import with_revision_2

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[3]
MAX_EVENT_BYTES = 65536


@dataclass(frozen=True)
class Halves:
    """A log of games that all start in its first half, and its two halves as files."""

    whole: Path
    first: Path
    second: Path
    games: int


@pytest.fixture(scope="module")
def halves(tmp_path_factory: pytest.TempPathFactory) -> Halves:
    directory = tmp_path_factory.mktemp("pins")
    games = 12
    options = SimulationOptions(
        games=games, seed=23, concurrency=games, foul_rate=0.1, bad_rate=0.02,
        duplicate_rate=0.02,
    )  # fmt: skip
    lines = [line + b"\n" for _, line in simulate(options)]
    half = len(lines) // 2
    paths = Halves(directory / "whole.jsonl", directory / "a.jsonl", directory / "b.jsonl", games)
    paths.whole.write_bytes(b"".join(lines))
    paths.first.write_bytes(b"".join(lines[:half]))
    paths.second.write_bytes(b"".join(lines[half:]))
    return paths


def in_memory(log: Path, rules_revision: int) -> list[str]:
    """The verdict lines of the in-memory replay of a log under one revision."""
    out = io.BytesIO()
    replay(log, out, None, workers=1, rules_revision=rules_revision)
    return out.getvalue().decode().splitlines()


def game_of(line: str) -> str:
    return str(json.loads(line)["game_id"])


async def into_store(log: Path, url: str, rules_revision: int | None = None) -> list[str]:
    """Referees a log into the store through a fresh processing step (nothing cached); new
    games get ``rules_revision`` (default: the step's, revision 1 here). Returns the verdict
    lines it wrote."""
    engine = create_engine(url)
    out = io.BytesIO()
    try:
        await replay_into_store(
            log,
            engine,
            out,
            batch_size=50,
            max_event_bytes=MAX_EVENT_BYTES,
            rules_revision=revisions.NEWEST if rules_revision is None else rules_revision,
        )
    finally:
        await engine.dispose()
    return out.getvalue().decode().splitlines()


def referee_2(*args: str) -> subprocess.CompletedProcess[str]:
    """``referee ARGS`` with the tests' revision 2 known (``python -m tests.revision2``)."""
    return _run("tests.revision2", *args)


def referee_1(*args: str) -> subprocess.CompletedProcess[str]:
    """``referee ARGS`` as released: revision 1 only."""
    return _run("referee", *args)


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")}
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        check=False,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )


@dataclass(frozen=True)
class Pinned:
    """A store whose games started under revision 2 and went on after a reload."""

    revision_2: list[str]
    """Every verdict of the log under revision 2 (in memory)."""
    revision_1: list[str]
    """The same under revision 1: what a lost pin would give."""
    after_reload: list[str]
    """The verdicts the fresh step wrote, judging games it loaded from the store."""
    game: str
    """A game whose verdicts after the reload differ between the two revisions."""


async def pinned_store(url: str, halves: Halves, monkeypatch: pytest.MonkeyPatch) -> Pinned:
    monkeypatch.setattr(revisions, "REVISIONS", with_revision_2())
    assert revisions.NEWEST == 1  # revision 2 is no default here: only the pin can choose it
    revision_2 = in_memory(halves.whole, 2)
    revision_1 = in_memory(halves.whole, 1)

    # the games start under revision 2, through the live step
    before_reload = await into_store(halves.first, url, rules_revision=2)
    pins = await fetch(url, "SELECT game_id, rules_revision FROM game_revisions")
    assert len(pins) == halves.games, "every game started in the first half"
    assert {r["rules_revision"] for r in pins} == {2}
    # a fresh step (its default revision 1) judges their later events, loading them
    after_reload = await into_store(halves.second, url)

    assert before_reload + after_reload == revision_2
    changed = [
        game_of(v2)
        for v1, v2 in zip(revision_1[len(before_reload) :], after_reload, strict=True)
        if v1 != v2
    ]
    assert changed, "revision 2 changes some verdict after the reload (else this proves nothing)"
    stored = [r["body"] for r in await fetch(url, "SELECT body FROM verdicts ORDER BY position")]
    assert stored == revision_2
    return Pinned(revision_2, revision_1, after_reload, changed[0])


async def test_a_game_pinned_to_revision_2_is_judged_by_it_after_a_reload_from_the_store(
    migrated_database: str, halves: Halves, monkeypatch: pytest.MonkeyPatch
) -> None:
    pinned = await pinned_store(migrated_database, halves, monkeypatch)
    went_on = {game_of(v) for v in pinned.after_reload}
    assert len(went_on) > 1, "several games went on after the reload"


async def test_audit_rederives_a_game_under_its_pinned_revision(
    migrated_database: str, halves: Halves, monkeypatch: pytest.MonkeyPatch
) -> None:
    pinned = await pinned_store(migrated_database, halves, monkeypatch)

    passed = await asyncio.to_thread(referee_2, "audit", "--database", migrated_database)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "audit passed" in passed.stdout
    assert f"games by rules revision: revision 2: {halves.games}\n" in passed.stdout
    # a referee without revision 2 refuses the store rather than judge it under another
    refused = await asyncio.to_thread(referee_1, "audit", "--database", migrated_database)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert "rules revision 2 is not known" in refused.stderr

    # when the game's row says revision 1 (a superuser behind the trigger's back, on purpose)
    await execute(
        migrated_database,
        "ALTER TABLE game_revisions DISABLE TRIGGER game_revisions_append_only",
    )
    await execute(
        migrated_database,
        "UPDATE game_revisions SET rules_revision = 1 WHERE game_id = $1",
        pinned.game,
    )
    await execute(
        migrated_database, "ALTER TABLE game_revisions ENABLE TRIGGER game_revisions_append_only"
    )
    failed = await asyncio.to_thread(referee_2, "audit", "--database", migrated_database)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "audit FAILED" in failed.stdout
    assert "revision 1: 1, revision 2: " in failed.stdout
    # the game is named, judged under the revision its row says, and its fouls cost less
    assert f"game {pinned.game!r} (rules revision 1), verdict #" in failed.stdout
    assert "penalty differs" in failed.stdout
    others = {game_of(v) for v in pinned.revision_2} - {pinned.game}
    assert not [line for line in failed.stdout.splitlines() if any(g in line for g in others)]


async def test_explain_from_the_store_explains_a_game_under_its_pinned_revision(
    migrated_database: str, halves: Halves, monkeypatch: pytest.MonkeyPatch
) -> None:
    pinned = await pinned_store(migrated_database, halves, monkeypatch)

    done = await asyncio.to_thread(
        referee_2, "explain", "--database", migrated_database, "--game", pinned.game, "--json"
    )

    assert done.returncode == 0, done.stderr
    explained = [json.loads(line) for line in done.stdout.splitlines()]
    mine = [json.loads(v) for v in pinned.revision_2 if game_of(v) == pinned.game]
    under_1 = [json.loads(v) for v in pinned.revision_1 if game_of(v) == pinned.game]
    assert [e["verdict"] for e in explained] == mine
    assert mine != under_1
    fouls = [e for e in explained if e["type"] == "FoulRecorded"]
    assert fouls
    # the evidence gives revision 2's penalty: one point more than the game's rules say
    assert all(e["evidence"]["penalty"]["points"] == e["verdict"]["penalty"] for e in fouls)
    assert all(e["verdict"]["penalty"] >= 1 for e in fouls)
