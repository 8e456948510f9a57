"""Input the judge cannot judge raises InvalidInput with its reason (EVENTS.md, "Bad input")."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from referee.domain.errors import InvalidInput, RejectionReason
from referee.domain.events import (
    End,
    GameEvent,
    GameStarted,
    Passed,
    RoundStarted,
    TileDrawn,
    TilePlayed,
)
from referee.domain.judge import judge
from referee.domain.line import EMPTY_LINE
from referee.domain.rules import DrawRule, Rules
from referee.domain.state import GameState
from referee.domain.tiles import Tile
from tests.notation import deal, dealt, next_round, play, rnd, started, turn

ACTIONS_IN_ROUND_1: list[TilePlayed | TileDrawn | Passed] = [
    TilePlayed(1, "ann", (1, 2), None),
    TileDrawn(1, "ann", (5, 5)),
    Passed(1, "ann"),
]


def _reason(game: GameState | None, event: GameEvent) -> RejectionReason:
    with pytest.raises(InvalidInput) as raised:
        judge(game, event)
    assert raised.value.detail
    return raised.value.reason


# --- games --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "event",
    [*ACTIONS_IN_ROUND_1, RoundStarted(1, {"ann": ((1, 2),), "bob": ((3, 4),)}, (), "ann")],
)
def test_an_event_for_a_game_that_never_started_is_unknown_game(event: GameEvent) -> None:
    assert _reason(None, event) is RejectionReason.UNKNOWN_GAME


def test_a_second_game_started_is_game_already_started() -> None:
    game = started("ann bob")

    assert _reason(game, GameStarted(("ann", "bob"), Rules())) is (
        RejectionReason.GAME_ALREADY_STARTED
    )


def test_a_second_game_started_mid_round_is_game_already_started() -> None:
    game = deal("ann: 1-2 | bob: 3-4")

    assert _reason(game, GameStarted(("cid", "dee"), Rules())) is (
        RejectionReason.GAME_ALREADY_STARTED
    )


def test_game_started_gives_every_player_a_score_of_zero_and_no_round() -> None:
    game = started("ann bob cid")

    assert game.players == ("ann", "bob", "cid")
    assert game.scores == (0, 0, 0)
    assert game.round is None
    assert game.winner is None


# --- actions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "event",
    [TilePlayed(1, "zed", (1, 2), None), TileDrawn(1, "zed", (5, 5)), Passed(1, "zed")],
)
def test_an_action_by_someone_not_at_the_table_is_unknown_player(event: GameEvent) -> None:
    game = deal("ann: 1-2 | bob: 3-4 | boneyard: 5-5")

    assert _reason(game, event) is RejectionReason.UNKNOWN_PLAYER


@pytest.mark.parametrize("event", ACTIONS_IN_ROUND_1)
def test_an_action_before_the_first_round_is_round_not_started(event: GameEvent) -> None:
    game = started("ann bob")

    assert _reason(game, event) is RejectionReason.ROUND_NOT_STARTED


@pytest.mark.parametrize(
    "event",
    [TilePlayed(2, "ann", (1, 2), None), TileDrawn(2, "ann", (5, 5)), Passed(0, "ann")],
)
def test_an_action_naming_another_round_is_wrong_round(event: GameEvent) -> None:
    game = deal("ann: 1-2 0-0 | bob: 3-4 | boneyard: 5-5")

    assert _reason(game, event) is RejectionReason.WRONG_ROUND


def _round_1_over() -> GameState:
    game = deal("ann: 1-2 | bob: 3-4 | leader ann")
    game, _ = play(game, "ann", "1-2")
    assert rnd(game).ended is True
    return game


@pytest.mark.parametrize(
    "event",
    [TilePlayed(1, "bob", (3, 4), End.LEFT), TileDrawn(1, "bob", (5, 5)), Passed(1, "bob")],
)
def test_an_action_after_its_round_was_scored_is_round_over(event: GameEvent) -> None:
    assert _reason(_round_1_over(), event) is RejectionReason.ROUND_OVER


def test_an_action_for_the_next_round_before_it_is_dealt_is_wrong_round() -> None:
    assert _reason(_round_1_over(), Passed(2, "bob")) is RejectionReason.WRONG_ROUND


def test_invalid_input_changes_nothing_so_the_same_game_judges_the_next_event() -> None:
    game = deal("ann: 1-2 0-0 | bob: 3-4")
    with pytest.raises(InvalidInput):
        judge(game, Passed(1, "zed"))

    after, verdicts = play(game, "ann", "1-2")

    assert verdicts == ()
    assert turn(after) == "bob"


# --- misplaced deals ----------------------------------------------------------------------


def test_a_deal_while_a_round_is_in_play_is_wrong_round() -> None:
    game = deal("ann: 1-2 0-0 | bob: 3-4")

    assert _reason(game, dealt("ann: 1-2 | bob: 3-4", round=2)) is RejectionReason.WRONG_ROUND


def test_the_first_deal_must_be_round_1() -> None:
    game = started("ann bob")

    assert _reason(game, dealt("ann: 1-2 | bob: 3-4", round=2)) is RejectionReason.WRONG_ROUND


@pytest.mark.parametrize("number", [1, 3])
def test_a_deal_after_a_round_must_be_the_next_round(number: int) -> None:
    game = _round_1_over()

    assert _reason(game, dealt("ann: 1-2 | bob: 3-4", round=number)) is (
        RejectionReason.WRONG_ROUND
    )


def test_the_next_round_is_dealt_after_one_is_scored_and_the_leader_acts_first() -> None:
    game = next_round(_round_1_over(), "ann: 1-2 | bob: 3-4 0-0 | boneyard: 5-5 | leader bob")

    round_ = rnd(game)
    assert round_.round_number == 2
    assert round_.ended is False
    assert round_.layout == EMPTY_LINE
    assert round_.boneyard == frozenset({(5, 5)})
    assert turn(game) == "bob"
    assert game.scores == (7, 0)


# --- bad deals ----------------------------------------------------------------------------


def _deal(
    hands: Mapping[str, tuple[Tile, ...]],
    boneyard: tuple[Tile, ...] = (),
    leader: str = "ann",
    rules: Rules | None = None,
) -> RejectionReason:
    game = started("ann bob", rules)
    return _reason(game, RoundStarted(1, hands, boneyard, leader))


@pytest.mark.parametrize(
    "hands",
    [
        {"ann": ((1, 2),)},  # bob missing
        {"ann": ((1, 2),), "bob": ((3, 4),), "zed": ((5, 5),)},  # a stranger
        {"ann": ((1, 2),), "zed": ((3, 4),)},  # bob replaced
    ],
)
def test_hands_for_other_players_than_the_games_are_a_bad_deal(
    hands: Mapping[str, tuple[Tile, ...]],
) -> None:
    assert _deal(hands) is RejectionReason.BAD_DEAL


def test_a_leader_who_is_not_a_player_is_a_bad_deal() -> None:
    assert _deal({"ann": ((1, 2),), "bob": ((3, 4),)}, leader="zed") is RejectionReason.BAD_DEAL


def test_an_empty_hand_is_a_bad_deal() -> None:
    assert _deal({"ann": ((1, 2),), "bob": ()}) is RejectionReason.BAD_DEAL


@pytest.mark.parametrize("bad", [(6, 7), (7, 7), (-1, 2), (0, 10)])
def test_a_tile_outside_the_set_is_a_bad_deal(bad: Tile) -> None:
    assert _deal({"ann": ((1, 2), bad), "bob": ((3, 4),)}) is RejectionReason.BAD_DEAL


def test_a_tile_outside_the_set_in_the_boneyard_is_a_bad_deal() -> None:
    assert _deal({"ann": ((1, 2),), "bob": ((3, 4),)}, boneyard=((6, 7),)) is (
        RejectionReason.BAD_DEAL
    )


@pytest.mark.parametrize(
    ("hands", "boneyard"),
    [
        ({"ann": ((1, 2), (1, 2)), "bob": ((3, 4),)}, ()),  # twice in one hand
        ({"ann": ((1, 2),), "bob": ((2, 1),)}, ()),  # across hands, written reversed
        ({"ann": ((1, 2),), "bob": ((3, 4),)}, ((4, 3),)),  # hand and boneyard
        ({"ann": ((1, 2),), "bob": ((3, 4),)}, ((5, 5), (5, 5))),  # twice in the boneyard
    ],
)
def test_the_same_tile_twice_across_hands_and_boneyard_is_a_bad_deal(
    hands: Mapping[str, tuple[Tile, ...]], boneyard: tuple[Tile, ...]
) -> None:
    assert _deal(hands, boneyard) is RejectionReason.BAD_DEAL


def test_a_boneyard_in_a_draw_none_game_is_a_bad_deal() -> None:
    rules = Rules(draw=DrawRule.NONE)

    assert _deal({"ann": ((1, 2),), "bob": ((3, 4),)}, ((5, 5),), rules=rules) is (
        RejectionReason.BAD_DEAL
    )


def test_a_draw_none_game_deals_with_an_empty_boneyard_and_sleeping_tiles() -> None:
    game = started("ann bob", Rules(draw=DrawRule.NONE))

    after, verdicts = judge(game, RoundStarted(1, {"ann": ((1, 2),), "bob": ((3, 4),)}, (), "bob"))

    assert verdicts == ()
    assert rnd(after).boneyard == frozenset()
    assert turn(after) == "bob"


def test_a_bad_deal_leaves_the_game_waiting_for_a_good_round_1() -> None:
    game = started("ann bob")
    with pytest.raises(InvalidInput):
        judge(game, RoundStarted(1, {"ann": ((1, 2),), "bob": ()}, (), "ann"))

    after, verdicts = judge(game, RoundStarted(1, {"ann": ((1, 2),), "bob": ((3, 4),)}, (), "ann"))

    assert verdicts == ()
    assert rnd(after).round_number == 1
