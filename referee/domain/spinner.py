"""The spinner (``layout: spinner``): a line whose first double opens two more ends (§8.1).

The layout also keeps what the count of section 10 needs: the outermost tile of every end
(whether it is a double, whether it is the first tile). A ``line`` game that counts plays on
this layout with no spinner rule: its doubles never spin, and it counts like any line.
"""

from __future__ import annotations

from typing import NamedTuple

from referee.domain.events import End
from referee.domain.fouls import FoulKind
from referee.domain.layout import Layout, Place, Restart
from referee.domain.rules import SpinnerArms
from referee.domain.tiles import EVERY_TILE, SHOWING, TileMask

_LEFT, _RIGHT, _UP = End.LEFT, End.RIGHT, End.UP
_AT_ONCE = SpinnerArms.AT_ONCE
_new = tuple.__new__


class Spinner(NamedTuple):
    """The ends of a line with, once its spinner is down, ``up`` and ``down``.

    A *weight* is how often an end's value counts: 2 when its outermost tile is a double,
    1 otherwise, and 0 for an arm nothing has been played on.
    """

    left: int | None
    right: int | None
    left_weight: int
    right_weight: int
    single: bool
    """Whether ``left`` and ``right`` still share their outermost tile: the first tile."""
    spinner: int | None
    """The spinner's value, once it is down."""
    sides: int
    """Which line ends have the spinner as outermost tile: bit 1 ``left``, bit 2 ``right``."""
    up: int | None
    """The value ``up`` shows; ``None`` until the spinner is down."""
    down: int | None
    up_weight: int
    down_weight: int
    arms: SpinnerArms | None
    """When the arms open; ``None`` for a line whose doubles never spin."""
    mask: TileMask
    """The tiles that play on an available end: every tile while the layout is empty."""

    @property
    def double_pending(self) -> bool:
        """Checks if a double is pending: never on a spinner."""
        return False

    @property
    def arms_open(self) -> bool:
        """Checks if ``up`` and ``down`` may be played on now."""
        return self.spinner is not None and (self.arms is _AT_ONCE or not self.sides)

    def playable(self, _seat: int, /) -> TileMask:
        """Returns the mask of the tiles that play on an available end (the same for all)."""
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
    ) -> Spinner | FoulKind:
        """Returns the layout after ``[a, b]`` is played on ``end``, or the foul."""
        if train is not None:
            return FoulKind.END_NOT_AVAILABLE
        left, right = self.left, self.right
        double = a == b
        weight = 2 if double else 1
        if left is None or right is None:
            spinner = a if double and self.arms is not None else None
            sides = 3 if spinner is not None else 0  # a double led is outermost on both sides
            return spinner_at(
                a,
                b,
                weight,
                weight,
                single=True,
                spinner=spinner,
                sides=sides,
                up=spinner,
                down=spinner,
                uw=0,
                dw=0,
                arms=self.arms,
            )
        if end is None:
            return FoulKind.END_MISSING
        if end is _LEFT:
            value = left
        elif end is _RIGHT:
            value = right
        elif not self.arms_open:
            return FoulKind.END_NOT_AVAILABLE
        else:
            value = self.up if end is _UP else self.down  # type: ignore[assignment]
        if a == value:
            shown = b
        elif b == value:
            shown = a
        else:
            return FoulKind.TILE_DOES_NOT_MATCH
        (_, _, lw, rw, _, spinner, sides, up, down, uw, dw, arms, _) = self
        single = self.single
        if end is _LEFT or end is _RIGHT:
            single = False
            side = 1 if end is _LEFT else 2
            sides &= ~side
            if spinner is None and double and arms is not None:
                spinner, up, down = a, a, a  # the first double on the line spins
                sides |= side
            if end is _LEFT:
                left, lw = shown, weight
            else:
                right, rw = shown, weight
        elif end is _UP:
            up, uw = shown, weight
        else:
            down, dw = shown, weight
        return spinner_at(
            left,
            right,
            lw,
            rw,
            single=single,
            spinner=spinner,
            sides=sides,
            up=up,
            down=down,
            uw=uw,
            dw=dw,
            arms=arms,
        )

    def passed(self, _seat: int, /) -> Spinner:
        """Returns the layout: a pass changes nothing on it."""
        return self

    def restart(self, _before: Layout, _seat: int, /) -> Restart:
        """Returns ``CONTINUE``: a pass never changes what anyone may play on."""
        return Restart.CONTINUE

    def places(self, _seat: int, /) -> tuple[Place, ...] | None:
        """Returns the available ends with their values; ``None`` while the layout is empty."""
        left, right, up, down = self.left, self.right, self.up, self.down
        if left is None or right is None:
            return None
        line = (Place(_LEFT, None, left), Place(_RIGHT, None, right))
        if up is None or down is None or not self.arms_open:
            return line
        return (*line, Place(_UP, None, up), Place(End.DOWN, None, down))

    def open_ends(self) -> dict[str, int]:
        """Returns ``left`` and ``right``, and ``up`` and ``down`` once the spinner is down."""
        ends = {"left": self.left or 0, "right": self.right or 0}
        if self.up is not None and self.down is not None:
            ends["up"], ends["down"] = self.up, self.down
        return ends

    def counted(self) -> int | None:
        """Returns the count of section 10 (0 for an empty layout)."""
        left, right, up, down = self.left, self.right, self.up, self.down
        if left is None or right is None:
            return 0
        # While the first tile is alone on the line it counts once, at face value.
        single = self.single
        total = left + right if single else left * self.left_weight + right * self.right_weight
        if up is not None and down is not None:
            total += up * self.up_weight + down * self.down_weight
        return total


def spinner_at(
    left: int,
    right: int,
    lw: int,
    rw: int,
    *,
    single: bool,
    spinner: int | None,
    sides: int,
    up: int | None,
    down: int | None,
    uw: int,
    dw: int,
    arms: SpinnerArms | None,
) -> Spinner:
    """Returns the spinner layout of these ends, its mask computed from those available."""
    mask = SHOWING[left] | SHOWING[right]
    if up is not None and down is not None and (arms is _AT_ONCE or not sides):
        mask |= SHOWING[up] | SHOWING[down]
    fields = (left, right, lw, rw, single, spinner, sides, up, down, uw, dw, arms, mask)
    return _new(Spinner, fields)


def empty_spinner(arms: SpinnerArms | None) -> Spinner:
    """Returns the empty layout; ``arms`` ``None`` for a counting line that never spins."""
    return Spinner(
        None,
        None,
        1,
        1,
        single=True,
        spinner=None,
        sides=0,
        up=None,
        down=None,
        up_weight=0,
        down_weight=0,
        arms=arms,
        mask=EVERY_TILE,
    )
