"""Tile masks (``referee/domain/tiles.py``) hold exactly the tiles put in them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from referee.domain.tiles import (
    BIT,
    SHOWING,
    TILE_SETS,
    Tile,
    full_set,
    mask_lowest_pips,
    mask_of,
    mask_pips,
    set_mask,
    shows,
    sorted_tiles,
    tiles_of,
)

EVERY_TILE = sorted(full_set(18))
hands = st.sets(st.sampled_from(EVERY_TILE), max_size=40)


def pips(t: Tile, double_blank: int = 0) -> int:
    """The plain reading of RULES.md: a + b, the double-blank counting ``double_blank``."""
    return double_blank if t == (0, 0) else t[0] + t[1]


@given(hands)
def test_a_mask_gives_back_its_tiles_in_order(tiles: set[Tile]) -> None:
    mask = mask_of(tiles)
    assert tiles_of(mask) == frozenset(tiles)
    assert sorted_tiles(mask) == sorted(tiles)
    assert mask.bit_count() == len(tiles)


@given(hands, st.integers(min_value=0, max_value=100))
def test_a_masks_pip_count_is_its_tiles_pip_count(tiles: set[Tile], double_blank: int) -> None:
    mask = mask_of(tiles)
    assert mask_pips(mask, double_blank) == sum(pips(t, double_blank) for t in tiles)
    if tiles:
        assert mask_lowest_pips(mask, double_blank) == min(pips(t, double_blank) for t in tiles)


@given(hands, st.integers(min_value=0, max_value=18), st.integers(min_value=0, max_value=18))
def test_showing_matches_exactly_the_tiles_with_that_value(
    tiles: set[Tile], left: int, right: int
) -> None:
    matching = mask_of(tiles) & (SHOWING[left] | SHOWING[right])
    assert tiles_of(matching) == {t for t in tiles if shows(t, left) or shows(t, right)}


def test_each_set_is_its_own_mask_and_both_ways_of_writing_a_tile_share_a_bit() -> None:
    for max_pip in TILE_SETS:
        assert set_mask(max_pip) == mask_of(full_set(max_pip))
    for a, b in EVERY_TILE:
        assert BIT[a, b] == BIT[b, a]
    assert len({BIT[t] for t in EVERY_TILE}) == len(EVERY_TILE) == 190
