"""Scoring a round: block_points and domino_points (RULES.md section 5), with numbers."""

from __future__ import annotations

import pytest

from referee.domain.rules import PointsPolicy, Rules, TiePolicy
from referee.domain.verdicts import RoundEnd, RoundScored
from tests.notation import everyone_passes, only, play, scores, table

BLOCKED = "ann: 1-2 | bob: 4-5 1-1 | cid: 2-5 | left 6 right 3"
"""Blocked on 6 and 3. Pips: ann 3 (lowest), bob 11, cid 7. U = 18, L = 3."""

DOMINO = "ann: 3-0 | bob: 4-5 1-1 | cid: 2-5 | left 6 right 3"
"""ann goes out with [3,0] on the right. Pips left: bob 11, cid 7."""


def _blocked(rules: Rules) -> RoundScored:
    _, verdicts = everyone_passes(table(BLOCKED, rules=rules))
    return only(verdicts, RoundScored)


def _domino(rules: Rules) -> RoundScored:
    _, verdicts = play(table(DOMINO, rules=rules), "ann", "3-0", "right")
    return only(verdicts, RoundScored)


@pytest.mark.parametrize(
    ("policy", "award"),
    [
        (PointsPolicy.OTHERS, 18),
        (PointsPolicy.OTHERS_MINUS_OWN, 15),
        (PointsPolicy.ALL, 21),
    ],
)
def test_a_blocked_round_pays_the_lowest_count_by_block_points(
    policy: PointsPolicy, award: int
) -> None:
    scored = _blocked(Rules(block_points=policy))

    assert scored == RoundScored(
        reason=RoundEnd.BLOCKED,
        winners=("ann",),
        pip_counts={"ann": 3, "bob": 11, "cid": 7},
        awards={"ann": award, "bob": 0, "cid": 0},
        cumulative={"ann": award, "bob": 0, "cid": 0},
        tie=False,
    )


@pytest.mark.parametrize("policy", list(PointsPolicy))
def test_a_domino_pays_every_other_players_pips_under_each_policy(policy: PointsPolicy) -> None:
    scored = _domino(Rules(domino_points=policy))

    assert scored == RoundScored(
        reason=RoundEnd.DOMINO,
        winners=("ann",),
        pip_counts={"ann": 0, "bob": 11, "cid": 7},
        awards={"ann": 18, "bob": 0, "cid": 0},
        cumulative={"ann": 18, "bob": 0, "cid": 0},
        tie=False,
    )


def test_a_blocked_round_uses_block_points_not_domino_points() -> None:
    rules = Rules(block_points=PointsPolicy.OTHERS_MINUS_OWN, domino_points=PointsPolicy.ALL)

    assert _blocked(rules).awards["ann"] == 15


def test_a_blocked_round_under_all_uses_block_points_not_domino_points() -> None:
    rules = Rules(block_points=PointsPolicy.ALL, domino_points=PointsPolicy.OTHERS_MINUS_OWN)

    assert _blocked(rules).awards["ann"] == 21


def test_the_lowest_count_wins_the_block_wherever_it_sits() -> None:
    game = table("ann: 4-5 | bob: 2-5 | cid: 0-1 | left 6 right 3")

    _, verdicts = everyone_passes(game)

    scored = only(verdicts, RoundScored)
    assert scored.winners == ("cid",)
    assert scored.awards == {"ann": 0, "bob": 0, "cid": 16}


def test_the_round_award_is_added_to_the_cumulative_score() -> None:
    game = table(BLOCKED, scores={"ann": 4, "bob": 7, "cid": -2})

    after, verdicts = everyone_passes(game)

    assert only(verdicts, RoundScored).cumulative == {"ann": 22, "bob": 7, "cid": -2}
    assert scores(after) == {"ann": 22, "bob": 7, "cid": -2}


@pytest.mark.parametrize(
    ("policy", "each"),
    [
        (PointsPolicy.OTHERS, 0),
        (PointsPolicy.OTHERS_MINUS_OWN, 0),
        (PointsPolicy.ALL, 3),
    ],
)
def test_an_award_is_never_below_zero(policy: PointsPolicy, each: int) -> None:
    rules = Rules(block_points=policy, tie=TiePolicy.SPLIT)
    game = table("ann: 1-2 | bob: 0-3 | left 6 right 6", rules=rules)

    _, verdicts = everyone_passes(game)

    scored = only(verdicts, RoundScored)
    assert scored.winners == ("ann", "bob")
    assert scored.awards == {"ann": each, "bob": each}
    assert scored.tie is True


def test_pip_counts_in_round_scored_cover_every_player_after_a_domino() -> None:
    game = table("ann: 3-0 | bob: 6-6 5-5 | cid: 0-1 | left 6 right 3")

    _, verdicts = play(game, "ann", "0-3", "right")

    scored = only(verdicts, RoundScored)
    assert scored.pip_counts == {"ann": 0, "bob": 22, "cid": 1}
    assert scored.awards == {"ann": 23, "bob": 0, "cid": 0}
