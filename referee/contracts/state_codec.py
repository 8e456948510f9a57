"""A game's state as stored in the projection: plain JSON, and back, losslessly.

An edition-1 game (a line, no teams, edition-1 options) encodes exactly as edition 1 stored
it, so projections written by the old code decode and compare equal. A spinner or trains
round adds a ``layout`` object instead of ``left`` and ``right``; a game with teams adds
``teams``; rules add only the edition-2 options that are not at their defaults. ``scores`` are
by seat, each player's cumulative score (their team's), as the store's ``standings`` view
reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from referee.contracts.wire import RulesWire
from referee.domain.layout import Layout
from referee.domain.line import Line, line_at
from referee.domain.rules import Rules, SpinnerArms
from referee.domain.spinner import Spinner, empty_spinner, spinner_at
from referee.domain.state import GameState, RoundState, round_state
from referee.domain.teams import Teams, seat_teams
from referee.domain.tiles import mask_of, sorted_tiles, tile
from referee.domain.trains import NOT_PENDING, Trains, trains_table

_encode = msgspec.json.Encoder(order="sorted").encode
_decode = msgspec.json.Decoder().decode


def _layout_to_json(layout: Layout) -> dict[str, Any]:
    if isinstance(layout, Spinner):
        return {
            "kind": "spinner",
            **{name: getattr(layout, name) for name in _SPINNER_FIELDS},
            "arms": None if layout.arms is None else layout.arms.value,
        }
    if isinstance(layout, Trains):
        names = layout.table.names
        return {
            "kind": "trains",
            "ends": list(layout.ends),
            "open": [n for i, n in enumerate(names) if layout.open >> i & 1],
            "pending": None if layout.pending == NOT_PENDING else names[layout.pending],
            "pending_seat": None if layout.pending_seat == NOT_PENDING else layout.pending_seat,
        }
    raise TypeError(f"no encoding for the layout {layout!r}")


_SPINNER_FIELDS = (
    "left",
    "right",
    "left_weight",
    "right_weight",
    "single",
    "spinner",
    "sides",
    "up",
    "down",
    "up_weight",
    "down_weight",
)


def _round_to_json(rnd: RoundState) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "number": rnd.round_number,
        "hands": [_tiles_json(h) for h in rnd.hand_masks],
        "boneyard": _tiles_json(rnd.boneyard_mask),
    }
    layout = rnd.layout
    if isinstance(layout, Line):
        doc["left"], doc["right"] = layout.left, layout.right  # edition 1's keys
    else:
        doc["layout"] = _layout_to_json(layout)
    doc.update(turn=rnd.turn, drew=rnd.drew, chain=list(rnd.chain), ended=rnd.ended)
    return doc


# The live path encodes the state of every game a batch touched. What does not change over a
# game (its players, rules and teams) is encoded once per game, and a hand (or boneyard) once
# per distinct mask: pieces already encoded are put in as ``msgspec.Raw``, which the encoder
# copies verbatim, so the bytes are those of encoding the whole document at once (the pieces
# come from the same sorted-key encoder; a test holds the two equal).
_TILES: dict[int, msgspec.Raw] = {}
_Fixed = tuple[tuple[str, ...], Rules, Teams, msgspec.Raw, msgspec.Raw, msgspec.Raw | None]
_FIXED: dict[int, _Fixed] = {}
_REMEMBERED = 4096
"""Entries each cache keeps before it starts over: a bound on memory (docs/design.md,
"Performance choices"), above the games and hands a few live batches touch (games opened and
never touched again gain nothing from them)."""


def _tiles_json(mask: int) -> msgspec.Raw:
    raw = _TILES.get(mask)
    if raw is None:
        if len(_TILES) >= _REMEMBERED:
            _TILES.clear()
        raw = _TILES[mask] = msgspec.Raw(_encode(sorted_tiles(mask)))
    return raw


def _fixed_json(game: GameState) -> tuple[msgspec.Raw, msgspec.Raw, msgspec.Raw | None]:
    """The encoded players, rules and teams of a game: what no action changes.

    Cached under the identity of the game's players tuple, which every state of a game
    shares; the entry keeps that tuple (so its identity cannot be reused while cached), and
    the three fields are compared by identity before the entry is trusted."""
    key = id(game.players)
    cached = _FIXED.get(key)
    if cached is not None:
        of_players, of_rules, of_teams, players, rules, teams = cached
        if of_players is game.players and of_rules is game.rules and of_teams is game.teams:
            return players, rules, teams
    if len(_FIXED) >= _REMEMBERED:
        _FIXED.clear()
    players = msgspec.Raw(_encode(list(game.players)))
    rules = msgspec.Raw(_encode(RulesWire.from_domain(game.rules)))
    members = _team_members(game)
    teams = None if members is None else msgspec.Raw(_encode(members))
    _FIXED[key] = (game.players, game.rules, game.teams, players, rules, teams)
    return players, rules, teams


def encode_state(game: GameState) -> bytes:
    """Returns the game's state as canonical JSON."""
    players, rules, teams = _fixed_json(game)
    doc: dict[str, Any] = {
        "players": players,
        "rules": rules,
        # By seat, each player's team figure: the store's standings view reads it so.
        "scores": list(game.teams.by_seat(game.scores)),
        "round": None if game.round is None else _round_to_json(game.round),
        "winner": game.winner,
    }
    if teams is not None:
        doc["teams"] = teams
    return _encode(doc)


def encode_state_plainly(game: GameState) -> bytes:
    """Returns what ``encode_state`` returns, encoded in one piece, with no cache (the
    definition the cached encoding is held to)."""
    rnd = game.round
    doc: dict[str, Any] = {
        "players": list(game.players),
        "rules": RulesWire.from_domain(game.rules),
        "scores": list(game.teams.by_seat(game.scores)),
        "round": None,
        "winner": game.winner,
    }
    if rnd is not None:
        layout = rnd.layout
        doc["round"] = {
            "number": rnd.round_number,
            "hands": [sorted_tiles(h) for h in rnd.hand_masks],
            "boneyard": sorted_tiles(rnd.boneyard_mask),
            **(
                {"left": layout.left, "right": layout.right}
                if isinstance(layout, Line)
                else {"layout": _layout_to_json(layout)}
            ),
            "turn": rnd.turn,
            "drew": rnd.drew,
            "chain": list(rnd.chain),
            "ended": rnd.ended,
        }
    members = _team_members(game)
    if members is not None:
        doc["teams"] = members
    return _encode(doc)


def _team_members(game: GameState) -> dict[str, list[str]] | None:
    """Each team's players in seat order, by team id (``None``: no teams)."""
    ids = game.teams.ids
    if ids is None:
        return None
    of_seat = game.teams.of_seat
    return {
        team: [p for seat, p in enumerate(game.players) if of_seat[seat] == t]
        for t, team in enumerate(ids)
    }


def _mask(items: list[list[int]]) -> int:
    return mask_of(tile(a, b) for a, b in items)


def _layout_of(
    doc: dict[str, Any], rules: Rules, players: tuple[str, ...], seats: Mapping[str, int]
) -> Layout:
    if doc["kind"] == "spinner":
        arms = None if doc["arms"] is None else SpinnerArms(doc["arms"])
        if doc["left"] is None:
            return empty_spinner(arms)
        left, right, lw, rw, single, spinner, sides, up, down, uw, dw = (
            doc[name] for name in _SPINNER_FIELDS
        )
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
    table = trains_table(players, seats, rules)
    opened = 0
    for name in doc["open"]:
        opened |= 1 << table.numbers[name]
    pending = doc["pending"]
    pending_seat = doc["pending_seat"]
    return Trains(
        tuple(doc["ends"]),
        opened,
        NOT_PENDING if pending is None else table.numbers[pending],
        NOT_PENDING if pending_seat is None else pending_seat,
        table,
    )


def decode_state(data: bytes | str) -> GameState:
    """Returns the game's state from its stored JSON (edition 1's included)."""
    doc = _decode(data)
    players = tuple(doc["players"])
    seats = {p: i for i, p in enumerate(players)}
    rules = msgspec.convert(doc["rules"], RulesWire).to_domain()
    r = doc["round"]
    rnd = None
    if r is not None:
        if "layout" in r:
            layout = _layout_of(r["layout"], rules, players, seats)
        else:
            layout = line_at(r["left"], r["right"])
        rnd = round_state(
            r["number"],
            tuple(_mask(h) for h in r["hands"]),
            _mask(r["boneyard"]),
            layout,
            r["turn"],
            tuple(r["chain"]),
            drew=r["drew"],
            ended=r["ended"],
        )
    teams = seat_teams(players, doc.get("teams"))
    by_seat = doc["scores"]
    return GameState(
        players=players,
        rules=rules,
        seats=seats,
        teams=teams,
        scores=tuple(by_seat[teams.members(t)[0]] for t in range(teams.size)),
        round=rnd,
        winner=doc["winner"],
    )
