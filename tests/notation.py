"""A compact notation for domain tests: tables, deals and actions written the way players talk.

    table("ann: 5-10 12-12 | bob: 3-4 | cid: 0-0 | boneyard: 1-2 | left 3 right 7 | turn bob")

Sections are separated by ``|``. ``NAME: tiles`` gives a hand (players sit in the order their
hands are written); ``boneyard: tiles``; ``left A right B`` the open ends (absent: an empty
layout); ``turn NAME`` whose turn it is (default: the first player); ``drew`` that the player
on turn has drawn this turn; ``chain NAME ...`` the confirmation chain; ``round N``.
A tile is written ``a-b``; an empty list of tiles is written ``-`` or nothing.

Trains (``layout: trains``): ``engine E`` names the deal's engine ``[E,E]``; in ``table`` the
trains are ``trains ann 5 bob 12 mexican 11`` (every train, with the value its end shows),
``open bob`` the open personal trains, ``pending bob by ann`` a pending double on bob's train
played by ann. Actions: ``"ann plays 5-10 on bob"`` names a train, ``"ann plays 6-3 up"`` an end.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from referee.domain.events import (
    Action,
    End,
    GameStarted,
    Passed,
    RoundStarted,
    TileDrawn,
    TilePlayed,
)
from referee.domain.fouls import FoulKind
from referee.domain.judge import Judgement, judge
from referee.domain.layout import Layout
from referee.domain.line import Line, line_at
from referee.domain.rules import Rules
from referee.domain.spinner import Spinner
from referee.domain.state import GameState, RoundState
from referee.domain.teams import seat_teams
from referee.domain.tiles import Tile, mask_of, tile
from referee.domain.trains import MEXICAN, NOT_PENDING, Trains, trains_table
from referee.domain.verdicts import (
    BlockDeclared,
    FoulRecorded,
    GameWon,
    PointsScored,
    RoundScored,
    Verdict,
)

V = TypeVar("V", FoulRecorded, PointsScored, BlockDeclared, RoundScored, GameWon)


def raw(text: str) -> Tile:
    """Returns the tile ``"a-b"`` as written (orientation kept)."""
    a, b = text.strip().split("-")
    return (int(a), int(b))


def t(text: str) -> Tile:
    """Returns the tile ``"a-b"`` in its normal form (smaller first)."""
    return tile(*raw(text))


def tiles(text: str) -> frozenset[Tile]:
    """Returns the set of tiles ``"a-b c-d ..."`` (``"-"`` or ``""`` for none)."""
    return frozenset(t(w) for w in text.split() if w != "-")


def _raw_tiles(text: str) -> tuple[Tile, ...]:
    return tuple(raw(w) for w in text.split() if w != "-")


class _Sections:
    def __init__(self, spec: str) -> None:
        self.hands: dict[str, tuple[Tile, ...]] = {}
        self.boneyard: tuple[Tile, ...] = ()
        self.left: int | None = None
        self.right: int | None = None
        self.turn: str | None = None
        self.drew = False
        self.chain: tuple[str, ...] = ()
        self.round = 1
        self.engine: int | None = None
        self.trains: dict[str, int] = {}
        self.open: tuple[str, ...] = ()
        self.pending: tuple[str, str] | None = None
        for section in (s.strip() for s in spec.split("|")):
            self._read(section)

    def _read(self, section: str) -> None:
        words = section.split()
        if ":" in section:
            name, _, rest = section.partition(":")
            if name.strip() == "boneyard":
                self.boneyard = _raw_tiles(rest)
            else:
                self.hands[name.strip()] = _raw_tiles(rest)
        elif words[0] == "left":
            assert words[2] == "right", section
            self.left, self.right = int(words[1]), int(words[3])
        elif words[0] in {"turn", "leader"}:
            self.turn = words[1]
        elif words == ["drew"]:
            self.drew = True
        elif words[0] == "chain":
            self.chain = tuple(words[1:])
        elif words[0] == "round":
            self.round = int(words[1])
        elif words[0] == "engine":
            self.engine = int(words[1])
        elif words[0] == "trains":
            self.trains = {words[i]: int(words[i + 1]) for i in range(1, len(words), 2)}
        elif words[0] == "open":
            self.open = tuple(words[1:])
        elif words[0] == "pending":
            assert words[2] == "by", section
            self.pending = (words[1], words[3])
        else:
            raise ValueError(f"cannot read {section!r}")

    @property
    def players(self) -> tuple[str, ...]:
        return tuple(self.hands)


def table(
    spec: str,
    rules: Rules | None = None,
    scores: Mapping[str, int] | None = None,
    teams: Mapping[str, tuple[str, ...]] | None = None,
) -> GameState:
    """Returns a game in the middle of a round, built directly from the notation.

    ``scores`` are by player, or by team id when ``teams`` are given.
    """
    s = _Sections(spec)
    players = s.players
    seats = {p: i for i, p in enumerate(players)}
    rules = rules or Rules()
    layout: Layout = line_at(s.left, s.right)
    if s.trains:
        layout = _trains(s, players, seats, rules)
    rnd = RoundState(
        round_number=s.round,
        hand_masks=tuple(mask_of(s.hands[p]) for p in players),
        boneyard_mask=mask_of(s.boneyard),
        layout=layout,
        turn=seats[s.turn or players[0]],
        drew=s.drew,
        chain=tuple(seats[p] for p in s.chain),
    )
    seated = seat_teams(players, teams)
    given = scores or {}
    return GameState(
        players=players,
        rules=rules,
        seats=seats,
        teams=seated,
        scores=tuple(given.get(p, 0) for p in seated.ids or players),
        round=rnd,
    )


def _trains(s: _Sections, players: tuple[str, ...], seats: dict[str, int], rules: Rules) -> Trains:
    built = trains_table(players, seats, rules)
    assert set(s.trains) == set(built.names), f"every train, please: {built.names}"
    opened = 0
    for name in (*s.open, *([MEXICAN] if rules.mexican_train else [])):
        opened |= 1 << built.numbers[name]
    pending = pending_seat = NOT_PENDING
    if s.pending is not None:
        pending, pending_seat = built.numbers[s.pending[0]], seats[s.pending[1]]
    ends = tuple(s.trains[name] for name in built.names)
    return Trains(ends, opened, pending, pending_seat, built)


def dealt(spec: str, round: int = 1) -> RoundStarted:  # noqa: A002 - the event's own word
    """Returns the ``RoundStarted`` of the notation (``leader NAME``; default the first hand)."""
    s = _Sections(spec)
    engine = None if s.engine is None else (s.engine, s.engine)
    return RoundStarted(
        round=round,
        hands=dict(s.hands),
        boneyard=s.boneyard,
        leader=s.turn or s.players[0],
        engine=engine,
    )


def started(
    players: str, rules: Rules | None = None, teams: Mapping[str, tuple[str, ...]] | None = None
) -> GameState:
    """Returns a game just started the normal way: ``started("ann bob cid")``."""
    game, verdicts = judge(None, GameStarted(tuple(players.split()), rules or Rules(), teams))
    assert verdicts == ()
    return game


def deal(
    spec: str, rules: Rules | None = None, teams: Mapping[str, tuple[str, ...]] | None = None
) -> GameState:
    """Returns a game started with ``GameStarted`` then dealt its first round from ``spec``."""
    event = dealt(spec)
    game = started(" ".join(event.hands), rules, teams)
    game, verdicts = judge(game, event)
    assert verdicts == ()
    return game


def next_round(game: GameState, spec: str) -> GameState:
    """Returns the game after the next ``RoundStarted``, dealt from ``spec``."""
    assert game.round is not None
    game, verdicts = judge(game, dealt(spec, game.round.round_number + 1))
    assert verdicts == ()
    return game


def _round_of(game: GameState, rnd: int | None) -> int:
    if rnd is not None:
        return rnd
    assert game.round is not None
    return game.round.round_number


def play(
    game: GameState,
    player: str,
    tile_text: str,
    end: str | None = None,
    rnd: int | None = None,
    train: str | None = None,
) -> Judgement:
    """Judges ``player`` putting the tile (as written) on ``end`` ("left", "right", "up",
    "down" or none) or on ``train``."""
    return judge(
        game,
        TilePlayed(_round_of(game, rnd), player, raw(tile_text), End(end) if end else None, train),
    )


def draw(game: GameState, player: str, tile_text: str, rnd: int | None = None) -> Judgement:
    """Judges ``player`` drawing the tile from the boneyard."""
    return judge(game, TileDrawn(_round_of(game, rnd), player, raw(tile_text)))


def pass_(game: GameState, player: str, rnd: int | None = None) -> Judgement:
    """Judges ``player`` passing."""
    return judge(game, Passed(_round_of(game, rnd), player))


def action(game: GameState, line: str) -> Action:
    """Returns the action written ``"bob plays 3-4 left"``, ``"bob plays 3-4 on mexican"``,
    ``"bob plays 3-4 left on bob"`` (both places), ``"bob draws 1-2"``, ``"bob passes"``."""
    words = line.split()
    player, verb = words[0], words[1]
    number = _round_of(game, None)
    if verb == "plays":
        end = End(words[3]) if len(words) > 3 and words[3] != "on" else None
        train = words[words.index("on") + 1] if "on" in words else None
        return TilePlayed(number, player, raw(words[2]), end, train)
    if verb == "draws":
        return TileDrawn(number, player, raw(words[2]))
    if verb == "passes":
        return Passed(number, player)
    raise ValueError(f"cannot read {line!r}")


def act(game: GameState, line: str) -> Judgement:
    """Judges one action written as ``action`` reads it."""
    return judge(game, action(game, line))


def steps(game: GameState, *lines: str) -> tuple[GameState, list[tuple[Verdict, ...]]]:
    """Judges the actions in order; returns the final game and each action's verdicts."""
    produced: list[tuple[Verdict, ...]] = []
    for line in lines:
        game, verdicts = act(game, line)
        produced.append(verdicts)
    return game, produced


def everyone_passes(game: GameState) -> Judgement:
    """Judges a pass by each player in turn from the one on turn; returns the last judgement."""
    verdicts: tuple[Verdict, ...] = ()
    for _ in game.players:
        assert game.round is not None
        game, verdicts = pass_(game, game.players[game.round.turn])
    return game, verdicts


# --- reading the outcome ---------------------------------------------------------------------


def kinds(verdicts: Iterable[Verdict]) -> list[str]:
    """Returns the verdicts' type names, in order."""
    return [type(v).__name__ for v in verdicts]


def only(verdicts: Sequence[Verdict], kind: type[V]) -> V:
    """Returns the single verdict of ``kind`` among ``verdicts``."""
    found = [v for v in verdicts if isinstance(v, kind)]
    assert len(found) == 1, f"expected one {kind.__name__}, got {kinds(verdicts)}"
    return found[0]


def fouls(verdicts: Iterable[Verdict]) -> list[tuple[str, FoulKind, bool]]:
    """Returns each recorded foul as ``(player, kind, applied)``."""
    return [(v.player, v.foul, v.applied) for v in verdicts if isinstance(v, FoulRecorded)]


def rnd(game: GameState) -> RoundState:
    """Returns the current round (which must exist)."""
    assert game.round is not None
    return game.round


def hand(game: GameState, player: str) -> frozenset[Tile]:
    """Returns the tiles ``player`` holds."""
    return rnd(game).hands[game.seats[player]]


def turn(game: GameState) -> str:
    """Returns the player whose turn it is."""
    return game.players[rnd(game).turn]


def ends(game: GameState) -> tuple[int | None, int | None]:
    """Returns the line's (left, right)."""
    layout = rnd(game).layout
    assert isinstance(layout, Line | Spinner), layout
    return layout.left, layout.right


def scores(game: GameState) -> dict[str, int]:
    """Returns the cumulative scores by player (each their team's)."""
    return game.player_scores()


def trains_of(game: GameState) -> Trains:
    """Returns the round's trains (the layout must be trains)."""
    layout = rnd(game).layout
    assert isinstance(layout, Trains), layout
    return layout


def open_trains(game: GameState) -> set[str]:
    """Returns the ids of the open trains."""
    layout = trains_of(game)
    return {n for i, n in enumerate(layout.table.names) if layout.open >> i & 1}


def spinner_of(game: GameState) -> Spinner:
    """Returns the round's spinner layout (the layout must be one)."""
    layout = rnd(game).layout
    assert isinstance(layout, Spinner), layout
    return layout
