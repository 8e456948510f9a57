"""Trains (``layout: trains``): the Mexican Train family (RULES.md section 8.2).

An engine double lies in the centre; every player owns a personal train and, with
``mexican_train``, there is a public train. A train is available to a player when it is their
own, the Mexican train, or open; a pending double binds everyone to its train. Trains are
numbered: the players' in seat order, then the Mexican train; sets of trains are bit masks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from referee.domain.events import End
from referee.domain.fouls import FoulKind
from referee.domain.layout import Layout, Place, Restart
from referee.domain.rules import DoubleRule, Rules
from referee.domain.tiles import SHOWING, TileMask, bit_of

MEXICAN = "mexican"
"""The id of the public train."""

NOT_PENDING = -1
"""``Trains.pending`` when no double is pending."""

_new = tuple.__new__


class TrainsSetup(NamedTuple):
    """What stays the same through a round: the trains' ids and the double rule."""

    names: tuple[str, ...]
    """Train ids by number: the player ids in seat order, then ``mexican`` if there is one."""
    numbers: Mapping[str, int]
    """Train number by id."""
    seats: int
    """How many players (personal trains) there are."""
    follow_up: bool
    """Whether a pending double ends with the turn of the player who played it."""


class Trains(NamedTuple):
    """The value each train shows, which are open, and the pending double if any."""

    ends: tuple[int, ...]
    """The value each train's end shows (the engine's while the train is empty)."""
    open: int
    """The open trains, bit ``i`` for train ``i`` (the Mexican train's is always set)."""
    pending: int
    """The train a pending double is on, or ``NOT_PENDING``."""
    pending_seat: int
    """The seat that played the pending double, or ``NOT_PENDING``."""
    table: TrainsSetup

    @property
    def double_pending(self) -> bool:
        """Checks if a double is pending."""
        return self.pending != NOT_PENDING

    def reach(self, seat: int) -> int:
        """Returns the trains available to ``seat``, as a mask of train numbers."""
        if self.pending != NOT_PENDING:
            return 1 << self.pending
        return self.open | 1 << seat

    def playable(self, seat: int, /) -> TileMask:
        """Returns the mask of the tiles that play on a train available to ``seat``."""
        reach = self.reach(seat)
        mask = 0
        for i, value in enumerate(self.ends):
            if reach >> i & 1:
                mask |= SHOWING[value]
        return mask

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
    ) -> Trains | FoulKind:
        """Returns the trains after ``seat`` plays ``[a, b]`` on ``train``, or the foul."""
        if end is not None:
            return FoulKind.END_NOT_AVAILABLE
        if train is None:
            return FoulKind.END_MISSING
        table = self.table
        i = table.numbers.get(train)
        if i is None:
            return FoulKind.END_NOT_AVAILABLE
        pending = self.pending
        if pending not in (NOT_PENDING, i):
            return FoulKind.DOUBLE_UNSATISFIED
        opened = self.open
        if i != seat and i < table.seats and not opened >> i & 1:
            return FoulKind.TRAIN_CLOSED
        value = self.ends[i]
        if a == value:
            shown = b
        elif b == value:
            shown = a
        else:
            return FoulKind.TILE_DOES_NOT_MATCH
        ends = self.ends
        ends = (*ends[:i], shown, *ends[i + 1 :])
        if i == seat:
            opened &= ~(1 << i)  # the owner's play closes their train
        pending = pending_seat = NOT_PENDING
        if a == b:
            double = bit_of((a, a))
            if hands[seat] != double:  # a last tile ends the round: never pending
                live = boneyard
                for hand in hands:
                    live |= hand
                if live & ~double & SHOWING[a]:  # someone may still hold a tile showing a
                    pending, pending_seat = i, seat
        return _new(Trains, (ends, opened, pending, pending_seat, table))

    def passed(self, seat: int, /) -> Trains:
        """Returns the trains after an applied pass: the passer's train opens, and under
        ``follow_up`` the passer's own pending double stops being pending."""
        opened = self.open | 1 << seat
        pending, pending_seat = self.pending, self.pending_seat
        if pending_seat == seat and self.table.follow_up:
            pending = pending_seat = NOT_PENDING
        if opened == self.open and pending == self.pending:
            return self
        return Trains(self.ends, opened, pending, pending_seat, self.table)

    def restart(self, before: Layout, seat: int, /) -> Restart:
        """Returns what the pass by ``seat`` that turned ``before`` into this does to the chain:
        compared seat by seat, the trains available before and after."""
        assert isinstance(before, Trains)
        changed = [before.reach(s) != self.reach(s) for s in range(self.table.seats)]
        if not any(changed):
            return Restart.CONTINUE
        return Restart.EMPTY if changed[seat] else Restart.FRESH

    def places(self, seat: int, /) -> tuple[Place, ...] | None:
        """Returns the trains available to ``seat`` with the values they show."""
        reach = self.reach(seat)
        names = self.table.names
        return tuple(
            Place(None, names[i], value) for i, value in enumerate(self.ends) if reach >> i & 1
        )

    def open_ends(self) -> dict[str, int]:
        """Returns every train and the value its end shows."""
        return dict(zip(self.table.names, self.ends, strict=True))

    def counted(self) -> int | None:
        """Returns ``None``: trains keep no count (``play_scoring`` is not for trains)."""
        return None


def trains_table(players: tuple[str, ...], seats: Mapping[str, int], rules: Rules) -> TrainsSetup:
    """Returns the trains of a game: one per player, and the Mexican train if it has one."""
    names = (*players, MEXICAN) if rules.mexican_train else players
    index = {**seats, MEXICAN: len(players)} if rules.mexican_train else dict(seats)
    return TrainsSetup(names, index, len(players), rules.double_rule is DoubleRule.FOLLOW_UP)


def lay_engine(
    engine: int, players: tuple[str, ...], seats: Mapping[str, int], rules: Rules
) -> Trains:
    """Returns the trains of a round whose engine is ``[engine, engine]``: every personal
    train closed and empty, the Mexican train open."""
    table = trains_table(players, seats, rules)
    opened = 1 << len(players) if rules.mexican_train else 0
    return Trains((engine,) * len(table.names), opened, NOT_PENDING, NOT_PENDING, table)
