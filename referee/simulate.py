"""``referee simulate``: a seeded, realistic event log of many interleaved games.

The simulator keeps the true table with the domain's own state and judge, so every event it
writes is what a real backend would send; fouls and bad lines are injected at chosen rates.
Every family of the rulebook is played: the line, the spinner (All Fives), trains (Mexican
Train), partnerships, scoring during play and penalty scoring.

``--rules edition1`` draws rules exactly as edition 1's ``--rules random`` did, and such a
game (like every game of ``--rules default``) plays exactly as it did then: the same seed
gives the same log, byte for byte, which is what the compatibility check replays.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from referee.contracts.wire import GameStartedWire, RulesWire
from referee.domain.events import (
    End,
    GameEvent,
    GameStarted,
    Passed,
    RoundStarted,
    TileDrawn,
    TilePlayed,
)
from referee.domain.judge import judge
from referee.domain.options import game_problem
from referee.domain.rules import (
    BlockConfirmation,
    BlockWinner,
    DoubleRule,
    DrawRule,
    DrawWhileAble,
    EngineOrder,
    Layout,
    PlayScoring,
    PointsPolicy,
    Rounding,
    Rules,
    Scoring,
    SpinnerArms,
    TiePolicy,
)
from referee.domain.state import GameState, RoundState
from referee.domain.tiles import Tile, full_set
from referee.domain.trains import Trains

EPOCH = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
_encode = msgspec.json.Encoder().encode

RULE_CHOICES = ("default", "random", "edition1")
"""``--rules``: every option at its default; drawn across every family; drawn as edition 1
drew them."""


@dataclass(frozen=True, slots=True)
class SimulationOptions:
    """What to simulate.

    ``layout``, ``teams``, ``play_scoring`` and ``scoring`` force that option on every game
    (whatever ``rules`` draws), dropping what cannot go with it.
    """

    games: int = 100
    seed: int = 1
    rules: str = "random"
    foul_rate: float = 0.02
    bad_rate: float = 0.0
    duplicate_rate: float = 0.0
    concurrency: int = 200
    max_rounds: int = 3
    layout: str | None = None
    teams: bool = False
    play_scoring: str | None = None
    scoring: str | None = None

    @property
    def forces(self) -> bool:
        """Checks if an option is forced on every game."""
        return bool(self.layout or self.teams or self.play_scoring or self.scoring)


def options_problem(options: SimulationOptions) -> str | None:
    """Returns why the forced options cannot make a game together, if they cannot."""
    if options.rules not in RULE_CHOICES:
        return f"--rules must be one of {', '.join(RULE_CHOICES)}"
    if options.scoring == "penalty" and (
        options.teams or options.play_scoring not in (None, "none")
    ):
        return "--scoring penalty cannot go with --teams or --play-scoring (RULES.md 5.3)"
    if options.layout == "trains" and options.play_scoring not in (None, "none"):
        return "--play-scoring is for the line and the spinner, not trains (RULES.md 10)"
    return None


def simulate(options: SimulationOptions) -> Iterator[tuple[str, bytes]]:
    """Yields (game id, JSON line) for every line of the log, games interleaved."""
    rng = random.Random(options.seed)
    pending = iter(range(options.games))
    active: list[Iterator[tuple[str, bytes]]] = []
    emitted: list[tuple[str, bytes]] = []
    while True:
        while len(active) < options.concurrency:
            index = next(pending, None)
            if index is None:
                break
            game_rng = random.Random(rng.getrandbits(64))
            active.append(game_log(f"sim-{options.seed}-{index:06d}", game_rng, options))
        if not active:
            return
        slot = rng.randrange(len(active))
        item = next(active[slot], None)
        if item is None:
            active[slot] = active[-1]
            active.pop()
            continue
        yield item
        emitted.append(item)
        if len(emitted) > 1000:
            del emitted[:500]
        if options.duplicate_rate and rng.random() < options.duplicate_rate:
            yield rng.choice(emitted)
        if options.bad_rate and rng.random() < options.bad_rate:
            yield _bad_line(rng, emitted, options.seed)


# --- rules ----------------------------------------------------------------------------------


def _edition1_rules(rng: random.Random, players: int) -> dict[str, Any]:
    """Draws rule options exactly as edition 1's ``--rules random`` did."""
    rules: dict[str, Any] = {}
    max_pip = rng.choice((6, 6, 6, 9, 12)) if players <= 4 else rng.choice((9, 12))
    if max_pip != 6:
        rules["max_pip"] = max_pip
    rules["draw"] = rng.choice([d.value for d in DrawRule])
    if rng.random() < 0.3:
        rules["draw_while_able"] = rng.choice([d.value for d in DrawWhileAble])
    if rng.random() < 0.4:
        rules["block_confirmation"] = rng.choice([d.value for d in BlockConfirmation])
    for name in ("block_points", "domino_points"):
        if rng.random() < 0.3:
            rules[name] = rng.choice([d.value for d in PointsPolicy])
    if rng.random() < 0.5:
        rules["tie"] = rng.choice([d.value for d in TiePolicy])
    if rng.random() < 0.3:
        rules["rounding"] = rng.choice([d.value for d in Rounding])
    if rng.random() < 0.2:
        rules["double_blank"] = rng.choice((0, 25, 50))
    if rng.random() < 0.3:
        rules["foul_penalty"] = {"false_pass": 5, "out_of_turn": 2}
    if rng.random() < 0.5:
        rules["target_score"] = rng.choice((30, 60, 100))
    return rules


def _values(kind: type[Any]) -> list[Any]:
    return [member.value for member in kind]


def _random_rules(
    rng: random.Random, players: int, teams: bool, scored_in_play: bool = False
) -> dict[str, Any]:
    """Draws the options of one game across every family (valid together); with
    ``scored_in_play`` (``--play-scoring`` without ``--layout``) only the layouts that score
    during play (RULES.md 10: not trains)."""
    layouts = (
        ("line", "line", "spinner")
        if scored_in_play
        else ("line", "line", "spinner", "trains", "trains")
    )
    layout = rng.choice(layouts)
    rules: dict[str, Any] = {} if layout == "line" and rng.random() < 0.5 else {"layout": layout}
    if layout == "trains":
        max_pip = rng.choice((9, 12, 12)) if players <= 6 else 12
        rules["draw"] = rng.choice(("once", "once", "none", "until_playable", None))
        if rng.random() < 0.3:
            rules["mexican_train"] = rng.random() < 0.5
        if rng.random() < 0.4:
            rules["double_rule"] = rng.choice(_values(DoubleRule))
        if rng.random() < 0.3:
            rules["engine_order"] = rng.choice(_values(EngineOrder))
        award = teams or rng.random() < 0.25
        if award:
            rules["scoring"] = "award"
    else:
        max_pip = rng.choice((6, 6, 9, 12)) if players <= 4 else rng.choice((9, 12))
        rules["draw"] = rng.choice(_values(DrawRule))
        if layout == "spinner" and rng.random() < 0.5:
            rules["spinner_arms"] = rng.choice(_values(SpinnerArms))
        award = teams or rng.random() < 0.8
        if not award:
            rules["scoring"] = "penalty"
        elif rng.random() < (0.8 if layout == "spinner" else 0.3):
            rules["play_scoring"] = rng.choice(_values(PlayScoring))
        if rng.random() < 0.3:
            rules["block_confirmation"] = rng.choice(_values(BlockConfirmation))
    if rules.get("draw") is None:
        rules.pop("draw", None)
    if max_pip != 6:
        rules["max_pip"] = max_pip
    if rules.get("draw") != "none" and rng.random() < 0.3:
        rules["boneyard_reserve"] = rng.randint(0, 2)
    if rng.random() < 0.3:
        rules["draw_while_able"] = rng.choice(_values(DrawWhileAble))
    if award:
        for name in ("block_points", "domino_points"):
            if rng.random() < 0.2:
                rules[name] = rng.choice(_values(PointsPolicy))
        if rng.random() < 0.4:
            rules["tie"] = rng.choice(_values(TiePolicy))
        if rng.random() < 0.3:
            rules["block_winner"] = rng.choice(_values(BlockWinner))
        if rng.random() < 0.2:
            rules["rounding"] = rng.choice(_values(Rounding))
    if rng.random() < 0.15:
        rules["double_blank"] = rng.choice((0, 25, 50))
    if rng.random() < 0.3:
        rules["foul_penalty"] = {"false_pass": 5, "out_of_turn": 2, "train_closed": 3}
    if rng.random() < 0.3:
        rules["rounds"] = rng.randint(1, 3)
    elif rng.random() < 0.5:
        rules["target_score"] = rng.choice((30, 60, 100, 150))
    return rules


def _force(rules: dict[str, Any], options: SimulationOptions) -> dict[str, Any]:
    """Returns the rules with the options forced by ``options``, dropping what conflicts."""
    rules = dict(rules)
    if options.layout is not None:
        if options.layout == "line":
            rules.pop("layout", None)
        else:
            rules["layout"] = options.layout
        if options.layout != "spinner":
            rules.pop("spinner_arms", None)
        if options.layout != "trains":
            for name in ("mexican_train", "double_rule", "engine_order"):
                rules.pop(name, None)
            if rules.get("draw") is None:
                rules.pop("draw", None)
    layout = rules.get("layout", "line")
    if layout == "trains":
        rules.pop("play_scoring", None)
        if rules.get("block_confirmation") == "immediate":
            del rules["block_confirmation"]
    if options.play_scoring is not None:
        rules["play_scoring"] = options.play_scoring
    if options.scoring is not None:
        rules["scoring"] = options.scoring
    elif options.teams or options.play_scoring:
        rules["scoring"] = "award"  # what teams and scoring during play need (trains or not)
    if rules.get("scoring", "penalty" if layout == "trains" else "award") == "penalty":
        for name in ("play_scoring", "block_points", "domino_points", "block_winner", "tie"):
            rules.pop(name, None)
        rules.pop("rounding", None)
    return rules


def _teams_of(players: list[str], rng: random.Random) -> dict[str, list[str]]:
    """Returns partnerships of ``players``: teams of 2 (or of 3 at 6 players), alternating."""
    count = len(players) // 2 if len(players) != 6 or rng.random() < 0.5 else 2
    return {f"team-{t}": [players[i] for i in range(t, len(players), count)] for t in range(count)}


def _rules_wire(rules: dict[str, Any]) -> Rules:
    return msgspec.convert(rules, RulesWire).to_domain()


# --- the table ------------------------------------------------------------------------------


class _SimulatedGame:
    """One simulated game: the true state, kept with the domain's judge."""

    def __init__(self, game_id: str, rng: random.Random, options: SimulationOptions) -> None:
        self.game_id = game_id
        self.rng = rng
        self.options = options
        self.seq = 0
        self.state: GameState | None = None
        self.new_fouls = False
        """Whether fouls of edition 2's kinds are injected too (never in an edition-1 log)."""

    def line(self, kind: str, fields: dict[str, Any]) -> tuple[str, bytes]:
        self.seq += 1
        at = EPOCH + timedelta(seconds=self.seq * 7 + self.rng.randrange(5))
        event = {
            "event_id": f"ev-{self.rng.getrandbits(64):016x}",
            "type": kind,
            "game_id": self.game_id,
            "seq": self.seq,
            "occurred_at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "schema_version": 1,
            **fields,
        }
        return self.game_id, _encode(event)

    def apply(self, event: GameEvent) -> None:
        self.state, _ = judge(self.state, event)


def game_log(
    game_id: str, rng: random.Random, options: SimulationOptions
) -> Iterator[tuple[str, bytes]]:
    """Yields (game id, JSON line) for every line of one game, in order."""
    table = _SimulatedGame(game_id, rng, options)
    if options.teams:
        count = rng.choice((4, 4, 6))
    else:
        count = rng.choice((2, 2, 3, 4, 4)) if rng.random() < 0.9 else rng.randint(5, 10)
    players = [f"p{i}-{rng.getrandbits(24):06x}" for i in range(count)]
    teams: dict[str, list[str]] | None = None
    if options.rules == "edition1":
        rules = _edition1_rules(rng, count)
    elif options.rules == "random":
        partnered = options.teams or (count in (4, 6) and rng.random() < 0.3)
        scored_in_play = options.layout is None and options.play_scoring not in (None, "none")
        rules = _random_rules(rng, count, partnered, scored_in_play)
        teams = _teams_of(players, rng) if partnered else None
    else:
        rules = {}
        teams = _teams_of(players, rng) if options.teams else None
    if options.forces:
        rules = _force(rules, options)
        if options.teams and teams is None:
            teams = _teams_of(players, rng)
    effective = _rules_wire(rules)
    if teams is not None and effective.scoring is Scoring.PENALTY:
        teams = None  # penalty scoring plays without partnerships
    problem = game_problem(players, effective, teams)
    assert problem is None, f"the simulator drew a game that cannot be: {problem} ({rules})"
    table.new_fouls = options.rules == "random" or options.forces
    fields: dict[str, Any] = {"players": players, "rules": rules}
    if teams is not None:
        fields["teams"] = teams
    yield table.line("GameStarted", fields)
    started = msgspec.convert({**fields, **_ENVELOPE}, GameStartedWire).to_domain()
    table.apply(GameStarted(started.players, started.rules, started.teams))
    for number in range(1, options.max_rounds + 1):
        yield from _round(table, number, players)
        state = table.state
        if state is None or state.is_over:
            return


_ENVELOPE = {
    "event_id": "sim",
    "type": "GameStarted",
    "game_id": "sim",
    "seq": 1,
    "occurred_at": "2026-11-30T12:00:00Z",
    "schema_version": 1,
}

_HAND_SIZES = {6: 7, 9: 10, 12: 12, 15: 15, 18: 15}
"""Hand sizes of trains games, by set (at most; fewer at a crowded table)."""


def _round(table: _SimulatedGame, number: int, players: list[str]) -> Iterator[tuple[str, bytes]]:
    rng = table.rng
    state = table.state
    assert state is not None
    rules = state.rules
    engine: Tile | None = None
    tiles = sorted(full_set(rules.max_pip))
    if rules.layout is Layout.TRAINS:
        if rules.engine_order is EngineOrder.DESCENDING:
            e = rules.max_pip - (number - 1) % (rules.max_pip + 1)
        else:
            e = rng.randint(0, rules.max_pip)
        engine = (e, e)
        tiles.remove(engine)
        rng.shuffle(tiles)
        hand_size = min(_HAND_SIZES[rules.max_pip], len(tiles) // (len(players) + 1))
    else:
        rng.shuffle(tiles)
        hand_size = min(7, len(tiles) // (len(players) + 1))
    hands = {p: tiles[i * hand_size : (i + 1) * hand_size] for i, p in enumerate(players)}
    rest = tiles[len(players) * hand_size :]
    boneyard = [] if rules.draw is DrawRule.NONE else rest
    leader = rng.choice(players)
    fields: dict[str, Any] = {
        "round": number,
        "hands": {p: [list(t) for t in h] for p, h in hands.items()},
        "boneyard": [list(t) for t in boneyard],
        "leader": leader,
    }
    if engine is not None:
        fields["engine"] = list(engine)
    yield table.line("RoundStarted", fields)
    table.apply(
        RoundStarted(
            number, {p: tuple(h) for p, h in hands.items()}, tuple(boneyard), leader, engine
        )
    )
    for _ in range(2000):
        state = table.state
        assert state is not None
        rnd = state.round
        if rnd is None or rnd.ended:
            return
        if rng.random() < table.options.foul_rate:
            yield from _foul(table, state)
            continue
        yield from _turn(table, state)


def _turn(table: _SimulatedGame, state: GameState) -> Iterator[tuple[str, bytes]]:
    """Emits what an honest player does: a play if they have one, else a draw or a pass."""
    rnd = state.round
    assert rnd is not None
    seat = rnd.turn
    player = state.players[seat]
    plays = rnd.legal_plays(seat)
    if plays:
        t, end, train = table.rng.choice(plays)
        yield from _emit_play(table, rnd.round_number, player, t, end, train)
        return
    rules = state.rules
    if not rules.exhausted(rnd.boneyard_mask) and rules.requires_draw(rnd.drew):
        t = table.rng.choice(sorted(rnd.boneyard))
        yield table.line(
            "TileDrawn", {"round": rnd.round_number, "player": player, "tile": list(t)}
        )
        table.apply(TileDrawn(rnd.round_number, player, t))
        return
    yield table.line("Passed", {"round": rnd.round_number, "player": player})
    table.apply(Passed(rnd.round_number, player))


def _emit_play(
    table: _SimulatedGame,
    number: int,
    player: str,
    t: Tile,
    end: End | None,
    train: str | None = None,
) -> Iterator[tuple[str, bytes]]:
    shown = list(t) if table.rng.random() < 0.5 else [t[1], t[0]]
    fields: dict[str, Any] = {"round": number, "player": player, "tile": shown}
    if end is not None:
        fields["end"] = end.value
    if train is not None:
        fields["train"] = train
    yield table.line("TilePlayed", fields)
    table.apply(TilePlayed(number, player, (shown[0], shown[1]), end, train))


def _foul(table: _SimulatedGame, state: GameState) -> Iterator[tuple[str, bytes]]:
    """Emits one action that breaks a rule (the judge decides which foul it is)."""
    rng = table.rng
    rnd = state.round
    assert rnd is not None
    seat = rnd.turn
    player = state.players[seat]
    other = state.players[(seat + 1 + rng.randrange(len(state.players) - 1)) % len(state.players)]
    choice = rng.randrange(8 if table.new_fouls else 5)
    if choice == 0:  # out of turn
        yield table.line("Passed", {"round": rnd.round_number, "player": other})
        table.apply(Passed(rnd.round_number, other))
    elif choice == 1:  # a tile the player does not hold
        foreign = sorted(rnd.hands[state.seats[other]])[0]
        yield from _emit_play(table, rnd.round_number, player, foreign, End.LEFT)
    elif choice == 2 and rnd.layout.places(seat) is not None:  # no place named
        mine = sorted(rnd.hands[seat])[0]
        yield from _emit_play(table, rnd.round_number, player, mine, None)
    elif choice == 3:  # a pass (false, or before drawing, or legitimate)
        yield table.line("Passed", {"round": rnd.round_number, "player": player})
        table.apply(Passed(rnd.round_number, player))
    elif choice == 5:  # a place this layout does not have now
        yield from _nowhere(table, state, rnd)
    elif choice == 6:  # a place it has, but not for this tile or this player
        yield from _wrong_place(table, state, rnd)
    elif choice == 7 and rnd.boneyard_mask:  # a real draw, whether or not the player may
        t = rng.choice(sorted(rnd.boneyard))
        yield table.line(
            "TileDrawn", {"round": rnd.round_number, "player": player, "tile": list(t)}
        )
        table.apply(TileDrawn(rnd.round_number, player, t))
    else:  # a draw of a tile that is not in the boneyard
        mine = sorted(rnd.hands[seat])[0]
        yield table.line(
            "TileDrawn", {"round": rnd.round_number, "player": player, "tile": list(mine)}
        )
        table.apply(TileDrawn(rnd.round_number, player, mine))


def _nowhere(
    table: _SimulatedGame, state: GameState, rnd: RoundState
) -> Iterator[tuple[str, bytes]]:
    """Plays a tile of the hand on a place that does not exist (``end_not_available``)."""
    rng = table.rng
    seat = rnd.turn
    mine = rng.choice(sorted(rnd.hands[seat]))
    if isinstance(rnd.layout, Trains):
        end, train = (End.LEFT, None) if rng.random() < 0.5 else (None, "nobody's")
    else:
        end, train = (End.UP, None) if rng.random() < 0.5 else (End.LEFT, state.players[seat])
    yield from _emit_play(table, rnd.round_number, state.players[seat], mine, end, train)


def _wrong_place(
    table: _SimulatedGame, state: GameState, rnd: RoundState
) -> Iterator[tuple[str, bytes]]:
    """Plays a tile on a real place it may not go: another train than a pending double's
    (``double_unsatisfied``), someone's closed train (``train_closed``), or an end it does
    not match (``tile_does_not_match``)."""
    rng = table.rng
    seat = rnd.turn
    player = state.players[seat]
    hand = sorted(rnd.hands[seat])
    layout = rnd.layout
    if isinstance(layout, Trains):
        names = layout.table.names
        if layout.double_pending:
            others = [n for i, n in enumerate(names) if i != layout.pending]
        else:
            others = [
                n
                for i, n in enumerate(names)
                if i != seat and i < layout.table.seats and not layout.open >> i & 1
            ]
        if others:
            yield from _emit_play(
                table, rnd.round_number, player, rng.choice(hand), None, rng.choice(others)
            )
            return
    places = layout.places(seat) or ()
    for t in rng.sample(hand, len(hand)):
        misses = [p for p in places if p.value not in t]
        if misses:
            place = rng.choice(misses)
            yield from _emit_play(table, rnd.round_number, player, t, place.end, place.train)
            return
    yield table.line("Passed", {"round": rnd.round_number, "player": player})
    table.apply(Passed(rnd.round_number, player))


def _bad_line(rng: random.Random, emitted: list[tuple[str, bytes]], seed: int) -> tuple[str, bytes]:
    """Returns a line a careless or hostile backend might send; never one that takes a place."""
    kind = rng.randrange(6)
    if kind == 0:
        return "unknown", b'{"event_id": "broken", "type": "TilePlayed", '
    if kind == 1:
        return "unknown", _encode({"event_id": f"bad-{rng.getrandbits(32)}", "type": "Shuffled"})
    if kind == 2:
        return "unknown", _encode(
            {"event_id": f"bad-{rng.getrandbits(32)}", "type": "Passed", "seq": "one"}
        )
    if kind == 3:
        game = f"ghost-{seed}-{rng.getrandbits(24)}"
        return game, _encode(
            {
                "event_id": f"bad-{rng.getrandbits(32)}",
                "type": "Passed",
                "game_id": game,
                "seq": 2,
                "occurred_at": "2026-11-30T12:00:00Z",
                "schema_version": 1,
                "round": 1,
                "player": "nobody",
            }
        )
    if kind == 4:
        return "unknown", b'{"event_id":"huge","pad":"' + b"x" * 70_000 + b'"}'
    game_id, line = rng.choice(emitted)
    event = msgspec.json.decode(line)
    event["event_id"] = f"bad-{rng.getrandbits(32)}"
    event["occurred_at"] = "2000-01-01T00:00:00Z"  # same game and seq, different content
    return game_id, _encode(event)
