"""``referee simulate``: a seeded, realistic event log of many interleaved games.

The simulator keeps the true table with the domain's own state and judge, so every event it
writes is what a real backend would send; fouls and bad lines are injected at chosen rates.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from referee.domain.events import End, GameEvent, Passed, RoundStarted, TileDrawn, TilePlayed
from referee.domain.judge import judge
from referee.domain.rules import (
    BlockConfirmation,
    DrawRule,
    DrawWhileAble,
    PointsPolicy,
    Rounding,
    TiePolicy,
)
from referee.domain.state import GameState
from referee.domain.tiles import Tile, full_set

EPOCH = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True, slots=True)
class SimulationOptions:
    """What to simulate."""

    games: int = 100
    seed: int = 1
    random_rules: bool = True
    foul_rate: float = 0.02
    bad_rate: float = 0.0
    duplicate_rate: float = 0.0
    concurrency: int = 200
    max_rounds: int = 3


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
            active.append(_game(f"sim-{options.seed}-{index:06d}", game_rng, options))
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


def _random_rules(rng: random.Random, players: int) -> dict[str, Any]:
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


class _Table:
    """One simulated game: the true state, kept with the domain's judge."""

    def __init__(self, game_id: str, rng: random.Random, options: SimulationOptions) -> None:
        self.game_id = game_id
        self.rng = rng
        self.options = options
        self.seq = 0
        self.state: GameState | None = None

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


def _game(
    game_id: str, rng: random.Random, options: SimulationOptions
) -> Iterator[tuple[str, bytes]]:
    from referee.contracts.wire import RulesWire

    table = _Table(game_id, rng, options)
    count = rng.choice((2, 2, 3, 4, 4)) if rng.random() < 0.9 else rng.randint(5, 10)
    players = [f"p{i}-{rng.getrandbits(24):06x}" for i in range(count)]
    rules = _random_rules(rng, count) if options.random_rules else {}
    yield table.line("GameStarted", {"players": players, "rules": rules})
    from referee.domain.events import GameStarted

    table.apply(GameStarted(tuple(players), msgspec.convert(rules, RulesWire).to_domain()))
    for number in range(1, options.max_rounds + 1):
        yield from _round(table, number, players)
        state = table.state
        if state is None or state.is_over:
            return


def _round(table: _Table, number: int, players: list[str]) -> Iterator[tuple[str, bytes]]:
    rng = table.rng
    state = table.state
    assert state is not None
    rules = state.rules
    tiles = sorted(full_set(rules.max_pip))
    rng.shuffle(tiles)
    hand_size = min(7, len(tiles) // (len(players) + 1))
    hands = {p: tiles[i * hand_size : (i + 1) * hand_size] for i, p in enumerate(players)}
    rest = tiles[len(players) * hand_size :]
    boneyard = [] if rules.draw is DrawRule.NONE else rest
    leader = rng.choice(players)
    yield table.line(
        "RoundStarted",
        {
            "round": number,
            "hands": {p: [list(t) for t in h] for p, h in hands.items()},
            "boneyard": [list(t) for t in boneyard],
            "leader": leader,
        },
    )
    table.apply(
        RoundStarted(number, {p: tuple(h) for p, h in hands.items()}, tuple(boneyard), leader)
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


def _turn(table: _Table, state: GameState) -> Iterator[tuple[str, bytes]]:
    rnd = state.round
    assert rnd is not None
    seat = rnd.turn
    player = state.players[seat]
    plays = rnd.legal_plays(seat)
    if plays:
        t, end, _ = table.rng.choice(plays)
        yield from _emit_play(table, rnd.number, player, t, end)
        return
    draw = state.rules.draw
    if rnd.boneyard and (
        draw is DrawRule.UNTIL_PLAYABLE or (draw is DrawRule.ONCE and not rnd.drew)
    ):
        t = table.rng.choice(sorted(rnd.boneyard))
        yield table.line("TileDrawn", {"round": rnd.number, "player": player, "tile": list(t)})
        table.apply(TileDrawn(rnd.number, player, t))
        return
    yield table.line("Passed", {"round": rnd.number, "player": player})
    table.apply(Passed(rnd.number, player))


def _emit_play(
    table: _Table, number: int, player: str, t: Tile, end: End | None
) -> Iterator[tuple[str, bytes]]:
    shown = list(t) if table.rng.random() < 0.5 else [t[1], t[0]]
    fields: dict[str, Any] = {"round": number, "player": player, "tile": shown}
    if end is not None:
        fields["end"] = end.value
    yield table.line("TilePlayed", fields)
    table.apply(TilePlayed(number, player, (shown[0], shown[1]), end))


def _foul(table: _Table, state: GameState) -> Iterator[tuple[str, bytes]]:
    """Emits one action that breaks a rule (the judge decides which foul it is)."""
    rng = table.rng
    rnd = state.round
    assert rnd is not None
    seat = rnd.turn
    player = state.players[seat]
    other = state.players[(seat + 1 + rng.randrange(len(state.players) - 1)) % len(state.players)]
    choice = rng.randrange(5)
    if choice == 0:  # out of turn
        yield table.line("Passed", {"round": rnd.number, "player": other})
        table.apply(Passed(rnd.number, other))
    elif choice == 1:  # a tile the player does not hold
        foreign = sorted(rnd.hands[state.seats[other]])[0]
        yield from _emit_play(table, rnd.number, player, foreign, End.LEFT)
    elif choice == 2 and rnd.layout.places(seat) is not None:  # no end named
        mine = sorted(rnd.hands[seat])[0]
        yield from _emit_play(table, rnd.number, player, mine, None)
    elif choice == 3:  # a pass (false, or before drawing, or legitimate)
        yield table.line("Passed", {"round": rnd.number, "player": player})
        table.apply(Passed(rnd.number, player))
    else:  # a draw of a tile that is not in the boneyard
        mine = sorted(rnd.hands[seat])[0]
        yield table.line("TileDrawn", {"round": rnd.number, "player": player, "tile": list(mine)})
        table.apply(TileDrawn(rnd.number, player, mine))


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
