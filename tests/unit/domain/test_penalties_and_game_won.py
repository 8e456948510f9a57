"""Foul penalties, cumulative scores across rounds, target_score and GameWon (RULES.md 3, 5)."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from referee.domain.errors import InvalidInput, RejectionReason
from referee.domain.events import End, GameStarted, Passed, RoundStarted, TileDrawn, TilePlayed
from referee.domain.fouls import FoulKind
from referee.domain.judge import judge
from referee.domain.rules import DrawWhileAble, Rounding, Rules, TiePolicy
from referee.domain.state import GameState
from referee.domain.verdicts import FoulRecorded, GameWon, RoundScored
from tests.notation import (
    deal,
    dealt,
    draw,
    everyone_passes,
    kinds,
    next_round,
    only,
    pass_,
    play,
    rnd,
    scores,
    steps,
    table,
)


def _penalties(**points: int) -> Rules:
    return Rules(foul_penalty=MappingProxyType({FoulKind(k): v for k, v in points.items()}))


# --- penalties ----------------------------------------------------------------------------


def test_an_applied_foul_deducts_its_penalty_when_it_is_recorded() -> None:
    game = table("ann: 3-4 | bob: 1-2 | left 3 right 6", rules=_penalties(false_pass=5))

    after, verdicts = pass_(game, "ann")

    assert verdicts == (FoulRecorded("ann", FoulKind.FALSE_PASS, applied=True, penalty=5),)
    assert scores(after) == {"ann": -5, "bob": 0}


def test_a_rejected_foul_deducts_its_penalty_too_but_changes_nothing_else() -> None:
    # RULES.md 3: "deducted ... when the foul is recorded"; the implementation reads this as
    # applying to rejected fouls as well, while the round itself stays exactly as it was.
    game = table("ann: 3-4 | bob: 1-2 | left 3 right 6", rules=_penalties(out_of_turn=3))

    after, verdicts = play(game, "bob", "1-2", "left")

    assert verdicts == (FoulRecorded("bob", FoulKind.OUT_OF_TURN, applied=False, penalty=3),)
    assert scores(after) == {"ann": 0, "bob": -3}
    assert after.round == game.round


def test_a_foul_kind_without_a_penalty_costs_nothing_when_others_have_one() -> None:
    game = table("ann: 3-4 | bob: 1-2 | left 3 right 6", rules=_penalties(out_of_turn=3))

    after, verdicts = pass_(game, "ann")

    assert verdicts == (FoulRecorded("ann", FoulKind.FALSE_PASS, applied=True, penalty=0),)
    assert scores(after) == {"ann": 0, "bob": 0}


def test_each_foul_kind_is_charged_its_own_penalty() -> None:
    rules = _penalties(draw_while_able=2, false_pass=7, tile_not_in_boneyard=11)
    rules = Rules(
        draw_while_able=DrawWhileAble.FOUL,
        foul_penalty=rules.foul_penalty,
    )
    game = table("ann: 3-4 | bob: 1-2 | boneyard: 5-5 0-0 | left 3 right 6", rules=rules)

    after, produced = steps(game, "ann draws 2-2", "ann draws 5-5", "ann passes")

    assert [v[0] for v in produced] == [
        FoulRecorded("ann", FoulKind.TILE_NOT_IN_BONEYARD, applied=False, penalty=11),
        FoulRecorded("ann", FoulKind.DRAW_WHILE_ABLE, applied=True, penalty=2),
        FoulRecorded("ann", FoulKind.FALSE_PASS, applied=True, penalty=7),
    ]
    assert scores(after) == {"ann": -20, "bob": 0}


def test_penalties_are_part_of_the_cumulative_score_when_the_round_is_scored() -> None:
    game = table("ann: 3-1 | bob: 2-2 | left 3 right 6", rules=_penalties(false_pass=5))

    after, produced = steps(game, "ann passes", "bob passes", "ann plays 3-1 left")

    scored = only(produced[-1], RoundScored)
    assert scored.awards == {"ann": 4, "bob": 0}
    assert scored.cumulative == {"ann": -1, "bob": 0}
    assert scores(after) == {"ann": -1, "bob": 0}


# --- cumulative scores --------------------------------------------------------------------


def test_cumulative_scores_add_up_across_rounds() -> None:
    game = deal("ann: 3-3 | bob: 1-2 4-4")
    game, verdicts = play(game, "ann", "3-3")
    assert only(verdicts, RoundScored).cumulative == {"ann": 11, "bob": 0}

    game = next_round(game, "ann: 0-1 2-2 | bob: 5-5 | leader bob")
    game, verdicts = play(game, "bob", "5-5")

    scored = only(verdicts, RoundScored)
    assert scored.awards == {"ann": 0, "bob": 5}
    assert scored.cumulative == {"ann": 11, "bob": 5}
    assert rnd(game).round_number == 2


# --- target_score and GameWon -------------------------------------------------------------

DOMINO_FOR_10 = "ann: 3-3 | bob: 4-6 | left 3 right 2"
"""ann goes out with [3,3]; bob is left holding 10 pips."""


def test_reaching_the_target_exactly_wins_the_game() -> None:
    game = table(DOMINO_FOR_10, rules=Rules(target_score=10))

    after, verdicts = play(game, "ann", "3-3", "left")

    assert kinds(verdicts) == ["RoundScored", "GameWon"]
    assert verdicts[1] == GameWon("ann", {"ann": 10, "bob": 0})
    assert after.winner == "ann"
    assert after.is_over is True


def test_falling_one_short_of_the_target_wins_nothing() -> None:
    game = table(DOMINO_FOR_10, rules=Rules(target_score=11))

    after, verdicts = play(game, "ann", "3-3", "left")

    assert kinds(verdicts) == ["RoundScored"]
    assert after.winner is None


def test_the_target_counts_the_cumulative_score_not_the_round_award() -> None:
    game = table(DOMINO_FOR_10, rules=Rules(target_score=25), scores={"ann": 15})

    after, verdicts = play(game, "ann", "3-3", "left")

    assert only(verdicts, GameWon) == GameWon("ann", {"ann": 25, "bob": 0})
    assert after.winner == "ann"


def test_penalties_count_against_the_target() -> None:
    game = table(DOMINO_FOR_10, rules=Rules(target_score=25), scores={"ann": 14})

    _, verdicts = play(game, "ann", "3-3", "left")

    assert kinds(verdicts) == ["RoundScored"]


def test_without_a_target_nobody_ever_wins_the_game() -> None:
    game = table(DOMINO_FOR_10, scores={"ann": 10_000})

    after, verdicts = play(game, "ann", "3-3", "left")

    assert kinds(verdicts) == ["RoundScored"]
    assert after.winner is None


def test_a_blocked_round_that_wins_the_game_announces_block_score_and_win_in_order() -> None:
    game = table("ann: 1-2 | bob: 4-5 | left 6 right 6", rules=Rules(target_score=9))

    _, verdicts = everyone_passes(game)

    assert kinds(verdicts) == ["BlockDeclared", "RoundScored", "GameWon"]
    assert verdicts[2] == GameWon("ann", {"ann": 9, "bob": 0})


SPLIT_4_EACH = "ann: 1-3 | bob: 0-4 | cid: 4-5 | left 6 right 6"
"""A blocked round in which ann and bob tie on 4 and, under split, get 4 each."""


def test_when_several_reach_the_target_the_highest_wins() -> None:
    rules = Rules(target_score=10, tie=TiePolicy.SPLIT)
    game = table(SPLIT_4_EACH, rules=rules, scores={"ann": 6, "bob": 9})

    after, verdicts = everyone_passes(game)

    assert only(verdicts, GameWon) == GameWon("bob", {"ann": 10, "bob": 13, "cid": 0})
    assert after.winner == "bob"


def test_a_player_already_past_the_target_wins_when_the_tie_at_the_top_is_broken() -> None:
    rules = Rules(target_score=10, tie=TiePolicy.SPLIT)
    game = table(SPLIT_4_EACH, rules=rules, scores={"ann": 9, "bob": 6, "cid": 2})

    _, verdicts = everyone_passes(game)

    assert only(verdicts, GameWon) == GameWon("ann", {"ann": 13, "bob": 10, "cid": 2})


def test_an_exact_tie_at_the_top_waits_for_the_next_round() -> None:
    rules = Rules(target_score=10, tie=TiePolicy.SPLIT)
    game = table(SPLIT_4_EACH, rules=rules, scores={"ann": 8, "bob": 8})

    after, verdicts = everyone_passes(game)

    assert kinds(verdicts) == ["BlockDeclared", "RoundScored"]
    assert only(verdicts, RoundScored).cumulative == {"ann": 12, "bob": 12, "cid": 0}
    assert after.winner is None

    after = next_round(after, "ann: 1-1 | bob: 3-3 | cid: 0-2 | leader cid")
    after, verdicts = play(after, "cid", "0-2")
    assert kinds(verdicts) == ["RoundScored"]
    assert only(verdicts, RoundScored).cumulative == {"ann": 12, "bob": 12, "cid": 8}
    assert after.winner is None

    after = next_round(after, "ann: 1-1 | bob: 3-3 | cid: 0-2 | leader bob")
    after, verdicts = play(after, "bob", "3-3")
    assert only(verdicts, GameWon) == GameWon("bob", {"ann": 12, "bob": 16, "cid": 8})


# --- after GameWon ------------------------------------------------------------------------


def _won() -> GameState:
    game = table(DOMINO_FOR_10, rules=Rules(target_score=10))
    game, _ = play(game, "ann", "3-3", "left")
    assert game.winner == "ann"
    return game


@pytest.mark.parametrize(
    "event",
    [
        RoundStarted(2, {"ann": ((1, 1),), "bob": ((2, 2),)}, (), "ann"),
        TilePlayed(1, "bob", (4, 6), End.LEFT),
        TileDrawn(1, "bob", (0, 0)),
        Passed(1, "bob"),
        Passed(2, "ann"),
        Passed(1, "zed"),
    ],
)
def test_anything_after_game_won_is_game_over(
    event: RoundStarted | TilePlayed | TileDrawn | Passed,
) -> None:
    with pytest.raises(InvalidInput) as raised:
        judge(_won(), event)

    assert raised.value.reason is RejectionReason.GAME_OVER


def test_a_game_started_after_game_won_is_invalid_input() -> None:
    # EVENTS.md lists both `game_already_started` ("a second GameStarted") and `game_over`
    # ("anything after GameWon") for this case without saying which one decides.
    with pytest.raises(InvalidInput) as raised:
        judge(_won(), GameStarted(("ann", "bob"), Rules()))

    assert raised.value.reason in {
        RejectionReason.GAME_OVER,
        RejectionReason.GAME_ALREADY_STARTED,
    }


def test_the_target_score_game_of_the_golden_log_is_won_by_ann_with_65() -> None:
    rules = Rules(
        target_score=65,
        rounding=Rounding.NEAREST_5,
        double_blank=25,
        foul_penalty=MappingProxyType({FoulKind.FALSE_PASS: 10}),
    )
    game = deal(
        "ann: 3-3 3-6 | bob: 3-5 4-4 0-3 | cid: 1-2 2-4 | boneyard: 0-1 2-3",
        rules=rules,
    )

    game, produced = steps(
        game,
        "ann plays 3-3",
        "bob passes",
        "cid draws 0-1",
        "cid draws 2-3",
        "cid plays 3-2 right",
        "ann plays 3-6 left",
    )

    assert produced[1] == (FoulRecorded("bob", FoulKind.FALSE_PASS, applied=True, penalty=10),)
    scored = only(produced[-1], RoundScored)
    assert scored.awards == {"ann": 30, "bob": 0, "cid": 0}
    assert scored.cumulative == {"ann": 30, "bob": -10, "cid": 0}

    game, _ = judge(
        game, dealt("ann: 4-3 1-1 0-2 | bob: 6-6 0-0 | cid: 6-4 1-2 1-4 | leader bob", 2)
    )
    game, produced = steps(
        game,
        "bob plays 6-6",
        "cid plays 6-4 right",
        "ann plays 4-3 right",
        "bob passes",
        "cid passes",
        "ann passes",
    )

    assert kinds(produced[-1]) == ["BlockDeclared", "RoundScored", "GameWon"]
    scored = only(produced[-1], RoundScored)
    assert scored.pip_counts == {"ann": 4, "bob": 25, "cid": 8}
    assert scored.awards == {"ann": 35, "bob": 0, "cid": 0}
    assert only(produced[-1], GameWon) == GameWon("ann", {"ann": 65, "bob": -10, "cid": 0})


def test_a_draw_that_is_a_foul_does_not_by_itself_end_the_game() -> None:
    rules = Rules(target_score=1, foul_penalty=MappingProxyType({FoulKind.BONEYARD_EMPTY: 1}))
    game = table("ann: 3-4 | bob: 1-2 | left 3 right 6", rules=rules)

    after, verdicts = draw(game, "ann", "0-0")

    assert kinds(verdicts) == ["FoulRecorded"]
    assert after.winner is None
