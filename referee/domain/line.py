"""The line (``layout: line``): one line of play with two open ends (RULES.md section 1).

This is edition 1's layout, and the referee's hottest path: a play here is a few integer
operations and one small tuple. A line that must count (section 10) is kept by ``spinner.py``
instead, which remembers the outermost tiles.
"""

from __future__ import annotations

from typing import NamedTuple

from referee.domain.events import End
from referee.domain.fouls import FoulKind
from referee.domain.layout import Layout, Place, Restart
from referee.domain.tiles import EVERY_TILE, SHOWING, TileMask

_LEFT = End.LEFT
_RIGHT = End.RIGHT
_END_MISSING = FoulKind.END_MISSING
_END_NOT_AVAILABLE = FoulKind.END_NOT_AVAILABLE
_NO_MATCH = FoulKind.TILE_DOES_NOT_MATCH
_VALUES = len(SHOWING)  # pip values 0 to 18


class Line(NamedTuple):
    """The values shown at the two ends (``None`` while the line is empty)."""

    left: int | None
    right: int | None
    mask: TileMask
    """The tiles that play on either end: every tile while the line is empty."""

    @property
    def double_pending(self) -> bool:
        """Checks if a double is pending: never on a line."""
        return False

    def playable(self, _seat: int, /) -> TileMask:
        """Returns the mask of the tiles that play on either end (the same for everyone)."""
        return self.mask

    def place(
        self,
        _seat: int,
        a: int,
        b: int,
        end: End | None,
        train: str | None,
        _hands: tuple[TileMask, ...],
        _boneyard: TileMask,
        /,
    ) -> Line | FoulKind:
        """Returns the line after ``[a, b]`` is played on ``end``, or the foul."""
        if train is not None:
            return _END_NOT_AVAILABLE
        left, right = self.left, self.right
        if left is None or right is None:
            # The first tile opens the line as written: [x, y] gives left = x, right = y.
            return _LINES[a][b]
        if end is _LEFT:
            value = left
        elif end is _RIGHT:
            value = right
        elif end is None:
            return _END_MISSING
        else:
            return _END_NOT_AVAILABLE  # up and down never exist on a line
        if a == value:
            shown = b
        elif b == value:
            shown = a
        else:
            return _NO_MATCH
        if end is _LEFT:
            return _LINES[shown][right]
        return _LINES[left][shown]

    def passed(self, _seat: int, /) -> Line:
        """Returns the line: a pass changes nothing on it."""
        return self

    def restart(self, _before: Layout, _seat: int, /) -> Restart:
        """Returns ``CONTINUE``: on a line a pass never changes what anyone may play on."""
        return Restart.CONTINUE

    def places(self, _seat: int, /) -> tuple[Place, ...] | None:
        """Returns ``left`` and ``right`` with their values; ``None`` while the line is empty."""
        left, right = self.left, self.right
        if left is None or right is None:
            return None
        return (Place(_LEFT, None, left), Place(_RIGHT, None, right))

    def open_ends(self) -> dict[str, int]:
        """Returns ``{"left": l, "right": r}`` (0 for an end of an empty line)."""
        return {"left": self.left or 0, "right": self.right or 0}

    def counted(self) -> int | None:
        """Returns ``None``: a plain line keeps no count (``spinner.py`` keeps a counting one)."""
        return None


EMPTY_LINE = Line(None, None, EVERY_TILE)
"""The line before its first tile: any tile plays there."""

_LINES: tuple[tuple[Line, ...], ...] = tuple(
    tuple(Line(left, right, SHOWING[left] | SHOWING[right]) for right in range(_VALUES))
    for left in range(_VALUES)
)
"""Every line there can be, by its ends: a line is only its two values, so every game shares
these 361 values rather than building one per play (a play allocates nothing for its layout,
and the layouts the judge reads stay in the processor's cache)."""


def line_at(left: int | None, right: int | None) -> Line:
    """Returns the line showing ``left`` and ``right`` (both ``None``: the empty line)."""
    if left is None or right is None:
        return EMPTY_LINE
    return _LINES[left][right]
