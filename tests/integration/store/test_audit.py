"""``referee audit`` passes on an honest store and catches a forged or altered verdict."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import execute, fetch

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "tournament.jsonl"
EDITION2 = ROOT / "examples" / "edition2.jsonl"


def _referee(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "referee", *args], capture_output=True, text=True, check=False
    )


async def _store_example(url: str, log: Path = EXAMPLE) -> None:
    done = await asyncio.to_thread(
        _referee, "replay", str(log), "--database", url, "--output", "/dev/null"
    )
    assert done.returncode == 0, done.stderr


async def test_audit_passes_on_a_clean_store(migrated_database: str) -> None:
    await _store_example(migrated_database)
    report = await asyncio.to_thread(_referee, "audit", "--database", migrated_database)
    assert report.returncode == 0, report.stdout + report.stderr
    assert "audit passed" in report.stdout
    assert "verdicts: 71 stored, 71 re-derived" in report.stdout


async def test_audit_passes_on_a_store_of_every_edition_2_family(
    migrated_database: str, tmp_path: Path
) -> None:
    # Trains, spinners that score during play, partnerships, penalty scoring: the store keeps
    # every new verdict and state, and the journal re-derives them byte for byte.
    await _store_example(migrated_database, EDITION2)
    report = await asyncio.to_thread(_referee, "audit", "--database", migrated_database)
    assert report.returncode == 0, report.stdout + report.stderr
    assert "audit passed" in report.stdout
    memory = tmp_path / "verdicts.jsonl"
    done = await asyncio.to_thread(_referee, "replay", str(EDITION2), "--output", str(memory))
    assert done.returncode == 0, done.stderr
    expected = memory.read_text().splitlines()
    assert any('"type":"PointsScored"' in v for v in expected)
    assert any('"team_awards"' in v for v in expected)
    assert f"verdicts: {len(expected)} stored, {len(expected)} re-derived" in report.stdout


async def test_audit_fails_on_a_forged_verdict(migrated_database: str) -> None:
    await _store_example(migrated_database)
    forged = (
        '{"cause_event_id":"x","cause_seq":3,"cumulative":{"p0":500},"game_id":"sim-42-000001",'
        '"occurred_at":"2026-11-30T12:00:00Z","round":1,"schema_version":1,"type":"GameWon",'
        '"verdict_id":"00000000-0000-5000-8000-000000000000","winner":"p0"}'
    )
    await execute(
        migrated_database,
        "INSERT INTO verdicts (verdict_id, game_id, type, cause_seq, journal_id, body) "
        "VALUES ('00000000-0000-5000-8000-000000000000', 'sim-42-000001', 'GameWon', 3, 3, $1)",
        forged,
    )
    report = await asyncio.to_thread(_referee, "audit", "--database", migrated_database)
    assert report.returncode == 1
    assert "audit FAILED" in report.stdout
    assert "sim-42-000001" in report.stdout


async def test_audit_fails_on_a_verdict_altered_behind_the_triggers_back(
    migrated_database: str,
) -> None:
    await _store_example(migrated_database)
    # Only a superuser who disables the trigger can do this; the test does it on purpose.
    await execute(
        migrated_database,
        "ALTER TABLE verdicts DISABLE TRIGGER verdicts_append_only;"
        "UPDATE verdicts SET body = replace(body, '\"penalty\":0', '\"penalty\":9') "
        "WHERE position = (SELECT min(position) FROM verdicts WHERE type = 'FoulRecorded');"
        "ALTER TABLE verdicts ENABLE TRIGGER verdicts_append_only",
    )
    report = await asyncio.to_thread(_referee, "audit", "--database", migrated_database)
    assert report.returncode == 1
    assert '"penalty":9' in report.stdout


async def test_audit_judges_each_record_under_the_size_limit_it_was_judged_under(
    migrated_database: str,
) -> None:
    done = await asyncio.to_thread(
        _referee,
        "replay",
        str(EXAMPLE),
        "--database",
        migrated_database,
        "--max-event-bytes",
        "100",
        "--output",
        "/dev/null",
    )
    assert done.returncode == 0, done.stderr
    assert "too_large" in done.stderr
    # The audit runs with the default limit; the journal says each record's own.
    report = await asyncio.to_thread(_referee, "audit", "--database", migrated_database)
    assert report.returncode == 0, report.stdout + report.stderr
    assert "audit passed" in report.stdout


async def test_replay_into_the_store_writes_its_rejections_like_the_in_memory_replay(
    migrated_database: str, tmp_path: Path
) -> None:
    in_store, in_memory = tmp_path / "store.rejected", tmp_path / "memory.rejected"
    done = await asyncio.to_thread(
        _referee,
        "replay",
        str(EXAMPLE),
        "--database",
        migrated_database,
        "--rejected",
        str(in_store),
        "--output",
        "/dev/null",
    )
    assert done.returncode == 0, done.stderr
    memory = await asyncio.to_thread(
        _referee, "replay", str(EXAMPLE), "--rejected", str(in_memory), "--output", "/dev/null"
    )
    assert memory.returncode == 0, memory.stderr
    assert in_store.read_bytes() == in_memory.read_bytes()
    assert in_store.read_bytes().count(b"\n") == 32


async def test_audit_names_each_games_rules_revision_and_the_referee_that_started_it(
    migrated_database: str,
) -> None:
    from importlib.metadata import version

    await _store_example(migrated_database)
    report = await asyncio.to_thread(_referee, "audit", "--database", migrated_database)
    assert report.returncode == 0, report.stdout + report.stderr
    assert "games by rules revision: revision 1: 8\n" in report.stdout
    assert f"games by the referee that started them: {version('referee')}: 8" in report.stdout
    done = await asyncio.to_thread(_referee, "audit", "--json", "--database", migrated_database)
    document = json.loads(done.stdout)
    assert document["rules_revisions"] == {"1": 8}
    assert document["started_by"] == {version("referee"): 8}


async def test_a_game_without_a_recorded_revision_is_audited_under_revision_1(
    migrated_database: str,
) -> None:
    """A store written before migration 0009 has no game_revisions rows: its games are
    revision 1, and they audit cleanly."""
    await _store_example(migrated_database)
    await execute(migrated_database, "ALTER TABLE game_revisions DISABLE TRIGGER USER")
    await execute(migrated_database, "DELETE FROM game_revisions WHERE game_id LIKE 'sim-42-%'")
    await execute(migrated_database, "ALTER TABLE game_revisions ENABLE TRIGGER USER")
    report = await asyncio.to_thread(_referee, "audit", "--database", migrated_database)
    assert report.returncode == 0, report.stdout + report.stderr
    assert "games by rules revision: revision 1: 8\n" in report.stdout
    assert "before 0.2.0: " in report.stdout


async def test_audit_and_explain_refuse_a_revision_this_release_lacks(
    migrated_database: str,
) -> None:
    await _store_example(migrated_database)
    await execute(
        migrated_database,
        "INSERT INTO game_revisions (game_id, rules_revision, referee_version, journal_id) "
        "VALUES ('from-the-future', 99, '9.0.0', 1)",
    )
    for command in ("audit", "explain"):
        report = await asyncio.to_thread(_referee, command, "--database", migrated_database)
        assert report.returncode == 3, (command, report.stdout, report.stderr)
        assert "rules revision 99 is not known to this referee" in report.stderr
        assert "Traceback" not in report.stderr


async def test_a_differential_audit_lists_the_games_a_candidate_revision_would_change(
    migrated_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``audit --revision N``: the check a release runs before it ships a new revision. A
    candidate revision 2 that scores Threes as a count of threes (a third of the count, as
    Fives and Threes does) changes the games that score during play by threes, and no other;
    revision 1 changes nothing."""
    from types import MappingProxyType

    from referee.domain import judge as judge_module
    from referee.domain import revisions
    from referee.domain.play_scoring import play_points
    from referee.domain.rules import PlayScoring
    from referee.store.database import create_engine
    from referee.store.views import StoreViews
    from referee.usecases.audit import audit

    await _store_example(migrated_database, EDITION2)
    today = judge_module.judge

    def changed(scoring: PlayScoring, count: int) -> int:
        if scoring is PlayScoring.THREES and count > 0:
            return count // 3 if count % 3 == 0 else 0
        return play_points(scoring, count)

    def judge_2(game: object, event: object) -> object:
        monkeypatch.setattr(judge_module, "play_points", changed)
        try:
            return today(game, event)  # type: ignore[arg-type]
        finally:
            monkeypatch.setattr(judge_module, "play_points", play_points)

    monkeypatch.setattr(
        revisions,
        "REVISIONS",
        MappingProxyType(
            {**revisions.REVISIONS, 2: revisions.RulesRevision(2, judge_2, "candidate")}  # type: ignore[arg-type]
        ),
    )
    engine = create_engine(migrated_database)
    try:
        same = await audit(StoreViews(engine), 65536, candidate=1)
        report = await audit(StoreViews(engine), 65536, candidate=2)
        own = await audit(StoreViews(engine), 65536)
    finally:
        await engine.dispose()
    assert same.passed, same.differences
    assert "revision 1 changes nothing" in same.summary()
    assert own.passed, own.differences
    assert not report.passed
    assert report.changed_games
    rules = {
        r["game_id"]: json.loads(r["s"])["rules"]
        for r in await fetch(
            migrated_database, "SELECT game_id, state::text AS s FROM current_games"
        )
    }
    for game in report.changed_games:
        assert rules[game].get("play_scoring") == "threes", (game, rules[game])
    summary = report.summary()
    assert f"revision 2 would change the verdicts of {len(report.changed_games)} game(s)" in summary
    assert "revision 2 gives" in summary
    assert all(f"game {g!r} (rules revision 2), verdict #" in summary for g in report.changed_games)


def test_the_differential_audit_refuses_an_unknown_candidate() -> None:
    done = _referee("audit", "--revision", "4", "--database", "postgresql://nowhere/x")
    assert done.returncode == 2
    assert "rules revision 4 is not known" in done.stderr


async def test_each_journal_row_names_the_release_that_wrote_it(migrated_database: str) -> None:
    """Migration 0011: every row this release writes carries its version, and the audit
    counts the rows by writer."""
    from importlib.metadata import version

    await _store_example(migrated_database)
    writers = await fetch(
        migrated_database,
        "SELECT referee_version, count(*) AS n FROM journal GROUP BY 1",
    )
    total = sum(r["n"] for r in writers)
    assert [(r["referee_version"], r["n"]) for r in writers] == [(version("referee"), total)]
    report = await asyncio.to_thread(_referee, "audit", "--json", "--database", migrated_database)
    document = json.loads(report.stdout)
    assert document["written_by"] == {version("referee"): total}
    assert document["differences_by_writer"] == {}


async def _alter_a_foul(url: str, *, unrecord: bool = False) -> str:
    """Alters the first foul's body behind the trigger's back; ``unrecord`` also clears the
    writer of its journal row, as a store written before migration 0011 has it. Returns the
    journal row the foul stands on."""
    rows = await fetch(
        url,
        "SELECT journal_id FROM verdicts WHERE type = 'FoulRecorded' ORDER BY position LIMIT 1",
    )
    journal_id = rows[0]["journal_id"]
    await execute(
        url,
        "ALTER TABLE verdicts DISABLE TRIGGER verdicts_append_only;"
        "UPDATE verdicts SET body = replace(body, '\"penalty\":0', '\"penalty\":9') "
        f"WHERE journal_id = {journal_id} AND type = 'FoulRecorded';"
        "ALTER TABLE verdicts ENABLE TRIGGER verdicts_append_only",
    )
    if unrecord:
        await execute(
            url,
            "ALTER TABLE journal DISABLE TRIGGER USER;"
            f"UPDATE journal SET referee_version = NULL WHERE id = {journal_id};"
            "ALTER TABLE journal ENABLE TRIGGER USER",
        )
    return str(journal_id)


async def test_a_difference_names_its_row_its_writer_and_what_differs(
    migrated_database: str,
) -> None:
    from importlib.metadata import version

    await _store_example(migrated_database)
    journal_id = await _alter_a_foul(migrated_database)
    report = await asyncio.to_thread(_referee, "audit", "--database", migrated_database)
    assert report.returncode == 1
    line = next(x for x in report.stdout.splitlines() if '"penalty":9' in x)
    assert "(rules revision 1), verdict #" in line
    assert f"(journal row {journal_id}, written by {version('referee')}): penalty differs:" in line
    # this release wrote the row and derives it otherwise: the store was altered
    assert (
        f"1 difference(s) in rows written by {version('referee')}: this release wrote them and "
        "now derives otherwise: the rows were altered" in report.stdout
    )


async def test_a_difference_in_a_row_of_an_unrecorded_writer_says_so(
    migrated_database: str,
) -> None:
    await _store_example(migrated_database)
    journal_id = await _alter_a_foul(migrated_database, unrecord=True)
    report = await asyncio.to_thread(_referee, "audit", "--json", "--database", migrated_database)
    assert report.returncode == 1
    document = json.loads(report.stdout)
    assert document["differences_by_writer"] == {"not recorded": 1}
    assert document["written_by"]["not recorded"] == 1
    (line,) = document["differences"]
    assert f"(journal row {journal_id}, written by not recorded): penalty differs" in line
