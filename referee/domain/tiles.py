"""Tiles and tile sets: a tile is an unordered pair of pip values."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

Tile = tuple[int, int]
"""A tile as its two values, smaller first: ``(a, b)`` with ``a <= b``."""

TileMask = int
"""A set of tiles as an ``int``: bit ``i`` is set when ``TILE_AT[i]`` is in the set."""

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


def full_set(max_pip: int) -> frozenset[Tile]:
    """Returns every tile of the double-``max_pip`` set: (N+1)(N+2)/2 of them."""
    return frozenset((a, b) for a in range(max_pip + 1) for b in range(a, max_pip + 1))


def shows(t: Tile, value: int) -> bool:
    """Checks if one half of the tile shows ``value``."""
    return t[0] == value or t[1] == value


# --- tile sets as bit masks ---------------------------------------------------------------------
#
# Hands and the boneyard are held as ``int`` bit masks: bit ``index(a, b)`` is set when the tile
# ``(a, b)`` is in the set. Membership, removal and "does anything match this end" are then one
# integer operation each, whatever the size of the hand, and a hand costs one small ``int``. The
# index numbers tiles by their larger value (``b * (b + 1) // 2 + a`` for ``a <= b``), so it is
# the same in every tile set: the double-six set is bits 0-27, double-eighteen bits 0-189.

TILE_AT: tuple[Tile, ...] = tuple(
    _INTERNED[a][b] for b in range(_MAX_VALUE + 1) for a in range(b + 1)
)
"""The tile of each bit index."""

_PIPS_AT: tuple[int, ...] = tuple(a + b for a, b in TILE_AT)

_BYTE_TILES: tuple[tuple[tuple[Tile, ...], ...], ...] = tuple(
    tuple(
        tuple(TILE_AT[i] for j in range(8) if byte >> j & 1 and (i := 8 * k + j) < len(TILE_AT))
        for byte in range(256)
    )
    for k in range((len(TILE_AT) + 7) // 8)
)
"""The tiles of each byte of a mask, by the byte's position and value."""


class _Bits(dict[tuple[int, int], TileMask]):
    """Mask bits by tile; a tile of no set has none (0), and is not added."""

    def __missing__(self, _tile: tuple[int, int]) -> TileMask:
        return 0


BIT: dict[tuple[int, int], TileMask] = _Bits(
    {
        **{(b, a): 1 << i for i, (a, b) in enumerate(TILE_AT)},
        **{(a, b): 1 << i for i, (a, b) in enumerate(TILE_AT)},
    }
)
"""The mask bit of a tile, for both ways of writing it; 0 for a tile of no set."""

bit_of: Callable[[tuple[int, int]], TileMask] = BIT.__getitem__
"""Returns the mask bit of a tile written either way round; 0 for a tile of no set.

It is the table's own ``__getitem__`` (a C call; the ``__missing__`` of a miss answers 0):
the judge looks a tile up on every play and draw, and a Python function around
``BIT.get(t, 0)`` costs more (docs/design.md, "Performance choices"). A property test holds
it to ``BIT.get(t, 0)``.
"""


SHOWING: tuple[TileMask, ...] = tuple(
    sum(1 << i for i, t in enumerate(TILE_AT) if value in t) for value in range(_MAX_VALUE + 1)
)
"""The mask of every tile that shows a value, by value."""

EVERY_TILE: TileMask = (1 << len(TILE_AT)) - 1
"""The mask of every tile of the double-eighteen set: what plays on an empty layout."""


def set_mask(max_pip: int) -> TileMask:
    """Returns the mask of the whole double-``max_pip`` set (at most double-eighteen)."""
    max_pip = min(max_pip, _MAX_VALUE)
    return (1 << (max_pip + 1) * (max_pip + 2) // 2) - 1 if max_pip >= 0 else 0


def mask_of(tiles: Iterable[Tile]) -> TileMask:
    """Returns the mask of a set of tiles (each within the double-eighteen set)."""
    mask = 0
    for a, b in tiles:
        mask |= BIT[a, b]
    return mask


def tiles_of(mask: TileMask) -> frozenset[Tile]:
    """Returns the tiles of a mask."""
    return frozenset(_listed(mask))


def sorted_tiles(mask: TileMask) -> list[Tile]:
    """Returns the tiles of a mask in ascending order (``[0,0]``, ``[0,1]``, ... ``[1,1]``)."""
    listed = _listed(mask)
    listed.sort()
    return listed


def _listed(mask: TileMask) -> list[Tile]:
    """Returns the tiles of a mask in bit order, a byte at a time (the store encodes every
    hand and boneyard of a batch's games: docs/design.md, "Performance choices")."""
    listed: list[Tile] = []
    for k, byte in enumerate(mask.to_bytes((mask.bit_length() + 7) // 8, "little")):
        if byte:
            listed += _BYTE_TILES[k][byte]
    return listed


def mask_pips(mask: TileMask, double_blank: int = 0) -> int:
    """Returns the pip count of the tiles of a mask; the double-blank counts ``double_blank``."""
    total = double_blank if mask & 1 else 0
    return total + sum(_PIPS_AT[i] for i in _indices(mask))


def mask_lowest_pips(mask: TileMask, double_blank: int = 0) -> int:
    """Returns the pips of the lowest-counting tile of a non-empty mask."""
    return min(double_blank if i == 0 else _PIPS_AT[i] for i in _indices(mask))


def _indices(mask: TileMask) -> Iterator[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def format_tile(t: Tile) -> str:
    """Returns the tile as players write it: ``[5,10]``."""
    return f"[{t[0]},{t[1]}]"
