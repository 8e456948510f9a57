"""Scoring during play (RULES.md section 10): the layout's count, and what a play scores."""

from __future__ import annotations

import pytest

from referee.domain.play_scoring import play_points
from referee.domain.rules import (
    BlockConfirmation,
    DrawRule,
    Layout,
    PlayScoring,
    Rules,
    SpinnerArms,
)
from referee.domain.verdicts import GameWon, PointsScored, RoundScored
from tests.notation import deal, kinds, only, rnd, scores, steps


def _count(spec: str, *plays: str, rules: Rules) -> int:
    game, _ = steps(deal(spec, rules), *plays)
    count = rnd(game).layout.counted()
    assert count is not None
    return count


FIVES = Rules.of(layout=Layout.SPINNER, draw=DrawRule.NONE, play_scoring=PlayScoring.FIVES)


@pytest.mark.parametrize(
    ("spec", "plays", "count"),
    [
        # The examples of RULES.md section 10, in order.
        ("ann: 6-6 0-0 | bob: 6-3 1-1", ("ann plays 6-6",), 12),
        ("ann: 6-6 0-0 | bob: 6-3 1-1", ("ann plays 6-6", "bob plays 6-3 right"), 15),
        (
            "ann: 6-6 6-2 0-0 | bob: 6-3 1-1",
            ("ann plays 6-6", "bob plays 6-3 right", "ann plays 6-2 left"),
            5,
        ),
        ("ann: 2-3 0-0 | bob: 1-1", ("ann plays 2-3",), 5),
        ("ann: 3-5 0-0 | bob: 5-5 1-1", ("ann plays 3-5", "bob plays 5-5 right"), 13),
    ],
)
def test_the_count_of_a_line_end_by_end(spec: str, plays: tuple[str, ...], count: int) -> None:
    assert _count(spec, *plays, rules=FIVES) == count


def test_the_count_of_an_arm_played_on_under_at_once() -> None:
    rules = Rules.of(
        layout=Layout.SPINNER,
        draw=DrawRule.NONE,
        spinner_arms=SpinnerArms.AT_ONCE,
        play_scoring=PlayScoring.FIVES,
    )
    assert (
        _count("ann: 5-5 1-1 | bob: 5-0 2-2", "ann plays 5-5", "bob plays 5-0 up", rules=rules)
        == 10
    )


def test_an_arm_counts_twice_when_a_double_lies_on_it_and_nothing_while_bare() -> None:
    rules = Rules.of(
        layout=Layout.SPINNER,
        draw=DrawRule.NONE,
        spinner_arms=SpinnerArms.AT_ONCE,
        play_scoring=PlayScoring.FIVES,
    )
    spec = "ann: 5-5 0-1 | bob: 5-4 2-2 | cid: 4-4 3-3"
    # left 5 and right 5 share the spinner (face 10), up 4 counts 4, down (bare) nothing.
    assert _count(spec, "ann plays 5-5", "bob plays 5-4 up", rules=rules) == 14
    # 4-4 on up: that arm now counts 4 twice.
    assert _count(spec, "ann plays 5-5", "bob plays 5-4 up", "cid plays 4-4 up", rules=rules) == 18


def test_a_line_that_counts_counts_like_a_spinner_line_but_never_spins() -> None:
    rules = Rules.of(draw=DrawRule.NONE, play_scoring=PlayScoring.FIVES)  # layout: line
    game, _ = steps(
        deal("ann: 3-5 0-0 | bob: 5-5 1-1", rules), "ann plays 3-5", "bob plays 5-5 right"
    )

    assert rnd(game).layout.counted() == 13
    assert rnd(game).layout.open_ends() == {"left": 3, "right": 5}  # no arms on a line


def test_the_double_blank_value_does_not_apply_to_counts() -> None:
    rules = Rules.of(
        layout=Layout.SPINNER, draw=DrawRule.NONE, double_blank=25, play_scoring=PlayScoring.FIVES
    )
    assert (
        _count("ann: 0-0 1-1 | bob: 0-5 2-2", "ann plays 0-0", "bob plays 0-5 right", rules=rules)
        == 5
    )


@pytest.mark.parametrize(
    ("scoring", "count", "points"),
    [
        (PlayScoring.FIVES, 15, 15),
        (PlayScoring.FIVES, 12, 0),
        (PlayScoring.FIVES, 0, 0),
        (PlayScoring.THREES, 12, 12),
        (PlayScoring.THREES, 10, 0),
        (PlayScoring.FIVES_AND_THREES, 15, 8),
        (PlayScoring.FIVES_AND_THREES, 10, 2),
        (PlayScoring.FIVES_AND_THREES, 9, 3),
        (PlayScoring.FIVES_AND_THREES, 7, 0),
        (PlayScoring.FIVES_AND_THREES, 30, 16),
        (PlayScoring.NONE, 15, 0),
    ],
)
def test_what_a_count_scores(scoring: PlayScoring, count: int, points: int) -> None:
    assert play_points(scoring, count) == points


def test_a_play_that_counts_a_multiple_of_five_scores_it_for_the_mover() -> None:
    game = deal("ann: 6-6 0-0 | bob: 6-3 1-1", FIVES)

    after, produced = steps(game, "ann plays 6-6", "bob plays 6-3 right")

    assert produced[0] == ()  # 12 is no multiple of 5
    assert produced[1] == (PointsScored("bob", 15, 15, {"ann": 0, "bob": 15}),)
    assert scores(after) == {"ann": 0, "bob": 15}


def test_under_threes_the_lead_double_six_scores_twelve() -> None:
    rules = Rules.of(layout=Layout.SPINNER, draw=DrawRule.NONE, play_scoring=PlayScoring.THREES)
    _, produced = steps(deal("ann: 6-6 0-0 | bob: 6-3 1-1", rules), "ann plays 6-6")

    assert produced == [(PointsScored("ann", 12, 12, {"ann": 12, "bob": 0}),)]


def test_under_fives_and_threes_a_count_of_fifteen_scores_eight() -> None:
    rules = Rules.of(draw=DrawRule.NONE, play_scoring=PlayScoring.FIVES_AND_THREES)
    _, produced = steps(
        deal("ann: 6-6 0-0 | bob: 6-3 1-1", rules), "ann plays 6-6", "bob plays 6-3 right"
    )

    assert produced[0] == (PointsScored("ann", 12, 4, {"ann": 4, "bob": 0}),)
    assert produced[1] == (PointsScored("bob", 15, 8, {"ann": 4, "bob": 8}),)


def test_without_play_scoring_nothing_scores_during_play() -> None:
    rules = Rules.of(layout=Layout.SPINNER, draw=DrawRule.NONE)
    _, produced = steps(
        deal("ann: 6-6 0-0 | bob: 6-3 1-1", rules), "ann plays 6-6", "bob plays 6-3 right"
    )

    assert produced == [(), ()]


def test_the_play_that_ends_the_round_scores_before_the_round_is_scored() -> None:
    game = deal("ann: 6-6 6-2 | bob: 6-3 1-1", FIVES)

    after, produced = steps(game, "ann plays 6-6", "bob plays 6-3 right", "ann plays 6-2 left")

    # Her last tile: 2 + 3 = 5 scores 5, then the domino scores bob's 1-1 for her.
    assert kinds(produced[2]) == ["PointsScored", "RoundScored"]
    assert only(produced[2], PointsScored) == PointsScored("ann", 5, 5, {"ann": 5, "bob": 15})
    scored = only(produced[2], RoundScored)
    assert scored.awards == {"ann": 2, "bob": 0}
    assert scored.cumulative == {"ann": 7, "bob": 15}
    assert scores(after) == {"ann": 7, "bob": 15}


def test_play_points_reach_the_target_only_when_the_round_is_scored() -> None:
    rules = Rules.of(
        layout=Layout.SPINNER, draw=DrawRule.NONE, play_scoring=PlayScoring.FIVES, target_score=10
    )
    game = deal("ann: 6-6 6-2 | bob: 6-3 1-1", rules)

    mid, produced = steps(game, "ann plays 6-6", "bob plays 6-3 right")
    assert scores(mid) == {"ann": 0, "bob": 15}
    assert not mid.is_over  # 15 >= 10, but no round has been scored yet
    after, produced = steps(mid, "ann plays 6-2 left")
    assert kinds(produced[0]) == ["PointsScored", "RoundScored", "GameWon"]
    assert only(produced[0], GameWon).winner == "bob"
    assert after.is_over


def test_with_teams_a_play_scores_for_the_movers_team() -> None:
    teams = {"ns": ("ann", "cid"), "ew": ("bob", "dee")}
    game = deal("ann: 6-6 0-0 | bob: 6-3 1-1 | cid: 2-2 | dee: 3-3", FIVES, teams)

    _, produced = steps(game, "ann plays 6-6", "bob plays 6-3 right")

    assert produced[1] == (
        PointsScored(
            "bob",
            15,
            15,
            {"ann": 0, "bob": 15, "cid": 0, "dee": 15},
            team="ew",
            team_cumulative={"ns": 0, "ew": 15},
        ),
    )


def test_a_play_that_scores_and_closes_the_layout_announces_the_points_first() -> None:
    rules = Rules.of(
        draw=DrawRule.NONE,
        play_scoring=PlayScoring.FIVES,
        block_confirmation=BlockConfirmation.IMMEDIATE,
    )
    game = deal("ann: 5-5 1-1 | bob: 5-0 2-2 | cid: 3-3 4-4", rules)

    _, produced = steps(game, "ann plays 5-5", "bob plays 5-0 right")

    assert produced[0] == (PointsScored("ann", 10, 10, {"ann": 10, "bob": 0, "cid": 0}),)
    assert kinds(produced[1]) == ["PointsScored", "BlockDeclared", "RoundScored"]
    assert only(produced[1], PointsScored).count == 10  # 5-5 outermost on the left: 10, right 0
