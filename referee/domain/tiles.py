"""Tiles and tile sets: a tile is an unordered pair of pip values."""

from __future__ import annotations

from collections.abc import Iterable

Tile = tuple[int, int]
"""A tile as its two values, smaller first: ``(a, b)`` with ``a <= b``."""

TILE_SETS = (6, 9, 12, 15, 18)
"""The ``max_pip`` values of the sets in use: double-six up to double-eighteen."""


_MAX_VALUE = 18
_INTERNED: list[list[Tile]] = [
    [(min(a, b), max(a, b)) for b in range(_MAX_VALUE + 1)] for a in range(_MAX_VALUE + 1)
]
# One shared tuple per tile: a game's hands and boneyard then hold references, not copies.


def tile(a: int, b: int) -> Tile:
    """Returns the tile showing ``a`` and ``b``, in its normal (smaller first) form."""
    if 0 <= a <= _MAX_VALUE and 0 <= b <= _MAX_VALUE:
        return _INTERNED[a][b]
    return (a, b) if a <= b else (b, a)


def is_double(t: Tile) -> bool:
    """Checks if both halves of the tile show the same value."""
    return t[0] == t[1]


def pips(t: Tile, double_blank: int = 0) -> int:
    """Returns the pips a tile counts; the double-blank counts ``double_blank``."""
    total = t[0] + t[1]
    return double_blank if total == 0 else total


def pip_count(hand: Iterable[Tile], double_blank: int = 0) -> int:
    """Returns the sum of the pips of the tiles in a hand."""
    return sum(pips(t, double_blank) for t in hand)


def in_set(t: Tile, max_pip: int) -> bool:
    """Checks if the (normalised) tile belongs to the double-``max_pip`` set."""
    return 0 <= t[0] <= t[1] <= max_pip


def full_set(max_pip: int) -> frozenset[Tile]:
    """Returns every tile of the double-``max_pip`` set: (N+1)(N+2)/2 of them."""
    return frozenset((a, b) for a in range(max_pip + 1) for b in range(a, max_pip + 1))


def shows(t: Tile, value: int) -> bool:
    """Checks if one half of the tile shows ``value``."""
    return t[0] == value or t[1] == value


def other_half(t: Tile, value: int) -> int:
    """Returns the value the tile leaves open once its ``value`` half is matched."""
    return t[1] if t[0] == value else t[0]


def format_tile(t: Tile) -> str:
    """Returns the tile as players write it: ``[5,10]``."""
    return f"[{t[0]},{t[1]}]"
