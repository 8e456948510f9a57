"""The state of a game and of the round in play, as immutable values."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from referee.domain.events import End
from referee.domain.rules import Rules
from referee.domain.tiles import SHOWING, Tile, mask_pips, shows, sorted_tiles, tiles_of


class RoundState(NamedTuple):
    """The round in play: hands by seat, boneyard, open ends, whose turn, the block chain.

    States are immutable records. They are named tuples rather than frozen dataclasses
    because the judge builds one per event and a named tuple is four times cheaper to build
    (docs/design.md, "Performance"). Hands and boneyard are tile masks (``tiles.py``): the
    judge tests, adds and removes a tile with one integer operation.
    """

    number: int
    hand_masks: tuple[int, ...]
    """Each seat's hand as a tile mask."""
    boneyard_mask: int
    """The boneyard as a tile mask."""
    left: int | None
    """The value shown at the left end; ``None`` while the layout is empty."""
    right: int | None
    turn: int
    """The seat whose turn it is."""
    drew: bool
    """Whether the player whose turn it is has drawn during this turn."""
    chain: tuple[int, ...]
    """Seats that made consecutive legitimate passes with the boneyard empty, proposer first."""
    ended: bool = False

    @property
    def hands(self) -> tuple[frozenset[Tile], ...]:
        """Returns each seat's hand as a set of tiles."""
        return tuple(tiles_of(m) for m in self.hand_masks)

    @property
    def boneyard(self) -> frozenset[Tile]:
        """Returns the boneyard as a set of tiles."""
        return tiles_of(self.boneyard_mask)

    def can_play(self, seat: int) -> bool:
        """Checks if the player in ``seat`` holds a tile that matches an open end."""
        return hand_can_play(self.hand_masks[seat], self.left, self.right)

    def legal_plays(self, seat: int) -> list[tuple[Tile, End | None]]:
        """Returns every (tile, end) the player in ``seat`` could play now."""
        hand = sorted_tiles(self.hand_masks[seat])
        if self.left is None or self.right is None:
            return [(t, None) for t in hand]
        plays: list[tuple[Tile, End | None]] = []
        for t in hand:
            if shows(t, self.left):
                plays.append((t, End.LEFT))
            if shows(t, self.right):
                plays.append((t, End.RIGHT))
        return plays

    def nobody_can_play(self) -> bool:
        """Checks condition 1 of a block: no hand matches an open end."""
        return not any(hand_can_play(h, self.left, self.right) for h in self.hand_masks)

    def is_blocked(self) -> bool:
        """Checks both conditions of a block: nobody can play and the boneyard is empty."""
        return not self.boneyard_mask and self.nobody_can_play()

    def pip_counts(self, double_blank: int) -> tuple[int, ...]:
        """Returns each seat's pip count."""
        return tuple(mask_pips(h, double_blank) for h in self.hand_masks)


def hand_can_play(hand: int, left: int | None, right: int | None) -> bool:
    """Checks if some tile of the ``hand`` mask shows ``left`` or ``right``.

    On an empty layout (``left`` is ``None``) any tile can be played.
    """
    if left is None or right is None:
        return hand != 0
    return hand & (SHOWING[left] | SHOWING[right]) != 0


class GameState(NamedTuple):
    """A game: who sits where, its rules, cumulative scores, the current round, the winner."""

    players: tuple[str, ...]
    rules: Rules
    seats: Mapping[str, int]
    scores: tuple[int, ...]
    round: RoundState | None = None
    winner: str | None = None

    @property
    def is_over(self) -> bool:
        """Checks if the game has been won."""
        return self.winner is not None

    def by_player(self, values: Iterable[int]) -> dict[str, int]:
        """Returns per-seat values keyed by player, in seating order."""
        return dict(zip(self.players, values, strict=True))

    def with_round(self, rnd: RoundState) -> GameState:
        """Returns this game with ``rnd`` as its current round."""
        return GameState(self.players, self.rules, self.seats, self.scores, rnd, self.winner)

    def with_scores(self, scores: tuple[int, ...], rnd: RoundState | None) -> GameState:
        """Returns this game with new cumulative scores and round."""
        return GameState(self.players, self.rules, self.seats, scores, rnd, self.winner)

    def next_seat(self, seat: int) -> int:
        """Returns the seat clockwise after ``seat``."""
        return (seat + 1) % len(self.players)


def new_game(players: tuple[str, ...], rules: Rules) -> GameState:
    """Returns the state of a game that has just started."""
    return GameState(
        players=players,
        rules=rules,
        seats={p: i for i, p in enumerate(players)},
        scores=(0,) * len(players),
    )
