"""The facts the game backend reports, as the judge sees them (no envelope, no wire format).

Events are named tuples: immutable, typed, and cheap to build once per input event.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import NamedTuple

from referee.domain.rules import Rules
from referee.domain.tiles import Tile


class End(StrEnum):
    """An open end of the line of play."""

    LEFT = "left"
    """The end that shows the first tile's first value."""
    RIGHT = "right"
    """The end that shows the first tile's second value."""


class GameStarted(NamedTuple):
    """A game began with these players, in clockwise seating order, under these rules."""

    players: tuple[str, ...]
    rules: Rules


class RoundStarted(NamedTuple):
    """A round was dealt: hands, boneyard, and who leads."""

    round: int
    hands: Mapping[str, tuple[Tile, ...]]
    boneyard: tuple[Tile, ...]
    leader: str


class TilePlayed(NamedTuple):
    """A player put a tile on an end of the line (no end for the first tile)."""

    round: int
    player: str
    tile: Tile
    end: End | None


class TileDrawn(NamedTuple):
    """A player drew a tile from the boneyard."""

    round: int
    player: str
    tile: Tile


class Passed(NamedTuple):
    """A player passed their turn."""

    round: int
    player: str


Action = TilePlayed | TileDrawn | Passed
"""What a player does during a round."""

GameEvent = GameStarted | RoundStarted | TilePlayed | TileDrawn | Passed
"""Every input event the judge folds."""
