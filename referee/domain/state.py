"""The state of a game and of the round in play, as immutable values."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from typing import NamedTuple

from referee.domain.events import End
from referee.domain.layout import Layout
from referee.domain.line import EMPTY_LINE
from referee.domain.rules import Layout as LayoutKind
from referee.domain.rules import PlayScoring, Rules
from referee.domain.spinner import empty_spinner
from referee.domain.teams import Teams, seat_teams
from referee.domain.tiles import Tile, TileMask, mask_pips, shows, sorted_tiles, tiles_of
from referee.domain.trains import lay_engine

_new = tuple.__new__


class Move(NamedTuple):
    """A play a player could make: the tile and the place (an end or a train) it goes on."""

    tile: Tile
    end: End | None
    train: str | None = None


class RoundState(NamedTuple):
    """The round in play: hands by seat, boneyard, layout, whose turn, the block chain.

    States are immutable records. They are named tuples rather than frozen dataclasses
    because the judge builds one per event and a named tuple is four times cheaper to build
    (docs/design.md, "Performance"). Hands and boneyard are tile masks (``tiles.py``): the
    judge tests, adds and removes a tile with one integer operation. Build one with
    ``round_state``.
    """

    round_number: int
    hand_masks: tuple[TileMask, ...]
    """Each seat's hand as a tile mask."""
    boneyard_mask: TileMask
    """The boneyard as a tile mask."""
    layout: Layout
    """Where the tiles are played: a line, a spinner or trains (``layout.py``)."""
    turn: int
    """The seat whose turn it is."""
    drew: bool
    """Whether the player whose turn it is has drawn during this turn."""
    chain: tuple[int, ...]
    """Seats that made consecutive legitimate passes with the boneyard exhausted, proposer
    first."""
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
        """Checks if the player in ``seat`` holds a tile that plays on an end available to them."""
        return self.hand_masks[seat] & self.layout.playable(seat) != 0

    def legal_plays(self, seat: int) -> list[Move]:
        """Returns every move the player in ``seat`` could make now."""
        hand = sorted_tiles(self.hand_masks[seat])
        places = self.layout.places(seat)
        if places is None:
            return [Move(t, None) for t in hand]
        return [
            Move(t, place.end, place.train)
            for t in hand
            for place in places
            if shows(t, place.value)
        ]

    def nobody_can_play(self) -> bool:
        """Checks condition 1 of a block: no hand holds a tile for an end available to it."""
        layout = self.layout
        return not any(hand & layout.playable(seat) for seat, hand in enumerate(self.hand_masks))

    def is_blocked(self, boneyard_reserve: int = 0) -> bool:
        """Checks both conditions of a block: nobody can play and the boneyard is exhausted."""
        return self.boneyard_mask.bit_count() <= boneyard_reserve and self.nobody_can_play()

    def pip_counts(self, double_blank: int) -> tuple[int, ...]:
        """Returns each seat's pip count."""
        return tuple(mask_pips(h, double_blank) for h in self.hand_masks)


def round_state(
    round_number: int,
    hand_masks: tuple[TileMask, ...],
    boneyard_mask: TileMask,
    layout: Layout,
    turn: int,
    chain: tuple[int, ...] = (),
    *,
    drew: bool = False,
    ended: bool = False,
) -> RoundState:
    """Returns the round of these fields, exactly as ``RoundState(...)`` would.

    It skips the named tuple's generated ``__new__``, a Python-level call (the judge builds a
    round per event: docs/design.md, "Performance choices"); a test holds it to the plain
    constructor.
    """
    return _new(
        RoundState, (round_number, hand_masks, boneyard_mask, layout, turn, drew, chain, ended)
    )


class GameState(NamedTuple):
    """A game: who sits where, its rules and teams, the cumulative scores (one per team),
    the current round, the winner."""

    players: tuple[str, ...]
    rules: Rules
    seats: Mapping[str, int]
    teams: Teams
    scores: tuple[int, ...]
    """Cumulative score by team number (by seat when every player is a team of one)."""
    round: RoundState | None = None
    winner: str | None = None

    @property
    def is_over(self) -> bool:
        """Checks if the game has been won."""
        return self.winner is not None

    def by_player(self, values: Iterable[int]) -> dict[str, int]:
        """Returns per-seat values keyed by player, in seating order."""
        return dict(zip(self.players, values, strict=True))

    def player_scores(self) -> dict[str, int]:
        """Returns each player's cumulative score: their team's."""
        return self.by_player(self.teams.by_seat(self.scores))

    def with_round(self, rnd: RoundState) -> GameState:
        """Returns this game with ``rnd`` as its current round."""
        return game_state(
            self.players, self.rules, self.seats, self.teams, self.scores, rnd, self.winner
        )

    def with_scores(self, scores: tuple[int, ...], rnd: RoundState | None) -> GameState:
        """Returns this game with new cumulative scores and round."""
        return game_state(
            self.players, self.rules, self.seats, self.teams, scores, rnd, self.winner
        )


def game_state(
    players: tuple[str, ...],
    rules: Rules,
    seats: Mapping[str, int],
    teams: Teams,
    scores: tuple[int, ...],
    rnd: RoundState | None = None,
    winner: str | None = None,
) -> GameState:
    """Returns the game of these fields, exactly as ``GameState(...)`` would (skipping the
    named tuple's generated ``__new__``, as ``round_state`` does; a test holds it to it)."""
    return _new(GameState, (players, rules, seats, teams, scores, rnd, winner))


def new_game(
    players: tuple[str, ...], rules: Rules, teams: Mapping[str, tuple[str, ...]] | None = None
) -> GameState:
    """Returns the state of a game that has just started."""
    seated = seat_teams(players, teams)
    return GameState(
        players=players,
        rules=rules,
        seats={p: i for i, p in enumerate(players)},
        teams=seated,
        scores=_zero_scores(seated.size),
    )


@cache
def _zero_scores(teams: int) -> tuple[int, ...]:
    """Returns the scores of a game that has just started, shared by every game of as many
    teams."""
    return (0,) * teams


def new_layout(
    rules: Rules, players: tuple[str, ...], seats: Mapping[str, int], engine: Tile | None
) -> Layout:
    """Returns the layout a round of these rules starts from (with its engine, in trains)."""
    if rules.layout is LayoutKind.TRAINS:
        assert engine is not None, "a trains round has an engine (checked with the deal)"
        return lay_engine(engine[0], players, seats, rules)
    if rules.layout is LayoutKind.SPINNER:
        return empty_spinner(rules.spinner_arms)
    if rules.play_scoring is not PlayScoring.NONE:
        return empty_spinner(None)  # a line that counts: a spinner layout that never spins
    return EMPTY_LINE
