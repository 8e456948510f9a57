"""Penalty scoring (RULES.md 5.3), ``rounds`` (5.2) and ``boneyard_reserve`` (section 1)."""

from __future__ import annotations

from referee.domain.fouls import FoulKind
from referee.domain.rules import (
    BlockConfirmation,
    DrawRule,
    DrawWhileAble,
    Layout,
    Rules,
    Scoring,
)
from referee.domain.verdicts import BlockDeclared, FoulRecorded, GameWon, RoundScored
from tests.notation import (
    draw,
    fouls,
    kinds,
    only,
    pass_,
    play,
    rnd,
    scores,
    steps,
    table,
)

PENALTY = Rules.of(draw=DrawRule.NONE, scoring=Scoring.PENALTY)
CLOSED = "ann: 1-1 | bob: 2-4 | cid: 0-5 5-5 | left 6 right 3 | chain ann bob | turn cid"
"""cid's pass completes the chain: ann 2 pips, bob 6, cid 15."""


# --- penalty scoring ---------------------------------------------------------------------------


def test_trains_score_by_penalty_and_draw_once_unless_told_otherwise() -> None:
    rules = Rules.of(layout=Layout.TRAINS)

    assert (rules.scoring, rules.draw) == (Scoring.PENALTY, DrawRule.ONCE)
    assert Rules.of(layout=Layout.TRAINS, scoring=Scoring.AWARD).scoring is Scoring.AWARD
    assert (Rules.of().scoring, Rules.of().draw) == (Scoring.AWARD, DrawRule.UNTIL_PLAYABLE)


def test_under_penalty_scoring_every_player_adds_their_own_pips() -> None:
    game = table(CLOSED, rules=PENALTY, scores={"ann": 10, "bob": 0, "cid": 3})

    after, verdicts = pass_(game, "cid")

    scored = only(verdicts, RoundScored)
    assert scored.scoring is Scoring.PENALTY
    assert scored.awards == {"ann": 2, "bob": 6, "cid": 15}
    assert scored.cumulative == {"ann": 12, "bob": 6, "cid": 18}
    assert scored.winners == ("ann",)  # the lowest pip count, announced; nothing extra
    assert scored.tie is False
    assert scores(after) == {"ann": 12, "bob": 6, "cid": 18}


def test_under_penalty_scoring_players_sharing_the_lowest_count_all_win_the_round() -> None:
    game = table(
        "ann: 1-1 | bob: 0-2 | cid: 0-5 | left 6 right 3 | chain ann bob | turn cid", rules=PENALTY
    )

    _, verdicts = pass_(game, "cid")

    scored = only(verdicts, RoundScored)
    assert scored.winners == ("ann", "bob")
    assert scored.tie is True
    assert scored.awards == {"ann": 2, "bob": 2, "cid": 5}


def test_under_penalty_scoring_the_player_who_goes_out_adds_nothing() -> None:
    game = table("ann: 3-4 | bob: 2-2 | cid: 0-5 | left 3 right 6", rules=PENALTY)

    _, verdicts = play(game, "ann", "3-4", "left")

    scored = only(verdicts, RoundScored)
    assert scored.winners == ("ann",)
    assert scored.awards == {"ann": 0, "bob": 4, "cid": 5}


def test_under_penalty_scoring_a_foul_penalty_is_added() -> None:
    rules = Rules.of(
        draw=DrawRule.NONE, scoring=Scoring.PENALTY, foul_penalty={FoulKind.FALSE_PASS: 7}
    )
    game = table("ann: 6-1 | bob: 2-2 | left 6 right 3", rules=rules)

    after, verdicts = pass_(game, "ann")

    assert verdicts == (FoulRecorded("ann", FoulKind.FALSE_PASS, applied=True, penalty=7),)
    assert scores(after) == {"ann": 7, "bob": 0}


def test_under_penalty_scoring_the_game_ends_at_the_target_and_the_lowest_wins() -> None:
    rules = Rules.of(draw=DrawRule.NONE, scoring=Scoring.PENALTY, target_score=20)
    short = table(CLOSED, rules=rules, scores={"ann": 10, "bob": 12, "cid": 3})
    _, verdicts = pass_(short, "cid")
    assert kinds(verdicts) == ["BlockDeclared", "RoundScored"]  # 12, 18, 18: none at 20

    game = table(CLOSED, rules=rules, scores={"ann": 10, "bob": 12, "cid": 6})
    after, verdicts = pass_(game, "cid")

    # cid reaches 21 >= 20: the game ends, and ann's 12 is the lowest score.
    assert only(verdicts, GameWon) == GameWon(
        "ann", {"ann": 12, "bob": 18, "cid": 21}, winners=("ann",)
    )
    assert after.winner == "ann"


def test_under_penalty_scoring_players_tied_lowest_are_joint_winners() -> None:
    rules = Rules.of(draw=DrawRule.NONE, scoring=Scoring.PENALTY, rounds=1)
    game = table(CLOSED, rules=rules, scores={"ann": 4, "bob": 0, "cid": 0})

    _, verdicts = pass_(game, "cid")

    assert only(verdicts, GameWon) == GameWon(
        "ann", {"ann": 6, "bob": 6, "cid": 15}, winners=("ann", "bob")
    )


# --- rounds ----------------------------------------------------------------------------------


def test_the_game_does_not_end_before_round_rounds_is_scored() -> None:
    rules = Rules(draw=DrawRule.NONE, rounds=2)
    game = table(CLOSED, rules=rules)

    after, verdicts = pass_(game, "cid")

    assert kinds(verdicts) == ["BlockDeclared", "RoundScored"]
    assert after.winner is None


def test_once_round_rounds_is_scored_the_highest_score_wins() -> None:
    rules = Rules(draw=DrawRule.NONE, rounds=2)
    game = table(CLOSED + " | round 2", rules=rules, scores={"ann": 0, "bob": 23, "cid": 0})

    _, verdicts = pass_(game, "cid")

    assert only(verdicts, RoundScored).awards == {"ann": 21, "bob": 0, "cid": 0}
    assert only(verdicts, GameWon) == GameWon(
        "bob", {"ann": 21, "bob": 23, "cid": 0}, winners=("bob",)
    )


def test_once_round_rounds_is_scored_players_tied_highest_are_joint_winners() -> None:
    rules = Rules(draw=DrawRule.NONE, rounds=2)
    game = table(CLOSED + " | round 2", rules=rules, scores={"ann": 0, "bob": 21, "cid": 0})

    _, verdicts = pass_(game, "cid")

    assert only(verdicts, GameWon) == GameWon(
        "ann", {"ann": 21, "bob": 21, "cid": 0}, winners=("ann", "bob")
    )


def test_rounds_ends_the_game_even_when_the_target_is_tied() -> None:
    rules = Rules(draw=DrawRule.NONE, rounds=2, target_score=20)
    game = table(CLOSED + " | round 2", rules=rules, scores={"ann": 0, "bob": 21, "cid": 0})

    _, verdicts = pass_(game, "cid")

    # ann reaches 21 = bob's 21: a tie at the target would wait, but this is the last round.
    assert only(verdicts, GameWon).winners == ("ann", "bob")


def test_without_rounds_a_tie_at_the_target_waits_for_another_round() -> None:
    rules = Rules(draw=DrawRule.NONE, target_score=20)
    game = table(CLOSED + " | round 2", rules=rules, scores={"ann": 0, "bob": 21, "cid": 0})

    after, verdicts = pass_(game, "cid")

    assert kinds(verdicts) == ["BlockDeclared", "RoundScored"]
    assert after.winner is None


# --- boneyard_reserve ------------------------------------------------------------------------

RESERVE = Rules(boneyard_reserve=2)


def test_a_boneyard_at_its_reserve_is_exhausted_and_cannot_be_drawn_from() -> None:
    game = table("ann: 1-1 | bob: 2-4 | boneyard: 0-0 0-1 | left 6 right 3", rules=RESERVE)

    after, verdicts = draw(game, "ann", "0-0")

    assert verdicts == (FoulRecorded("ann", FoulKind.BONEYARD_EMPTY, applied=False, penalty=0),)
    assert after == game


def test_above_its_reserve_the_boneyard_may_be_drawn_from() -> None:
    game = table("ann: 1-1 | bob: 2-4 | boneyard: 0-0 0-1 0-2 | left 6 right 3", rules=RESERVE)

    after, verdicts = draw(game, "ann", "0-0")

    assert verdicts == ()
    assert rnd(after).boneyard_mask.bit_count() == 2


def test_a_pass_with_only_the_reserve_left_is_legitimate_and_proposes_the_block() -> None:
    game = table("ann: 1-1 | bob: 2-4 | boneyard: 0-0 0-1 | left 6 right 3", rules=RESERVE)

    after, produced = steps(game, "ann passes", "bob passes")

    assert produced[0] == ()
    declared = only(produced[1], BlockDeclared)
    assert declared.confirmed_by == ("ann", "bob")
    assert declared.pip_counts == {"ann": 2, "bob": 6}  # the reserve is no one's
    assert rnd(after).ended


def test_with_tiles_above_the_reserve_a_pass_before_drawing_is_a_foul() -> None:
    game = table("ann: 1-1 | bob: 2-4 | boneyard: 0-0 0-1 0-2 | left 6 right 3", rules=RESERVE)

    _, verdicts = pass_(game, "ann")

    assert fouls(verdicts) == [("ann", FoulKind.PASS_BEFORE_DRAWING, True)]


def test_an_immediate_block_holds_with_the_reserve_still_in_the_boneyard() -> None:
    rules = Rules(boneyard_reserve=1, block_confirmation=BlockConfirmation.IMMEDIATE)
    game = table("ann: 1-6 2-2 | bob: 2-4 | boneyard: 0-0 | left 6 right 3", rules=rules)

    _, verdicts = play(game, "ann", "6-1", "left")

    assert kinds(verdicts) == ["BlockDeclared", "RoundScored"]


def test_draw_while_able_still_applies_above_the_reserve() -> None:
    rules = Rules(boneyard_reserve=1, draw_while_able=DrawWhileAble.FOUL)
    game = table("ann: 6-1 | bob: 2-4 | boneyard: 0-0 0-1 | left 6 right 3", rules=rules)

    _, verdicts = draw(game, "ann", "0-0")

    assert fouls(verdicts) == [("ann", FoulKind.DRAW_WHILE_ABLE, True)]
