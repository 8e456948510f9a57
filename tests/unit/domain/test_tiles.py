"""Tiles on the line: the first tile opens it as written; a matched end shows the other half."""

from __future__ import annotations

from referee.domain.events import End
from referee.domain.state import Move
from referee.domain.tiles import bit_of, mask_pips, tile
from tests.notation import deal, draw, ends, hand, kinds, play, rnd, table, tiles, turn


def test_the_first_tile_opens_left_with_its_first_written_value_and_right_with_its_second() -> None:
    game = deal("ann: 5-3 1-1 | bob: 2-2")

    after, verdicts = play(game, "ann", "5-3")

    assert verdicts == ()
    assert ends(after) == (5, 3)


def test_the_first_tile_written_the_other_way_round_opens_the_line_the_other_way() -> None:
    game = deal("ann: 5-3 1-1 | bob: 2-2")

    after, _ = play(game, "ann", "3-5")

    assert ends(after) == (3, 5)


def test_a_tile_played_on_the_left_end_leaves_its_other_half_showing_there() -> None:
    game = table("ann: 3-6 1-1 | bob: 2-2 | left 3 right 7")

    after, verdicts = play(game, "ann", "3-6", "left")

    assert verdicts == ()
    assert ends(after) == (6, 7)


def test_a_tile_played_on_the_right_end_leaves_its_other_half_showing_there() -> None:
    game = table("ann: 2-7 1-1 | bob: 2-2 | left 3 right 7")

    after, _ = play(game, "ann", "2-7", "right")

    assert ends(after) == (3, 2)


def test_the_matching_half_may_be_written_first_or_second() -> None:
    game = table("ann: 3-6 1-1 | bob: 2-2 | left 3 right 7")

    after, verdicts = play(game, "ann", "6-3", "left")

    assert verdicts == ()
    assert ends(after) == (6, 7)
    assert hand(after, "ann") == tiles("1-1")


def test_a_double_leaves_the_end_showing_the_same_value() -> None:
    game = table("ann: 4-4 1-1 | bob: 2-2 | left 4 right 5")

    after, verdicts = play(game, "ann", "4-4", "left")

    assert verdicts == ()
    assert ends(after) == (4, 5)
    assert hand(after, "ann") == tiles("1-1")


def test_a_tile_that_shows_both_ends_goes_on_the_end_that_was_named() -> None:
    game = table("ann: 3-7 1-1 | bob: 2-2 | left 3 right 7")

    after, _ = play(game, "ann", "3-7", "right")

    assert ends(after) == (3, 3)


def test_a_tile_that_matches_only_the_other_end_does_not_match_the_named_end() -> None:
    game = table("ann: 7-1 1-1 | bob: 2-2 | left 3 right 7")

    after, verdicts = play(game, "ann", "7-1", "left")

    assert kinds(verdicts) == ["FoulRecorded"]
    assert after == game


def test_a_played_tile_leaves_the_hand_and_the_turn_passes_clockwise() -> None:
    game = table("ann: 1-1 | bob: 3-4 2-2 | cid: 0-0 | left 3 right 7 | turn bob")

    after, _ = play(game, "bob", "3-4", "left")

    assert hand(after, "bob") == tiles("2-2")
    assert turn(after) == "cid"
    assert rnd(after).boneyard == rnd(game).boneyard


def test_the_turn_wraps_from_the_last_seat_to_the_first() -> None:
    game = table("ann: 1-1 | bob: 2-2 | cid: 3-4 0-0 | left 3 right 7 | turn cid")

    after, _ = play(game, "cid", "3-4", "left")

    assert turn(after) == "ann"


def test_a_tile_dealt_as_5_3_is_played_as_3_5() -> None:
    game = deal("ann: 5-3 1-1 | bob: 2-2")

    after, verdicts = play(game, "ann", "3-5")

    assert verdicts == ()
    assert hand(after, "ann") == tiles("1-1")


def test_a_tile_in_the_boneyard_as_3_5_is_drawn_as_5_3() -> None:
    game = table("ann: 1-1 | bob: 2-2 | boneyard: 3-5 4-4 | left 6 right 6")

    after, verdicts = draw(game, "ann", "5-3")

    assert verdicts == ()
    assert hand(after, "ann") == tiles("1-1 3-5")
    assert rnd(after).boneyard == tiles("4-4")


def test_pips_are_the_sum_of_both_halves() -> None:
    assert mask_pips(bit_of(tile(5, 10))) == 15
    assert mask_pips(bit_of(tile(12, 12))) == 24
    assert mask_pips(bit_of(tile(0, 0))) == 0
    assert mask_pips(bit_of(tile(0, 0)), double_blank=25) == 25
    assert mask_pips(bit_of(tile(0, 3)), double_blank=25) == 3


def test_a_tile_is_normalised_smaller_half_first() -> None:
    assert tile(5, 3) == (3, 5)
    assert tile(3, 5) == (3, 5)


def test_can_play_and_legal_plays_name_every_tile_and_end_that_matches() -> None:
    game = table("ann: 3-6 7-7 3-7 1-2 | bob: 2-2 | left 3 right 7")
    round_ = rnd(game)

    assert round_.can_play(0) is True
    assert round_.can_play(1) is False
    assert round_.legal_plays(0) == [
        Move((3, 6), End.LEFT),
        Move((3, 7), End.LEFT),
        Move((3, 7), End.RIGHT),
        Move((7, 7), End.RIGHT),
    ]
    assert round_.legal_plays(1) == []


def test_on_an_empty_layout_every_tile_in_hand_can_be_played() -> None:
    game = deal("ann: 5-6 1-2 | bob: 2-2")
    round_ = rnd(game)

    assert round_.can_play(0) is True
    assert round_.legal_plays(0) == [Move((1, 2), None), Move((5, 6), None)]


def test_a_tile_dealt_to_the_boneyard_as_5_3_is_drawn_as_3_5() -> None:
    game = deal("ann: 1-1 | bob: 2-2 | boneyard: 5-3 | leader bob")

    after, verdicts = draw(game, "bob", "3-5")

    assert verdicts == ()
    assert hand(after, "bob") == tiles("2-2 3-5")
    assert rnd(after).boneyard == frozenset()
