"""Values many open games hold alike are shared, and sharing never changes a value."""

from __future__ import annotations

import msgspec
import pytest

from referee.contracts import wire
from referee.contracts.wire import RulesWire, shared_rules
from referee.domain.fouls import FoulKind
from referee.domain.rules import NO_PENALTIES, Layout, Rules
from referee.domain.state import new_game
from referee.domain.teams import Teams, solo


@pytest.fixture(autouse=True)
def empty_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts from an empty table (other tests of the run may have filled it)."""
    monkeypatch.setattr(wire, "_shared_rules", {})


def rules_of(doc: dict[str, object]) -> Rules:
    return msgspec.json.decode(msgspec.json.encode(doc), type=RulesWire).to_domain()


def test_equal_rules_of_two_games_are_one_object() -> None:
    first = rules_of({"target_score": 150, "foul_penalty": {"false_pass": 5, "out_of_turn": 2}})
    second = rules_of({"foul_penalty": {"out_of_turn": 2, "false_pass": 5}, "target_score": 150})
    assert first is second
    assert first == Rules.of(
        target_score=150,
        foul_penalty={FoulKind.FALSE_PASS: 5, FoulKind.OUT_OF_TURN: 2},
    )


@pytest.mark.parametrize(
    "other",
    [
        {"target_score": 151, "foul_penalty": {"false_pass": 5, "out_of_turn": 2}},
        {"target_score": 150, "foul_penalty": {"false_pass": 5, "out_of_turn": 3}},
        {"target_score": 150, "foul_penalty": {"false_pass": 5}},
        {"target_score": 150, "foul_penalty": {"false_pass": 5, "out_of_turn": 2}, "max_pip": 9},
        {"target_score": 150, "foul_penalty": {"false_pass": 5, "out_of_turn": 2}, "rounds": 3},
    ],
)
def test_rules_that_differ_in_any_option_are_not_shared(other: dict[str, object]) -> None:
    first = rules_of({"target_score": 150, "foul_penalty": {"false_pass": 5, "out_of_turn": 2}})
    assert rules_of(other) != first
    assert rules_of(other) is not first


def test_rules_without_penalties_hold_the_shared_empty_mapping() -> None:
    rules = rules_of({"target_score": 77, "layout": "spinner"})
    assert rules.foul_penalty is NO_PENALTIES
    assert rules.layout is Layout.SPINNER


def test_the_table_stops_growing_at_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "SHARED_RULES_LIMIT", 3)
    kept = [rules_of({"target_score": n}) for n in range(1, 4)]
    past = Rules.of(target_score=4)
    assert shared_rules(past) is past
    assert shared_rules(Rules.of(target_score=4)) is not past  # not kept: past the limit
    assert len(wire._shared_rules) == 3
    assert [rules_of({"target_score": n}) for n in range(1, 4)] == kept
    assert all(rules_of({"target_score": n}) is kept[n - 1] for n in range(1, 4))


@pytest.mark.parametrize("players", range(25))
def test_solo_teams_are_the_teams_they_stand_for(players: int) -> None:
    assert solo(players) == Teams(tuple(range(players)), None)


def test_solo_teams_of_a_table_are_shared_by_its_games() -> None:
    assert solo(4) is solo(4)


@pytest.mark.parametrize("players", [2, 4, 10])
def test_a_new_game_starts_at_zero_for_each_team(players: int) -> None:
    names = tuple(f"p{i}" for i in range(players))
    game = new_game(names, Rules())
    assert game.scores == (0,) * players
    assert game.teams == Teams(tuple(range(players)), None)
    paired = new_game(names, Rules(), {"a": names[0::2], "b": names[1::2]})
    assert paired.scores == (0, 0)
