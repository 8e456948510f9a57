"""Rounding awards to the nearest 5, and what the double-blank counts (RULES.md section 5)."""

from __future__ import annotations

import pytest

from referee.domain.rules import PointsPolicy, Rounding, Rules, TiePolicy
from referee.domain.verdicts import BlockDeclared, RoundScored
from tests.notation import everyone_passes, only, play, table

NEAREST_5 = Rules(rounding=Rounding.NEAREST_5)


@pytest.mark.parametrize(
    ("bob_holds", "pips", "award"),
    [
        ("0-1", 1, 0),
        ("0-2", 2, 0),
        ("0-3", 3, 5),
        ("0-4", 4, 5),
        ("0-5", 5, 5),
        ("5-6", 11, 10),
        ("6-6", 12, 10),
        ("6-6 0-1", 13, 15),
        ("6-6 0-2", 14, 15),
        ("6-6 1-2", 15, 15),
        ("6-6 0-4", 16, 15),
        ("6-6 0-5", 17, 15),
        ("6-6 1-5", 18, 20),
        ("6-6 4-5", 21, 20),
        ("6-6 4-6", 22, 20),
        ("6-6 5-6 0-0", 23, 25),
    ],
)
def test_nearest_5_rounds_endings_1_and_2_down_and_3_and_4_up(
    bob_holds: str, pips: int, award: int
) -> None:
    game = table(f"ann: 3-3 | bob: {bob_holds} | left 3 right 2", rules=NEAREST_5)

    _, verdicts = play(game, "ann", "3-3", "left")

    scored = only(verdicts, RoundScored)
    assert scored.pip_counts["bob"] == pips
    assert scored.awards == {"ann": award, "bob": 0}
    assert scored.cumulative == {"ann": award, "bob": 0}


def test_without_rounding_an_award_is_kept_as_it_is() -> None:
    game = table("ann: 3-3 | bob: 6-6 0-1 | left 3 right 2")

    _, verdicts = play(game, "ann", "3-3", "left")

    assert only(verdicts, RoundScored).awards == {"ann": 13, "bob": 0}


@pytest.mark.parametrize(
    ("policy", "each"),
    [
        (PointsPolicy.OTHERS, 5),  # floor(9/2) = 4 -> 5
        (PointsPolicy.OTHERS_MINUS_OWN, 0),  # floor(5/2) = 2 -> 0, not floor(5/2) of 5
        (PointsPolicy.ALL, 10),  # floor(17/2) = 8 -> 10, not floor(15/2) = 7
    ],
)
def test_rounding_is_applied_last_to_each_split_award(policy: PointsPolicy, each: int) -> None:
    rules = Rules(tie=TiePolicy.SPLIT, block_points=policy, rounding=Rounding.NEAREST_5)
    game = table("ann: 1-3 | bob: 0-4 | cid: 4-5 | left 6 right 6", rules=rules)

    _, verdicts = everyone_passes(game)

    assert only(verdicts, RoundScored).awards == {"ann": each, "bob": each, "cid": 0}


@pytest.mark.parametrize(("double_blank", "bob_pips"), [(0, 2), (25, 27), (50, 52)])
def test_the_double_blank_counts_double_blank_pips_in_a_domino(
    double_blank: int, bob_pips: int
) -> None:
    game = table("ann: 3-3 | bob: 0-0 1-1 | left 3 right 2", rules=Rules(double_blank=double_blank))

    _, verdicts = play(game, "ann", "3-3", "left")

    scored = only(verdicts, RoundScored)
    assert scored.pip_counts == {"ann": 0, "bob": bob_pips}
    assert scored.awards == {"ann": bob_pips, "bob": 0}


@pytest.mark.parametrize(
    ("double_blank", "ann_pips", "winner", "award"),
    [(0, 3, "ann", 9), (25, 28, "bob", 28), (50, 53, "bob", 53)],
)
def test_the_double_blank_counts_in_block_pip_counts_and_can_change_the_winner(
    double_blank: int, ann_pips: int, winner: str, award: int
) -> None:
    game = table("ann: 0-0 1-2 | bob: 4-5 | left 6 right 6", rules=Rules(double_blank=double_blank))

    _, verdicts = everyone_passes(game)

    declared = only(verdicts, BlockDeclared)
    scored = only(verdicts, RoundScored)
    assert declared.pip_counts == {"ann": ann_pips, "bob": 9}
    assert scored.pip_counts == {"ann": ann_pips, "bob": 9}
    assert scored.winners == (winner,)
    assert scored.awards[winner] == award


def test_only_the_double_blank_is_affected_not_other_blanks() -> None:
    game = table("ann: 0-3 0-1 | bob: 4-5 | left 6 right 6", rules=Rules(double_blank=25))

    _, verdicts = everyone_passes(game)

    assert only(verdicts, RoundScored).pip_counts == {"ann": 4, "bob": 9}


def test_under_lowest_tile_a_double_blank_counts_its_double_blank_pips() -> None:
    rules = Rules(tie=TiePolicy.LOWEST_TILE, double_blank=25)
    game = table(
        "ann: 0-0 1-3 | bob: 1-2 5-5 4-5 3-4 | cid: 3-5 2-5 2-4 1-5 3-3 | left 6 right 6",
        rules=rules,
    )

    _, verdicts = everyone_passes(game)

    scored = only(verdicts, RoundScored)
    assert scored.pip_counts == {"ann": 29, "bob": 29, "cid": 33}
    # ann's smallest tile is [1,3] = 4 because [0,0] counts 25; bob's [1,2] = 3 is smaller.
    assert scored.winners == ("bob",)
    assert scored.awards == {"ann": 0, "bob": 62, "cid": 0}
