"""Partnerships (RULES.md sections 5.1 and 9): teams score together, everything else is per
player."""

from __future__ import annotations

import pytest

from referee.domain.fouls import FoulKind
from referee.domain.rules import BlockWinner, DrawRule, PointsPolicy, Rules, TiePolicy
from referee.domain.verdicts import FoulRecorded, GameWon, RoundEnd, RoundScored
from tests.notation import kinds, only, pass_, play, scores, steps, table

NS_EW = {"ns": ("ann", "cid"), "ew": ("bob", "dee")}
"""Partners sit opposite: seats 0 and 2 against 1 and 3."""

NO_DRAW = Rules(draw=DrawRule.NONE)

GOING_OUT = "ann: 3-4 | bob: 1-1 2-2 | cid: 0-5 | dee: 6-6 | left 3 right 6"
"""ann's last tile goes out; her partner cid holds 5 pips, bob and dee 6 + 12 = 18."""


@pytest.mark.parametrize(
    ("policy", "award"),
    [
        (PointsPolicy.OTHERS, 18),  # U = T(ew)
        (PointsPolicy.OTHERS_MINUS_OWN, 13),  # U - T(ns): the partner's 5 pips count against
        (PointsPolicy.ALL, 23),  # U + T(ns)
    ],
)
def test_a_domino_pays_the_winners_team_by_the_domino_points_policy(
    policy: PointsPolicy, award: int
) -> None:
    rules = Rules(draw=DrawRule.NONE, domino_points=policy)
    game = table(GOING_OUT, rules=rules, teams=NS_EW)

    after, verdicts = play(game, "ann", "3-4", "left")

    scored = only(verdicts, RoundScored)
    assert scored.reason is RoundEnd.DOMINO
    assert scored.winners == ("ann", "cid")
    assert scored.winning_teams == ("ns",)
    assert scored.awards == {"ann": award, "bob": 0, "cid": award, "dee": 0}
    assert scored.team_awards == {"ns": award, "ew": 0}
    assert scored.team_pip_counts == {"ns": 5, "ew": 18}
    assert scored.pip_counts == {"ann": 0, "bob": 6, "cid": 5, "dee": 12}
    assert scores(after) == {"ann": award, "bob": 0, "cid": award, "dee": 0}


BLOCKED_4 = "left 6 right 6 | chain ann bob cid | turn dee"
"""Nobody holds a 6 and the boneyard is empty; dee's pass completes the chain."""


def _block(hands: str, rules: Rules) -> RoundScored:
    game = table(f"{hands} | {BLOCKED_4}", rules=rules, teams=NS_EW)
    _, verdicts = pass_(game, "dee")
    assert kinds(verdicts) == ["BlockDeclared", "RoundScored"]
    return only(verdicts, RoundScored)


def test_lowest_team_wins_on_the_sum_of_its_members_pips() -> None:
    # ann holds the lowest count (1) but her team's T is 1 + 10 = 11 against 3 + 4 = 7.
    scored = _block("ann: 0-1 | bob: 0-3 | cid: 5-5 | dee: 0-4", NO_DRAW)

    assert scored.team_pip_counts == {"ns": 11, "ew": 7}
    assert scored.winning_teams == ("ew",)
    assert scored.team_awards == {"ns": 0, "ew": 11}
    assert scored.tie is False


def test_lowest_player_wins_for_the_team_of_the_lowest_player() -> None:
    rules = Rules(draw=DrawRule.NONE, block_winner=BlockWinner.LOWEST_PLAYER)
    scored = _block("ann: 0-1 | bob: 0-3 | cid: 5-5 | dee: 0-4", rules)

    assert scored.winning_teams == ("ns",)
    assert scored.team_awards == {"ns": 7, "ew": 0}
    assert scored.winners == ("ann", "cid")


def test_two_lowest_players_of_one_team_are_no_tie() -> None:
    rules = Rules(draw=DrawRule.NONE, block_winner=BlockWinner.LOWEST_PLAYER)
    scored = _block("ann: 0-2 | bob: 0-3 | cid: 1-1 | dee: 0-4", rules)

    assert scored.tie is False
    assert scored.winning_teams == ("ns",)
    assert scored.team_awards == {"ns": 7, "ew": 0}


def test_teams_tied_under_no_winner_score_nothing() -> None:
    # T(ns) = 2 + 3 = 5 and T(ew) = 3 + 2 = 5.
    scored = _block("ann: 0-2 | bob: 0-3 | cid: 1-2 | dee: 1-1", NO_DRAW)

    assert scored.team_pip_counts == {"ns": 5, "ew": 5}
    assert scored.tie is True
    assert scored.winners == ()
    assert scored.winning_teams == ()
    assert scored.team_awards == {"ns": 0, "ew": 0}


def test_teams_tied_under_lowest_tile_the_team_holding_the_single_lowest_tile_wins() -> None:
    rules = Rules(draw=DrawRule.NONE, tie=TiePolicy.LOWEST_TILE)
    # T(ns) = 1 + 4 = 5, T(ew) = 2 + 3 = 5; ns holds 0-1, the lowest single tile.
    scored = _block("ann: 0-4 | bob: 0-2 | cid: 0-1 | dee: 0-3", rules)

    assert scored.tie is True
    assert scored.winning_teams == ("ns",)
    assert scored.team_awards == {"ns": 5, "ew": 0}


def test_tied_teams_split_each_their_own_base_award() -> None:
    # Six players in three teams of two: x (a, d), y (b, e), z (c, f).
    teams = {"x": ("a", "d"), "y": ("b", "e"), "z": ("c", "f")}
    rules = Rules(
        draw=DrawRule.NONE,
        block_winner=BlockWinner.LOWEST_PLAYER,
        tie=TiePolicy.SPLIT,
        block_points=PointsPolicy.OTHERS_MINUS_OWN,
    )
    game = table(
        "a: 1-1 | b: 0-2 | c: 5-5 | d: 0-4 | e: 3-3 | f: 4-5 | left 6 right 6"
        " | chain a b c d e | turn f",
        rules=rules,
        teams=teams,
    )

    _, verdicts = pass_(game, "f")

    scored = only(verdicts, RoundScored)
    # a and b share the lowest count (2): x and y tie. U = T(z) = 19; x gets the floor of
    # 13 / 2, which is 6, and y the floor of 11 / 2, which is 5.
    assert scored.team_pip_counts == {"x": 6, "y": 8, "z": 19}
    assert scored.team_awards == {"x": 6, "y": 5, "z": 0}
    assert scored.winning_teams == ("x", "y")
    assert scored.winners == ("a", "b", "d", "e")
    assert scored.tie is True


def test_a_foul_penalty_is_deducted_from_the_offenders_team() -> None:
    rules = Rules(draw=DrawRule.NONE, foul_penalty={FoulKind.FALSE_PASS: 5})
    game = table(
        "ann: 6-1 | bob: 0-3 | cid: 5-5 | dee: 0-4 | left 6 right 6", rules=rules, teams=NS_EW
    )

    after, verdicts = pass_(game, "ann")

    assert verdicts == (FoulRecorded("ann", FoulKind.FALSE_PASS, applied=True, penalty=5),)
    assert scores(after) == {"ann": -5, "bob": 0, "cid": -5, "dee": 0}


def test_a_team_reaching_the_target_wins_the_game_with_both_its_players() -> None:
    rules = Rules(draw=DrawRule.NONE, target_score=15)
    game = table(GOING_OUT, rules=rules, teams=NS_EW, scores={"ns": 0, "ew": 10})

    after, verdicts = play(game, "ann", "3-4", "left")

    won = only(verdicts, GameWon)
    assert won == GameWon(
        "ann",
        {"ann": 18, "bob": 10, "cid": 18, "dee": 10},
        winners=("ann", "cid"),
        winning_teams=("ns",),
        team_cumulative={"ns": 18, "ew": 10},
    )
    assert after.winner == "ann"


def test_turns_and_the_chain_stay_per_player_with_teams() -> None:
    game = table(
        "ann: 0-1 | bob: 0-3 | cid: 5-5 | dee: 0-4 | left 6 right 6", rules=NO_DRAW, teams=NS_EW
    )

    _, produced = steps(game, "ann passes", "bob passes", "cid passes")

    assert produced == [(), (), ()]  # three of the four players: no block yet
