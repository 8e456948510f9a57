"""The frozen corpus: every rules revision gives, on every release, the verdicts it gave when
it was frozen (tests/corpus/corpus.py); a rule changed without a new revision fails here."""

from __future__ import annotations

import json

import pytest

from referee.domain import judge as judge_module
from referee.domain.play_scoring import play_points
from referee.domain.revisions import REVISIONS
from referee.domain.rules import PlayScoring
from tests.corpus.corpus import FAMILIES, check, corpus_file


def test_every_revision_has_a_frozen_corpus_and_only_those() -> None:
    files = sorted(corpus_file(1).parent.glob("revision-*.json"))
    assert [f.name for f in files] == [corpus_file(n).name for n in sorted(REVISIONS)]
    for number in REVISIONS:
        document = json.loads(corpus_file(number).read_text())
        assert document["revision"] == number
        logs = document["logs"]
        assert {f"simulated/{family}" for family in FAMILIES} <= set(logs)
        assert sum(1 for name in logs if name.startswith("golden/")) >= 13
        # every family gives verdicts, and the mix bad input too
        assert all(entry["verdicts"] > 0 for entry in logs.values())
        assert logs["simulated/mix"]["rejections"] > 0


@pytest.mark.parametrize("revision", sorted(REVISIONS))
def test_each_revision_gives_its_frozen_verdicts_byte_for_byte(revision: int) -> None:
    found = check(revision)
    assert found.passed, "\n".join(found.differences)


def test_a_rule_changed_without_a_new_revision_fails_and_names_the_games(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A "fix" of Fives and Threes (scoring the count, as All Fives does) slipped into
    revision 1: the corpus names the games it changed, and only those."""

    def changed(scoring: PlayScoring, count: int) -> int:
        if scoring is PlayScoring.FIVES_AND_THREES and count > 0:
            return count if count % 5 == 0 or count % 3 == 0 else 0
        return play_points(scoring, count)

    monkeypatch.setattr(judge_module, "play_points", changed)
    found = check(1)
    assert not found.passed
    logs = {log for log, _ in found.games}
    assert "golden/fives_and_threes.jsonl" in logs
    assert "golden/mexican_train.jsonl" not in logs
    # the simulator plays by the judge: the family's log itself comes out another game
    reported = " ".join(found.differences)
    assert "simulated/fives_and_threes" in reported
    assert "simulated/edition1" not in reported
    assert "simulated/trains" not in reported
    assert any("verdicts_sha256 differs under revision 1" in d for d in found.differences)
    assert any("games whose verdicts changed: " in d for d in found.differences)


def test_the_simulated_logs_are_the_committed_ones_never_made_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A revision's corpus is fixed bytes: the simulator (which plays by the judge, and may
    change) is not run to check it."""
    from tests.corpus import corpus

    def refuse(*_: object, **__: object) -> object:
        raise AssertionError("the corpus made a log again")

    monkeypatch.setattr(corpus, "simulate", refuse)
    names = [name for name, _ in corpus.logs()]
    assert {f"simulated/{family}" for family in FAMILIES} <= set(names)
    assert all(corpus.log_file(family).exists() for family in FAMILIES)


def test_an_edited_committed_log_is_told_from_a_changed_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.corpus import corpus

    real = corpus.simulated_log

    def edited(family: str) -> bytes:
        log = real(family)
        return log + log.splitlines(keepends=True)[0] if family == "penalty" else log

    monkeypatch.setattr(corpus, "simulated_log", edited)
    found = check(1)
    assert found.differences == [
        (
            "simulated/penalty: the log itself changed (a golden file or a committed log edited: "
            "a revision's corpus is the same bytes for ever)"
        )
    ]
