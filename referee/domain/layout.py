"""The layout: where a round's tiles are played (RULES.md sections 1, 2, 8.1, 8.2).

A line, a spinner and trains answer the same questions, so the judge asks them without knowing
which one it holds: which tiles would play somewhere available to a player (a tile mask, so
"can play" is ``hand & mask != 0``), what a play does (a new layout, or the foul that rejects
it), what a pass does and whether it restarts the confirmation chain, the open ends a block
announces, and the count of section 10. Layouts are immutable: a play returns a new one.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple, Protocol

from referee.domain.events import End
from referee.domain.fouls import FoulKind
from referee.domain.tiles import TileMask


class Restart(Enum):
    """What a legitimate pass that changed someone's available ends does to the chain (§4)."""

    CONTINUE = "continue"
    """Nobody's available ends changed: the pass extends the chain."""
    FRESH = "fresh"
    """Others' changed but not the passer's: the pass is the first of a new chain."""
    EMPTY = "empty"
    """The passer's own available ends changed: the chain is left empty."""


CONTINUE = Restart.CONTINUE
"""``Restart.CONTINUE`` as a module global: the judge and the chain read it on every pass, and
a member read off its enum class is a slow lookup (docs/design.md, "Performance choices")."""


class Place(NamedTuple):
    """A place a player may play on now, and the value it shows."""

    end: End | None
    """The end, in a line or spinner."""
    train: str | None
    """The train id, in trains."""
    value: int


class Layout(Protocol):
    """What the judge asks of any layout."""

    @property
    def double_pending(self) -> bool:
        """Checks if a double is pending (trains): its player plays again."""
        ...

    def playable(self, seat: int, /) -> TileMask:
        """Returns the mask of the tiles that would play on an end available to ``seat``."""
        ...

    def place(
        self,
        seat: int,
        a: int,
        b: int,
        end: End | None,
        train: str | None,
        hands: tuple[TileMask, ...],
        boneyard: TileMask,
        /,
    ) -> Layout | FoulKind:
        """Returns the layout after ``seat`` plays ``[a, b]`` on the place named, or the foul.

        ``hands`` and ``boneyard`` are those before the play (the tile is still in the hand):
        whether a double is dead depends on them.
        """
        ...

    def passed(self, seat: int, /) -> Layout:
        """Returns the layout after an applied pass by ``seat`` (itself if nothing changes)."""
        ...

    def restart(self, before: Layout, seat: int, /) -> Restart:
        """Returns what the pass by ``seat`` that turned ``before`` into this does to the chain."""
        ...

    def places(self, seat: int, /) -> tuple[Place, ...] | None:
        """Returns the places available to ``seat``; ``None`` while any tile plays unplaced."""
        ...

    def open_ends(self) -> dict[str, int]:
        """Returns every end and the value it shows, as ``BlockDeclared`` announces them."""
        ...

    def counted(self) -> int | None:
        """Returns the count of section 10; ``None`` for a layout that keeps no count."""
        ...
