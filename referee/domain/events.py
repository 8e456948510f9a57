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
    """An end of a line or spinner layout, as a play names it."""

    LEFT = "left"
    """The end that shows the first tile's first value."""
    RIGHT = "right"
    """The end that shows the first tile's second value."""
    UP = "up"
    """The spinner's first arm (RULES.md section 8.1)."""
    DOWN = "down"
    """The spinner's second arm."""


class GameStarted(NamedTuple):
    """A game began with these players, in the order of play, under these rules."""

    players: tuple[str, ...]
    rules: Rules
    teams: Mapping[str, tuple[str, ...]] | None = None
    """Partnerships: team id -> its players (RULES.md section 9); ``None`` for none."""


class RoundStarted(NamedTuple):
    """A round was dealt: hands, boneyard, who leads and, in trains, the engine."""

    round: int
    hands: Mapping[str, tuple[Tile, ...]]
    boneyard: tuple[Tile, ...]
    leader: str
    engine: Tile | None = None


class TilePlayed(NamedTuple):
    """A player put a tile on a place of the layout: an end, or a train."""

    round: int
    player: str
    tile: Tile
    end: End | None
    """The end named in a line or spinner (none for the first tile)."""
    train: str | None = None
    """The train named in trains: a player id or ``mexican``."""


class TileDrawn(NamedTuple):
    """A player drew a tile from the boneyard."""

    round: int
    player: str
    tile: Tile


class Passed(NamedTuple):
    """A player passed their turn."""

    round: int
    player: str


_new = tuple.__new__


def tile_played(
    round_number: int, player: str, tile: Tile, end: End | None, train: str | None = None
) -> TilePlayed:
    """Returns the play of these fields, exactly as ``TilePlayed(...)`` would.

    The edge converts every input event once; these builders skip the named tuples'
    generated ``__new__`` (a test holds each to the plain constructor)."""
    return _new(TilePlayed, (round_number, player, tile, end, train))


def tile_drawn(round_number: int, player: str, tile: Tile) -> TileDrawn:
    """Returns the draw of these fields, exactly as ``TileDrawn(...)`` would."""
    return _new(TileDrawn, (round_number, player, tile))


def passed(round_number: int, player: str) -> Passed:
    """Returns the pass of these fields, exactly as ``Passed(...)`` would."""
    return _new(Passed, (round_number, player))


Action = TilePlayed | TileDrawn | Passed
"""What a player does during a round."""

GameEvent = GameStarted | RoundStarted | TilePlayed | TileDrawn | Passed
"""Every input event the judge folds."""
