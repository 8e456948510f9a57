"""The speed tricks behind a name hold to the plain versions they stand for (STYLE.md)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from referee.domain.events import (
    End,
    Passed,
    TileDrawn,
    TilePlayed,
    passed,
    tile_drawn,
    tile_played,
)
from referee.domain.line import EMPTY_LINE, line_at
from referee.domain.rules import Rules
from referee.domain.state import GameState, RoundState, game_state, new_game, round_state
from referee.domain.tiles import BIT, SHOWING, bit_of

values = st.integers(-3, 25)


@given(a=values, b=values)
def test_bit_of_is_the_tables_get_with_no_bit_for_a_tile_of_no_set(a: int, b: int) -> None:
    assert bit_of((a, b)) == BIT.get((a, b), 0)
    assert (a, b) not in BIT or bit_of((a, b)) == bit_of((b, a)) != 0


def test_bit_of_adds_nothing_to_the_table_on_a_miss() -> None:
    size = len(BIT)
    assert bit_of((19, 40)) == 0
    assert len(BIT) == size


@given(
    number=st.integers(1, 50),
    hands=st.lists(st.integers(0, 2**28), min_size=2, max_size=10).map(tuple),
    boneyard=st.integers(0, 2**28),
    turn=st.integers(0, 9),
    chain=st.lists(st.integers(0, 9), max_size=10).map(tuple),
    drew=st.booleans(),
    ended=st.booleans(),
    left=st.integers(0, 6),
    right=st.integers(0, 6),
)
def test_round_state_builds_what_the_named_tuple_builds(
    number: int,
    hands: tuple[int, ...],
    boneyard: int,
    turn: int,
    chain: tuple[int, ...],
    drew: bool,
    ended: bool,
    left: int,
    right: int,
) -> None:
    layout = line_at(left, right)
    fast = round_state(number, hands, boneyard, layout, turn, chain, drew=drew, ended=ended)
    plain = RoundState(number, hands, boneyard, layout, turn, drew, chain, ended)

    assert fast == plain
    assert type(fast) is RoundState
    assert fast._asdict() == plain._asdict()


def test_round_state_defaults_are_the_named_tuples() -> None:
    assert round_state(1, (0, 0), 0, EMPTY_LINE, 0) == RoundState(
        1, (0, 0), 0, EMPTY_LINE, 0, False, ()
    )


@given(left=st.integers(0, 18), right=st.integers(0, 18))
def test_a_lines_mask_is_the_tiles_showing_either_end(left: int, right: int) -> None:
    assert line_at(left, right).mask == SHOWING[left] | SHOWING[right]


@given(
    players=st.lists(st.text("abcdef", min_size=1, max_size=4), min_size=2, max_size=6),
    scores=st.lists(st.integers(-99, 999), min_size=1, max_size=6).map(tuple),
    winner=st.none() | st.text("abc", min_size=1, max_size=3),
    with_round=st.booleans(),
)
def test_game_state_builds_what_the_named_tuple_builds(
    players: list[str], scores: tuple[int, ...], winner: str | None, with_round: bool
) -> None:
    names = tuple(dict.fromkeys(players))
    game = new_game(names, Rules())
    rnd = round_state(1, (0,) * len(names), 0, EMPTY_LINE, 0) if with_round else None
    fields = (names, game.rules, game.seats, game.teams, scores, rnd, winner)
    fast = game_state(*fields)
    plain = GameState(
        players=names,
        rules=game.rules,
        seats=game.seats,
        teams=game.teams,
        scores=scores,
        round=rnd,
        winner=winner,
    )
    assert type(fast) is GameState
    assert fast._asdict() == plain._asdict()
    assert game_state(*fields[:5]) == GameState(*fields[:5])
    if rnd is not None:
        assert game.with_round(rnd)._asdict() == game._replace(round=rnd)._asdict()
        assert game.with_scores(scores, rnd)._asdict() == (
            game._replace(scores=scores, round=rnd)._asdict()
        )


@given(
    number=st.integers(1, 2**53),
    player=st.text("abcdef", min_size=1, max_size=5),
    tile=st.tuples(st.integers(0, 18), st.integers(0, 18)),
    end=st.sampled_from([None, *End]),
    train=st.none() | st.text("abc", min_size=1, max_size=3),
)
def test_the_action_builders_build_what_the_named_tuples_build(
    number: int, player: str, tile: tuple[int, int], end: End | None, train: str | None
) -> None:
    played = tile_played(number, player, tile, end, train)
    assert type(played) is TilePlayed
    assert (
        played._asdict()
        == TilePlayed(round=number, player=player, tile=tile, end=end, train=train)._asdict()
    )
    assert tile_played(number, player, tile, end) == TilePlayed(number, player, tile, end)
    drawn = tile_drawn(number, player, tile)
    assert type(drawn) is TileDrawn
    assert drawn._asdict() == TileDrawn(round=number, player=player, tile=tile)._asdict()
    gone = passed(number, player)
    assert type(gone) is Passed
    assert gone._asdict() == Passed(round=number, player=player)._asdict()
