"""Drawing and passing under the draw options until_playable, once and none (RULES.md 2-3)."""

from __future__ import annotations

from referee.domain.fouls import FoulKind
from referee.domain.rules import DrawRule, DrawWhileAble, Rules
from referee.domain.verdicts import FoulRecorded
from tests.notation import draw, ends, fouls, hand, pass_, rnd, steps, table, tiles, turn

ONCE = Rules(draw=DrawRule.ONCE)
NONE = Rules(draw=DrawRule.NONE)
UNTIL = Rules(draw=DrawRule.UNTIL_PLAYABLE)
STUCK = "ann: 1-1 | bob: 2-2 | cid: 0-0 | boneyard: 4-5 5-5 6-6 | left 3 right 6"
"""ann cannot play on 3 and 6 and the boneyard holds three tiles."""


# --- a legal draw -------------------------------------------------------------------------


def test_a_draw_moves_the_tile_from_the_boneyard_to_the_hand_and_keeps_the_turn() -> None:
    game = table(STUCK)

    after, verdicts = draw(game, "ann", "4-5")

    assert verdicts == ()
    assert hand(after, "ann") == tiles("1-1 4-5")
    assert rnd(after).boneyard == tiles("5-5 6-6")
    assert turn(after) == "ann"
    assert rnd(after).drew is True
    assert ends(after) == (3, 6)


def test_under_until_playable_a_player_draws_again_and_again() -> None:
    game = table(STUCK, rules=UNTIL)

    after, produced = steps(game, "ann draws 4-5", "ann draws 5-5", "ann draws 6-6")

    assert produced == [(), (), ()]
    assert hand(after, "ann") == tiles("1-1 4-5 5-5 6-6")
    assert rnd(after).boneyard == frozenset()


def test_a_drawn_tile_can_be_played_in_the_same_turn() -> None:
    game = table(STUCK, rules=ONCE)

    after, produced = steps(game, "ann draws 6-6", "ann plays 6-6 right")

    assert produced == [(), ()]
    assert turn(after) == "bob"
    assert hand(after, "ann") == tiles("1-1")


# --- draw fouls and their precedence -------------------------------------------------------


def test_under_draw_none_any_draw_is_rejected_as_draw_not_allowed() -> None:
    game = table("ann: 1-1 | bob: 2-2 | left 3 right 6", rules=NONE)

    after, verdicts = draw(game, "ann", "4-4")

    assert verdicts == (FoulRecorded("ann", FoulKind.DRAW_NOT_ALLOWED, applied=False, penalty=0),)
    assert after == game


def test_draw_not_allowed_beats_tile_not_in_boneyard_even_with_tiles_left_to_draw() -> None:
    game = table("ann: 1-1 | bob: 2-2 | boneyard: 4-4 | left 3 right 6", rules=NONE)

    after, verdicts = draw(game, "ann", "4-4")

    assert fouls(verdicts) == [("ann", FoulKind.DRAW_NOT_ALLOWED, False)]
    assert after == game


def test_drawing_from_an_empty_boneyard_is_rejected_as_boneyard_empty() -> None:
    game = table("ann: 1-1 | bob: 2-2 | left 3 right 6", rules=UNTIL)

    after, verdicts = draw(game, "ann", "4-4")

    assert verdicts == (FoulRecorded("ann", FoulKind.BONEYARD_EMPTY, applied=False, penalty=0),)
    assert after == game


def test_boneyard_empty_beats_tile_not_in_boneyard() -> None:
    game = table("ann: 1-1 | bob: 2-2 | left 3 right 6", rules=UNTIL)

    _, verdicts = draw(game, "ann", "2-2")

    assert fouls(verdicts) == [("ann", FoulKind.BONEYARD_EMPTY, False)]


def test_boneyard_empty_beats_draw_limit() -> None:
    game = table("ann: 1-1 | bob: 2-2 | left 3 right 6 | drew", rules=ONCE)

    _, verdicts = draw(game, "ann", "4-4")

    assert fouls(verdicts) == [("ann", FoulKind.BONEYARD_EMPTY, False)]


def test_drawing_a_tile_that_is_not_in_the_boneyard_is_rejected() -> None:
    game = table(STUCK)

    after, verdicts = draw(game, "ann", "2-2")

    assert verdicts == (
        FoulRecorded("ann", FoulKind.TILE_NOT_IN_BONEYARD, applied=False, penalty=0),
    )
    assert after == game


def test_drawing_a_tile_from_nowhere_is_rejected_as_tile_not_in_boneyard() -> None:
    game = table(STUCK)

    after, verdicts = draw(game, "ann", "0-1")

    assert fouls(verdicts) == [("ann", FoulKind.TILE_NOT_IN_BONEYARD, False)]
    assert after == game


def test_tile_not_in_boneyard_beats_draw_limit() -> None:
    game = table(STUCK + " | drew", rules=ONCE)

    _, verdicts = draw(game, "ann", "2-2")

    assert fouls(verdicts) == [("ann", FoulKind.TILE_NOT_IN_BONEYARD, False)]


def test_under_draw_once_a_second_draw_in_one_turn_is_rejected_as_draw_limit() -> None:
    game = table(STUCK, rules=ONCE)
    once, _ = draw(game, "ann", "4-5")

    after, verdicts = draw(once, "ann", "5-5")

    assert verdicts == (FoulRecorded("ann", FoulKind.DRAW_LIMIT, applied=False, penalty=0),)
    assert after == once
    assert rnd(after).boneyard == tiles("5-5 6-6")


def test_draw_limit_beats_draw_while_able() -> None:
    rules = Rules(draw=DrawRule.ONCE, draw_while_able=DrawWhileAble.FOUL)
    game = table("ann: 3-1 | bob: 2-2 | boneyard: 4-5 5-5 | left 3 right 6 | drew", rules=rules)

    _, verdicts = draw(game, "ann", "5-5")

    assert fouls(verdicts) == [("ann", FoulKind.DRAW_LIMIT, False)]


def test_the_draw_limit_is_per_turn_and_resets_after_a_play() -> None:
    game = table(
        "ann: 1-1 | bob: 2-2 | cid: 0-0 | boneyard: 6-3 5-5 1-2 | left 3 right 6", rules=ONCE
    )

    after, produced = steps(game, "ann draws 6-3", "ann plays 6-3 left", "bob draws 5-5")

    assert produced == [(), (), ()]
    assert hand(after, "bob") == tiles("2-2 5-5")


def test_the_draw_limit_is_per_turn_and_resets_after_a_pass() -> None:
    game = table(STUCK, rules=ONCE)

    after, produced = steps(game, "ann draws 4-5", "ann passes", "bob draws 5-5")

    assert produced == [(), (), ()]
    assert hand(after, "bob") == tiles("2-2 5-5")


# --- draw_while_able ----------------------------------------------------------------------


def test_drawing_while_able_to_play_is_allowed_by_default() -> None:
    game = table("ann: 3-1 | bob: 2-2 | boneyard: 4-4 | left 3 right 6")

    after, verdicts = draw(game, "ann", "4-4")

    assert verdicts == ()
    assert hand(after, "ann") == tiles("1-3 4-4")


def test_drawing_while_able_to_play_is_an_applied_foul_when_the_rules_say_so() -> None:
    rules = Rules(draw_while_able=DrawWhileAble.FOUL)
    game = table("ann: 3-1 | bob: 2-2 | boneyard: 4-4 0-0 | left 3 right 6", rules=rules)

    after, verdicts = draw(game, "ann", "4-4")

    assert verdicts == (FoulRecorded("ann", FoulKind.DRAW_WHILE_ABLE, applied=True, penalty=0),)
    assert hand(after, "ann") == tiles("1-3 4-4")
    assert rnd(after).boneyard == tiles("0-0")
    assert turn(after) == "ann"
    assert rnd(after).drew is True


def test_drawing_while_unable_to_play_is_no_foul_even_when_the_rules_make_it_one() -> None:
    rules = Rules(draw_while_able=DrawWhileAble.FOUL)
    game = table(STUCK, rules=rules)

    _, verdicts = draw(game, "ann", "4-5")

    assert verdicts == ()


def test_draw_while_able_is_judged_on_the_hand_before_the_draw() -> None:
    rules = Rules(draw_while_able=DrawWhileAble.FOUL)
    game = table(STUCK, rules=rules)

    _, verdicts = draw(game, "ann", "6-6")

    assert verdicts == ()


# --- passing before drawing ---------------------------------------------------------------


def test_under_until_playable_passing_without_drawing_is_an_applied_pass_before_drawing() -> None:
    game = table(STUCK, rules=UNTIL)

    after, verdicts = pass_(game, "ann")

    assert verdicts == (FoulRecorded("ann", FoulKind.PASS_BEFORE_DRAWING, applied=True, penalty=0),)
    assert turn(after) == "bob"
    assert hand(after, "ann") == tiles("1-1")
    assert rnd(after).boneyard == tiles("4-5 5-5 6-6")


def test_under_until_playable_passing_after_one_draw_with_tiles_left_is_still_a_foul() -> None:
    game = table(STUCK, rules=UNTIL)
    game, _ = draw(game, "ann", "4-5")

    _, verdicts = pass_(game, "ann")

    assert fouls(verdicts) == [("ann", FoulKind.PASS_BEFORE_DRAWING, True)]


def test_under_until_playable_passing_once_the_boneyard_is_drawn_empty_is_legitimate() -> None:
    game = table("ann: 1-1 | bob: 2-2 | boneyard: 4-5 | left 3 right 6", rules=UNTIL)

    after, produced = steps(game, "ann draws 4-5", "ann passes")

    assert produced == [(), ()]
    assert turn(after) == "bob"


def test_under_once_passing_without_drawing_is_a_pass_before_drawing() -> None:
    game = table(STUCK, rules=ONCE)

    _, verdicts = pass_(game, "ann")

    assert fouls(verdicts) == [("ann", FoulKind.PASS_BEFORE_DRAWING, True)]


def test_under_once_passing_after_one_unplayable_draw_is_legitimate() -> None:
    game = table(STUCK, rules=ONCE)

    after, produced = steps(game, "ann draws 4-5", "ann passes")

    assert produced == [(), ()]
    assert turn(after) == "bob"
    assert rnd(after).drew is False


def test_under_draw_none_a_player_who_cannot_play_passes_legitimately() -> None:
    game = table("ann: 1-1 | bob: 2-2 | cid: 3-3 | left 4 right 6", rules=NONE)

    after, verdicts = pass_(game, "ann")

    assert verdicts == ()
    assert turn(after) == "bob"


def test_false_pass_beats_pass_before_drawing() -> None:
    game = table("ann: 3-1 | bob: 2-2 | boneyard: 4-4 | left 3 right 6", rules=UNTIL)

    _, verdicts = pass_(game, "ann")

    assert fouls(verdicts) == [("ann", FoulKind.FALSE_PASS, True)]


def test_passing_after_drawing_a_playable_tile_is_a_false_pass() -> None:
    game = table(STUCK, rules=ONCE)
    game, _ = draw(game, "ann", "6-6")

    _, verdicts = pass_(game, "ann")

    assert fouls(verdicts) == [("ann", FoulKind.FALSE_PASS, True)]


def test_a_pass_resets_the_drawn_flag_for_the_next_player() -> None:
    game = table(STUCK, rules=ONCE)

    after, _ = steps(game, "ann draws 4-5", "ann passes")

    assert rnd(after).drew is False
    _, verdicts = pass_(after, "bob")
    assert fouls(verdicts) == [("bob", FoulKind.PASS_BEFORE_DRAWING, True)]
