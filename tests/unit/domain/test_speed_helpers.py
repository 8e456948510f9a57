"""The speed tricks behind a name hold to the plain versions they stand for (STYLE.md)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from referee.domain.line import EMPTY_LINE, line_at
from referee.domain.state import RoundState, round_state
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
