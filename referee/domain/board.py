"""The board: the tiles laid in a round, where they lie and which way round, as a table sees it.

The layouts keep only what the rules need (the values at the ends, the spinner's arms, the
trains' ends); a person settling a dispute wants to see the tiles. A board follows the round's
applied plays: ``laid`` puts a tile where the play put it, turned so that the side that
matched touches its neighbour, reading the place's value from the layout the play was judged
on. Everything on a board is public: every tile on it was played in front of the table.
"""

from __future__ import annotations

from typing import NamedTuple

from referee.domain.layout import Layout
from referee.domain.spinner import Spinner
from referee.domain.tiles import Tile
from referee.domain.trains import Trains


class Board(NamedTuple):
    """The tiles of a round's layout, each as it lies (its first value the one nearer the
    start of its line or train)."""

    line: tuple[Tile, ...] = ()
    """The line from ``left`` to ``right`` (``line`` and ``spinner``)."""
    spinner: int | None = None
    """The index in ``line`` of the spinner, once it is down."""
    up: tuple[Tile, ...] = ()
    """The tiles of ``up``, from the spinner outwards."""
    down: tuple[Tile, ...] = ()
    trains: tuple[tuple[Tile, ...], ...] = ()
    """Each train's tiles from the engine outwards, by train number (``trains``)."""
    engine: int | None = None
    """The engine's value (``trains``)."""


EMPTY_BOARD = Board()


def board_for(layout: Layout) -> Board:
    """Returns the board of a round that has just been dealt on ``layout``."""
    if isinstance(layout, Trains):
        return Board(trains=((),) * len(layout.ends), engine=layout.ends[0])
    return EMPTY_BOARD


def laid(board: Board, before: Layout, after: Layout, t: Tile, place: str | None) -> Board:
    """Returns the board after the applied play of ``t`` (as written) on ``place`` (an end or
    a train id), ``before`` and ``after`` the layouts the play was judged on and gave."""
    a, b = t
    if isinstance(before, Trains):
        assert place is not None
        i = before.table.numbers[place]
        shown = before.ends[i]
        turned = (shown, b if a == shown else a)
        trains = board.trains
        return board._replace(trains=(*trains[:i], (*trains[i], turned), *trains[i + 1 :]))
    places = before.places(0)
    spins = isinstance(after, Spinner) and after.spinner is not None
    if places is None:  # the first tile opens the line as written
        return board._replace(line=(t,), spinner=0 if spins else None)
    shown = next(p.value for p in places if p.end == place)
    other = b if a == shown else a
    spinner = board.spinner
    newly = spins and spinner is None
    if place == "left":
        spinner = 0 if newly else None if spinner is None else spinner + 1
        return board._replace(line=((other, shown), *board.line), spinner=spinner)
    if place == "right":
        spinner = len(board.line) if newly else spinner
        return board._replace(line=(*board.line, (shown, other)), spinner=spinner)
    if place == "up":
        return board._replace(up=(*board.up, (shown, other)))
    return board._replace(down=(*board.down, (shown, other)))
