"""Tile sets from double-six to double-eighteen, and 2 to 10 players seated clockwise."""

from __future__ import annotations

import pytest

from referee.domain.errors import InvalidInput, RejectionReason
from referee.domain.events import RoundStarted
from referee.domain.judge import judge
from referee.domain.rules import Rules
from referee.domain.tiles import BIT, TILE_SETS, bit_of, full_set, set_mask
from tests.notation import deal, ends, rnd, started, steps, turn


@pytest.mark.parametrize(("max_pip", "size"), [(6, 28), (9, 55), (12, 91), (15, 136), (18, 190)])
def test_the_double_n_set_holds_n_plus_1_times_n_plus_2_over_2_tiles(
    max_pip: int, size: int
) -> None:
    tiles = full_set(max_pip)

    assert len(tiles) == size == (max_pip + 1) * (max_pip + 2) // 2
    assert (0, 0) in tiles
    assert (max_pip, max_pip) in tiles
    assert (0, max_pip) in tiles
    assert all(a <= b for a, b in tiles)


def test_the_sets_in_use_are_double_six_to_double_eighteen() -> None:
    assert TILE_SETS == (6, 9, 12, 15, 18)


@pytest.mark.parametrize("max_pip", [6, 9, 12, 15, 18])
def test_a_deal_of_the_whole_set_is_accepted(max_pip: int) -> None:
    every = sorted(full_set(max_pip))
    game = started("ann bob cid", Rules(max_pip=max_pip))
    hands = {"ann": tuple(every[0:5]), "bob": tuple(every[5:10]), "cid": tuple(every[10:15])}

    after, verdicts = judge(game, RoundStarted(1, hands, tuple(every[15:]), "ann"))

    assert verdicts == ()
    assert len(rnd(after).boneyard) == len(every) - 15


@pytest.mark.parametrize("max_pip", [6, 9, 12, 15, 18])
def test_a_tile_one_pip_beyond_the_set_is_a_bad_deal(max_pip: int) -> None:
    game = started("ann bob", Rules(max_pip=max_pip))
    hands = {"ann": ((max_pip, max_pip),), "bob": ((0, max_pip + 1),)}

    with pytest.raises(InvalidInput) as raised:
        judge(game, RoundStarted(1, hands, (), "ann"))

    assert raised.value.reason is RejectionReason.BAD_DEAL
    assert BIT[max_pip, max_pip] & set_mask(max_pip)
    assert not bit_of((0, max_pip + 1)) & set_mask(max_pip)


def test_a_double_nine_tile_is_outside_a_double_six_game() -> None:
    game = started("ann bob")

    with pytest.raises(InvalidInput) as raised:
        judge(game, RoundStarted(1, {"ann": ((9, 9),), "bob": ((1, 1),)}, (), "ann"))

    assert raised.value.reason is RejectionReason.BAD_DEAL


def test_two_players_alternate() -> None:
    game = deal("ann: 1-1 1-2 2-3 | bob: 1-4 2-2 5-5")

    after, produced = steps(
        game, "ann plays 1-1", "bob plays 1-4 left", "ann plays 1-2 right", "bob plays 2-2 right"
    )

    assert produced == [(), (), (), ()]
    assert turn(after) == "ann"
    assert ends(after) == (4, 2)


def test_ten_players_take_turns_in_seating_order_from_the_leader_wrapping_around() -> None:
    names = ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"]
    spec = " | ".join(f"{p}: {i}-{i} {i}-9" for i, p in enumerate(names[:9]))
    spec += " | p9: 9-9 0-8 | leader p7"
    game = deal(spec, Rules(max_pip=9))
    assert turn(game) == "p7"

    game, produced = steps(
        game,
        "p7 plays 7-7",
        "p8 passes",  # p8 holds 8-8 and 8-9: neither shows 7, a legitimate pass
        "p9 passes",
        "p0 passes",
    )

    assert produced == [(), (), (), ()]
    assert turn(game) == "p1"
    assert game.players == tuple(names)


def test_clockwise_follows_the_order_given_in_game_started_not_the_names() -> None:
    game = deal("zed: 1-1 0-0 | amy: 1-2 | kim: 1-3 | leader zed")

    after, _ = steps(game, "zed plays 1-1")

    assert turn(after) == "amy"
    after, _ = steps(after, "amy plays 1-2 left")
    assert turn(after) == "kim"


def test_the_leader_acts_first_and_others_are_out_of_turn() -> None:
    game = deal("ann: 1-1 | bob: 2-2 3-3 | cid: 4-4 | leader bob")

    after, produced = steps(game, "ann plays 1-1", "bob plays 2-2")

    assert produced[0] != ()
    assert produced[1] == ()
    assert turn(after) == "cid"
