"""Judging plays and passes (RULES.md section 3): rejected fouls change nothing, applied stand."""

from __future__ import annotations

import pytest

from referee.domain.fouls import FoulKind
from referee.domain.judge import Judgement
from referee.domain.rules import DrawRule, Rules
from referee.domain.state import GameState
from referee.domain.verdicts import FoulRecorded
from tests.notation import draw, ends, fouls, hand, pass_, play, rnd, table, tiles, turn

MID_ROUND = "ann: 3-4 5-5 | bob: 1-2 6-6 | cid: 0-0 2-4 | boneyard: 1-1 | left 3 right 6 | turn ann"


def _rejected_as(judgement: Judgement, before: GameState, player: str, kind: FoulKind) -> None:
    after, verdicts = judgement
    assert verdicts == (FoulRecorded(player, kind, applied=False, penalty=0),)
    assert after == before


# --- out_of_turn --------------------------------------------------------------------------


def test_a_play_by_a_player_whose_turn_it_is_not_is_rejected_as_out_of_turn() -> None:
    game = table(MID_ROUND)

    _rejected_as(play(game, "bob", "6-6", "right"), game, "bob", FoulKind.OUT_OF_TURN)


def test_a_draw_by_a_player_whose_turn_it_is_not_is_rejected_as_out_of_turn() -> None:
    game = table(MID_ROUND)

    _rejected_as(draw(game, "cid", "1-1"), game, "cid", FoulKind.OUT_OF_TURN)


def test_a_pass_by_a_player_whose_turn_it_is_not_is_rejected_as_out_of_turn() -> None:
    game = table(MID_ROUND)

    _rejected_as(pass_(game, "bob"), game, "bob", FoulKind.OUT_OF_TURN)


def test_out_of_turn_beats_tile_not_in_hand() -> None:
    game = table(MID_ROUND)

    _rejected_as(play(game, "bob", "3-4", "left"), game, "bob", FoulKind.OUT_OF_TURN)


def test_out_of_turn_beats_every_draw_foul() -> None:
    game = table("ann: 3-4 | bob: 1-2 | left 3 right 6", rules=Rules(draw=DrawRule.NONE))

    _rejected_as(draw(game, "bob", "5-5"), game, "bob", FoulKind.OUT_OF_TURN)


def test_out_of_turn_beats_false_pass() -> None:
    game = table(MID_ROUND)

    _rejected_as(pass_(game, "cid"), game, "cid", FoulKind.OUT_OF_TURN)


# --- plays --------------------------------------------------------------------------------


def test_playing_a_tile_another_player_holds_is_rejected_as_tile_not_in_hand() -> None:
    game = table(MID_ROUND)

    _rejected_as(play(game, "ann", "6-6", "right"), game, "ann", FoulKind.TILE_NOT_IN_HAND)


def test_playing_a_boneyard_tile_is_rejected_as_tile_not_in_hand() -> None:
    game = table("ann: 3-4 | bob: 1-2 | boneyard: 3-3 | left 3 right 6")

    _rejected_as(play(game, "ann", "3-3", "left"), game, "ann", FoulKind.TILE_NOT_IN_HAND)


def test_tile_not_in_hand_beats_tile_does_not_match() -> None:
    game = table(MID_ROUND)

    _rejected_as(play(game, "ann", "1-2", "left"), game, "ann", FoulKind.TILE_NOT_IN_HAND)


def test_tile_not_in_hand_beats_end_missing() -> None:
    game = table(MID_ROUND)

    _rejected_as(play(game, "ann", "6-6"), game, "ann", FoulKind.TILE_NOT_IN_HAND)


def test_playing_a_held_tile_on_an_end_it_does_not_show_is_rejected_as_tile_does_not_match() -> (
    None
):
    game = table(MID_ROUND)

    _rejected_as(play(game, "ann", "5-5", "left"), game, "ann", FoulKind.TILE_DOES_NOT_MATCH)


def test_playing_on_a_laid_out_line_without_naming_an_end_is_rejected_as_end_missing() -> None:
    game = table(MID_ROUND)

    _rejected_as(play(game, "ann", "3-4"), game, "ann", FoulKind.END_MISSING)


def test_end_missing_is_recorded_even_when_the_tile_would_match_no_end() -> None:
    game = table(MID_ROUND)

    _rejected_as(play(game, "ann", "5-5"), game, "ann", FoulKind.END_MISSING)


def test_the_first_tile_needs_no_end() -> None:
    game = table("ann: 3-4 5-5 | bob: 1-2")

    after, verdicts = play(game, "ann", "5-5")

    assert verdicts == ()
    assert ends(after) == (5, 5)
    assert turn(after) == "bob"


def test_a_legal_play_records_nothing_and_passes_the_turn() -> None:
    game = table(MID_ROUND)

    after, verdicts = play(game, "ann", "3-4", "left")

    assert verdicts == ()
    assert ends(after) == (4, 6)
    assert hand(after, "ann") == tiles("5-5")
    assert turn(after) == "bob"


def test_a_rejected_play_leaves_the_hand_layout_boneyard_turn_and_drawn_flag_as_they_were() -> None:
    game = table("ann: 1-1 5-5 | bob: 2-2 | boneyard: 4-4 | left 3 right 6 | drew")

    after, verdicts = play(game, "ann", "5-5", "left")

    assert [v.foul for v in verdicts if isinstance(v, FoulRecorded)] == [
        FoulKind.TILE_DOES_NOT_MATCH
    ]
    assert hand(after, "ann") == tiles("1-1 5-5")
    assert rnd(after).boneyard == tiles("4-4")
    assert ends(after) == (3, 6)
    assert turn(after) == "ann"
    assert rnd(after).drew is True
    assert after.scores == (0, 0)


# --- passes -------------------------------------------------------------------------------


def test_a_pass_while_holding_a_playable_tile_is_a_false_pass_and_stands() -> None:
    game = table("ann: 3-4 | bob: 1-2 | cid: 0-0 | left 3 right 6")

    after, verdicts = pass_(game, "ann")

    assert verdicts == (FoulRecorded("ann", FoulKind.FALSE_PASS, applied=True, penalty=0),)
    assert turn(after) == "bob"
    assert hand(after, "ann") == tiles("3-4")
    assert ends(after) == (3, 6)


def test_a_pass_on_an_empty_layout_is_a_false_pass() -> None:
    game = table("ann: 3-4 | bob: 1-2")

    _, verdicts = pass_(game, "ann")

    assert fouls(verdicts) == [("ann", FoulKind.FALSE_PASS, True)]


def test_a_pass_holding_a_tile_that_matches_only_the_right_end_is_a_false_pass() -> None:
    game = table("ann: 6-1 | bob: 1-2 | left 3 right 6", rules=Rules(draw=DrawRule.NONE))

    _, verdicts = pass_(game, "ann")

    assert fouls(verdicts) == [("ann", FoulKind.FALSE_PASS, True)]


def test_a_pass_by_a_player_who_cannot_play_with_an_empty_boneyard_is_legitimate() -> None:
    game = table("ann: 1-1 | bob: 1-2 | cid: 3-3 | left 3 right 6")

    after, verdicts = pass_(game, "ann")

    assert verdicts == ()
    assert turn(after) == "bob"


@pytest.mark.parametrize("player", ["ann", "bob"])
def test_every_rejected_foul_kind_is_announced_as_not_applied(player: str) -> None:
    game = table(MID_ROUND)

    _, verdicts = play(game, player, "0-0", "left")

    assert len(verdicts) == 1
    assert isinstance(verdicts[0], FoulRecorded)
    assert verdicts[0].applied is False
    assert verdicts[0].foul is (
        FoulKind.TILE_NOT_IN_HAND if player == "ann" else FoulKind.OUT_OF_TURN
    )


def test_the_foul_kinds_that_stand_are_exactly_draw_while_able_false_pass_and_pass_before() -> None:
    applied = {k for k in FoulKind if not k.is_rejected}

    assert applied == {
        FoulKind.DRAW_WHILE_ABLE,
        FoulKind.FALSE_PASS,
        FoulKind.PASS_BEFORE_DRAWING,
    }
