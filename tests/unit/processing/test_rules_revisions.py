"""Rules revisions: every game is judged under the revision it started with, to its end.

Revision 1 is the only real one; these tests add a second (a judge that records what it was
asked and otherwise judges as revision 1) to see which judge each game gets, in memory, in the
processing step, and across a reload from the store.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType

import pytest

from referee.contracts.rejection import FileSource, KafkaSource
from referee.domain import revisions
from referee.domain.events import GameEvent
from referee.domain.judge import Judgement, judge
from referee.domain.revisions import (
    NEWEST,
    REVISIONS,
    RulesRevision,
    UnknownRevisionError,
    revision,
)
from referee.domain.state import GameState
from referee.processing.referee import Referee
from referee.processing.step import InputRecord, ProcessingStep
from referee.simulate import SimulationOptions, simulate
from tests.fakes import FakeStepStore

ROOT = Path(__file__).resolve().parents[3]
TOPIC = "game-events"


def test_revision_1_is_todays_judge_and_the_newest() -> None:
    assert revision(1).judge is judge
    assert NEWEST == max(REVISIONS) == 1


def test_an_unknown_revision_is_refused_clearly() -> None:
    with pytest.raises(UnknownRevisionError, match=r"rules revision 9 is not known.*revisions 1"):
        revision(9)
    with pytest.raises(UnknownRevisionError):
        Referee(rules_revision=9)
    with pytest.raises(UnknownRevisionError):
        Referee(pinned={"g": 9})
    with pytest.raises(UnknownRevisionError):
        Referee().pin({}, 0)


@pytest.fixture
def second() -> Iterator[list[str]]:
    """Registers a revision 2 that logs the type of every event it judges."""
    seen: list[str] = []

    def judge_2(game: GameState | None, event: GameEvent) -> Judgement:
        seen.append(type(event).__name__)
        return judge(game, event)

    original = revisions.REVISIONS
    revisions.REVISIONS = MappingProxyType({**original, 2: RulesRevision(2, judge_2, "test")})
    try:
        yield seen
    finally:
        revisions.REVISIONS = original


def lines(games: int, seed: int) -> list[tuple[str, bytes]]:
    options = SimulationOptions(games=games, seed=seed, concurrency=2, bad_rate=0, duplicate_rate=0)
    return list(simulate(options))


def test_a_game_keeps_the_revision_it_started_under(second: list[str]) -> None:
    log = lines(4, seed=5)
    ids = sorted({g for g, _ in log})
    first, rest = ids[0], ids[1:]
    referee = Referee(rules_revision=2, pinned=dict.fromkeys(rest, 1))
    for n, (_, line) in enumerate(log, 1):
        referee.process(line, FileSource("log", n))
        if n == 1:
            # the deployment changes its mind after the first game started
            referee.rules_revision = 1
    assert {g for g, led in referee.games.items() if led.rules_revision == 2} == {first}
    assert {led.rules_revision for g, led in referee.games.items() if g != first} == {1}
    events_of_first = sum(1 for g, _ in log if g == first)
    assert second[0] == "GameStarted"
    assert len(second) == events_of_first  # every event of that game, and no other


def test_the_revision_changes_no_byte_for_revision_1() -> None:
    """Revision 1 through the pinned path gives the bytes of the plain referee."""
    log = lines(30, seed=9)
    plain, pinned = Referee(), Referee(rules_revision=1, pinned={g: 1 for g, _ in log})
    for n, (_, line) in enumerate(log, 1):
        a = plain.process(line, FileSource("log", n))
        b = pinned.process(line, FileSource("log", n))
        assert a.verdicts == b.verdicts
        assert a.rejection == b.rejection


def records(log: list[tuple[str, bytes]]) -> list[InputRecord]:
    offsets = [0, 0]
    out = []
    for game_id, line in log:
        p = zlib.crc32(game_id.encode()) % 2
        out.append(InputRecord(line, TOPIC, p, offsets[p], KafkaSource(TOPIC, p, offsets[p]), None))
        offsets[p] += 1
    return out


async def test_the_step_records_each_games_revision_and_reloads_it(
    second: list[str],
) -> None:
    log = lines(4, seed=7)
    stream = records(log)
    half = len(stream) // 2
    store = FakeStepStore()
    step = ProcessingStep(store, "g", rules_revision=2)
    await step.process(stream[:half])
    started = {r.game_id for r in store.revisions}
    assert started, "some game started in the first half"
    assert {r.rules_revision for r in store.revisions} == {2}
    journal = {r.id: r for r in store.journal}
    for row in store.revisions:
        assert journal[row.journal_id].event_type == "GameStarted"
        assert journal[row.journal_id].game_id == row.game_id
        assert row.referee_version
    second.clear()
    # a new instance of the deployment, now on revision 1, takes the partitions over
    fresh = ProcessingStep(store, "g", rules_revision=1)
    await fresh.process(stream[half:])
    # every later event of a game started under revision 2 is judged by it, no other event
    later_of_started = sum(1 for g, _ in log[half:] if g in started)
    assert later_of_started > 0
    assert len(second) == later_of_started
    later = {r.game_id: r.rules_revision for r in store.revisions if r.game_id not in started}
    assert set(later.values()) <= {1}
    assert len(store.revisions) == len({r.game_id for r in store.revisions})


def _referee(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "referee", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=ROOT,
    )


def test_the_cli_refuses_an_unknown_revision() -> None:
    done = _referee("replay", "examples/tournament.jsonl", "--rules-revision", "7")
    assert done.returncode == 2
    assert "rules revision 7 is not known" in done.stderr
    done = _referee("explain", "examples/tournament.jsonl", "--rules-revision", "0")
    assert done.returncode == 2


def test_replay_under_revision_1_is_the_default(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert _referee("replay", "examples/edition2.jsonl", "--output", str(a)).returncode == 0
    done = _referee(
        "replay", "examples/edition2.jsonl", "--rules-revision", "1", "--output", str(b)
    )
    assert done.returncode == 0, done.stderr
    assert a.read_bytes() == b.read_bytes()


def test_the_setting_refuses_an_unknown_revision(monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.service.settings import SettingsError, load_settings

    monkeypatch.setenv("REFEREE_RULES_REVISION", "5")
    with pytest.raises(SettingsError, match="REFEREE_RULES_REVISION"):
        load_settings()
    monkeypatch.setenv("REFEREE_RULES_REVISION", "1")
    assert load_settings().rules_revision == 1


async def test_a_game_of_a_revision_this_release_lacks_is_never_judged_by_another() -> None:
    """After a rollback to a release without the revision a game was pinned to, that game's
    records are quarantined (internal_error, naming the revision: they take no place, and the
    backend can send them again to a release that has it); every other game goes on."""
    log = lines(4, seed=7)
    stream = records(log)
    half = len(stream) // 2
    store = FakeStepStore()
    original = revisions.REVISIONS
    revisions.REVISIONS = MappingProxyType({**original, 2: RulesRevision(2, judge, "newer")})
    try:
        await ProcessingStep(store, "g", rules_revision=2).process(stream[:half])
    finally:
        revisions.REVISIONS = original
    newer = {r.game_id for r in store.revisions}
    assert newer
    older = ProcessingStep(store, "g", rules_revision=1)
    await older.process(stream[half:])
    later = store.journal[half:]
    for row in later:
        if row.game_id in newer:
            assert row.outcome == "rejected"
            assert row.reason == "internal_error"
        else:
            assert row.reason != "internal_error"
    details = [d.body for d in store.dead_letters if "internal_error" in d.body]
    assert details
    assert all("rules revision 2 is not known to this referee" in d for d in details)


def test_explain_of_a_log_explains_under_the_revision_named(tmp_path: Path) -> None:
    """``referee explain LOG --rules-revision N`` folds with revision N's judge, as ``replay``
    does (the tests' revision 2, ``tests/revision2.py``: every foul a point dearer)."""
    verdicts = tmp_path / "verdicts.jsonl"
    wrapper = [sys.executable, "-m", "tests.revision2"]
    log = "examples/edition2.jsonl"
    replayed = subprocess.run(
        [*wrapper, "replay", log, "--rules-revision", "2", "--output", str(verdicts)],
        capture_output=True, text=True, check=False, cwd=ROOT,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    explained = subprocess.run(
        [*wrapper, "explain", log, "--rules-revision", "2", "--json"],
        capture_output=True, text=True, check=False, cwd=ROOT,
    )  # fmt: skip
    assert explained.returncode == 0, explained.stderr
    under_2 = [json.loads(line) for line in verdicts.read_text().splitlines()]
    assert [json.loads(line)["verdict"] for line in explained.stdout.splitlines()] == under_2
    fouls = [v for v in under_2 if v["type"] == "FoulRecorded"]
    assert fouls
    assert all(v["penalty"] >= 1 for v in fouls)
