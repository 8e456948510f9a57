"""Bridge from PyPI ``dominoes`` (abw333's package) to our wire events (EVENTS.md).

What the package's game is (read from its source, ``dominoes/game.py``, ``series.py``,
``board.py``; dominoes 6.1.0):

* ``dominoes.Game.new(starting_domino=None, starting_player=0)``: double-six, the 28 tiles
  shuffled with the *global* ``random`` and dealt 7 to each of 4 players, nothing left over
  (``draw: none``, empty boneyard). Players 0 and 2 are partners against 1 and 3: our seats in
  the order of play, so ``teams`` ``{"t0": [p0, p2], "t1": [p1, p3]}`` alternates as RULES.md
  §9 asks. With ``starting_domino`` its holder leads and ``new`` already plays it; otherwise
  ``starting_player`` leads with any tile.
* ``game.valid_moves``: ``(domino, left)`` pairs, ``left`` True for the left end. On an empty
  board every tile, placed as written (``[first|second]``: left shows ``first``, our first
  tile's orientation rule). When both ends show the same value the package lists only the
  left end; for us both ends are then legal.
* ``game.make_move(d, left)``: an empty hand ends the game (``result.won`` True). Otherwise the
  turn moves to the next player with a valid move; the players in between pass (``None`` in
  ``game.moves``: legitimate passes for us). Nobody able to move: the game is *stuck*
  (``result.won`` False) and those last passes are not recorded.
* ``game.result.points``: positive for team 0, negative for team 1, 0 for a tie. A domino
  scores the pips left in the 3 other hands, the winner's partner included. A stuck game:
  each team adds up its hands; the lower team wins both teams' sums; equal sums score 0.
* ``dominoes.Series(target_score=200)``: games until a team's total reaches the target
  (``>=``); the first game starts with [6|6], the next ones with the player the package picks
  (``next_game``); the scores only change in ``next_game``.

Mapping onto RULES.md (``RULES``): ``domino_points: all`` (U plus the winning team's own T,
which for a domino is the partner's pips), ``block_winner: lowest_team``, ``block_points:
all``, ``tie: no_winner``, ``double_blank: 0``, ``rounding: none``; a series is one of our
games with one round per package game and ``target_score`` set. ``block_confirmation`` is
drawn per game. Every round is compared in full; the one difference is the lead: a starting
domino is a rule of the package our rulebook does not have (any lead is fair for us), so at
that first play the probe checks only that the package's move is one we accept.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, TypeVar

from tests.peer.peer_support import (
    BridgeError,
    Emitter,
    Move,
    PeerGame,
    PeerRound,
    RoundResult,
    Tile,
    pips,
    team_of,
    team_pips,
    tile,
)

PLAYERS = ("p0", "p1", "p2", "p3")
TEAMS = {"t0": ["p0", "p2"], "t1": ["p1", "p3"]}
TEAM_IDS = ("t0", "t1")

#: The options that reproduce the package's points (see the module docstring).
RULES: dict[str, Any] = {
    "max_pip": 6,
    "draw": "none",
    "block_winner": "lowest_team",
    "block_points": "all",
    "domino_points": "all",
    "tie": "no_winner",
    "rounding": "none",
    "double_blank": 0,
}

T = TypeVar("T")


def _seeded(seed: str, make: Callable[[], T]) -> T:
    """Runs ``make`` with the global ``random`` seeded (the package deals with it), then
    puts the global generator back as it was."""
    saved = random.getstate()
    random.seed(seed)
    try:
        return make()
    finally:
        random.setstate(saved)


def _legal(game: Any, ends: tuple[int, int] | None) -> frozenset[Move]:
    """The package's valid moves now, in our terms."""
    out: set[Move] = set()
    for d, left in game.valid_moves:
        t = tile(d.first, d.second)
        if ends is None:
            out.add((t, None))
        elif ends[0] == ends[1]:
            out.update({(t, "left"), (t, "right")})  # the package lists only the left one
        else:
            out.add((t, "left" if left else "right"))
    return frozenset(out)


class _RoundWriter:
    """Plays one package game with random valid moves and writes it as one of our rounds."""

    def __init__(self, em: Emitter, legal: dict[int, frozenset[Move]], lead_rule: set[int]):
        self.em = em
        self.legal = legal
        self.lead_rule = lead_rule

    def play(
        self, game: Any, round_no: int, rng: random.Random, confirmation: str, where: str
    ) -> PeerRound:
        em = self.em
        start = game.starting_player
        hands = [sorted(tile(d.first, d.second) for d in h) for h in game.hands]
        # With a starting domino, ``new`` has played it already (and any passes after it).
        auto = bool(game.moves)
        if auto:
            d = game.moves[0][0]
            hands[start] = sorted([*hands[start], tile(d.first, d.second)])
        if [len(h) for h in hands] != [7, 7, 7, 7] or len({t for h in hands for t in h}) != 28:
            raise BridgeError(f"{where}: unexpected deal {hands}")
        em.emit(
            "RoundStarted",
            round=round_no,
            hands={PLAYERS[i]: [list(t) for t in hands[i]] for i in range(4)},
            boneyard=[],
            leader=PLAYERS[start],
        )
        ends: tuple[int, int] | None = None
        actor = start
        seen = 0
        while True:
            lead = seen == 0 and auto
            if lead:
                legal: frozenset[Move] = frozenset({(tile(d.first, d.second), None)})
            elif game.result is None:
                if game.turn != actor:
                    raise BridgeError(f"{where}: the package's turn {game.turn} != p{actor}")
                legal = _legal(game, ends)
                move = game.valid_moves[rng.randrange(len(game.valid_moves))]
                game.make_move(*move)
            else:
                break
            played, *passes = game.moves[seen:]
            seen = len(game.moves)
            ends = self._write_play(round_no, actor, played, ends, hands, rng)
            self.legal[em.seq] = legal
            if lead:
                self.lead_rule.add(em.seq)
            if (game.board.left_end(), game.board.right_end()) != ends:
                raise BridgeError(f"{where}: shadow ends {ends} != board {game.board}")
            actor = (actor + 1) % 4
            for skip in passes:
                if skip is not None:
                    raise BridgeError(f"{where}: a second play in one move: {game.moves}")
                self.legal[em.emit("Passed", round=round_no, player=PLAYERS[actor])] = frozenset()
                actor = (actor + 1) % 4
            if [sorted(tile(x.first, x.second) for x in h) for h in game.hands] != hands:
                raise BridgeError(f"{where}: shadow hands differ from the package's")
        return self._end(game, round_no, actor, ends, hands, confirmation, where)

    def _write_play(
        self,
        round_no: int,
        actor: int,
        played: Any,
        ends: tuple[int, int] | None,
        hands: list[list[Tile]],
        rng: random.Random,
    ) -> tuple[int, int]:
        if played is None:
            raise BridgeError(f"a pass where p{actor} played")
        d, left = played
        t = tile(d.first, d.second)
        hands[actor].remove(t)
        player = PLAYERS[actor]
        if ends is None:
            # The package lays the first tile as written: left shows ``first``, like ours.
            self.em.emit("TilePlayed", round=round_no, player=player, tile=[d.first, d.second])
            return (d.first, d.second)
        end = "left" if left else "right"
        shows = ends[0] if left else ends[1]
        if shows not in t:
            raise BridgeError(f"{t} does not show {shows} ({end})")
        new = t[1] if t[0] == shows else t[0]
        shown = list(t) if rng.random() < 0.5 else [t[1], t[0]]  # orientation is free
        self.em.emit("TilePlayed", round=round_no, player=player, tile=shown, end=end)
        return (new, ends[1]) if left else (ends[0], new)

    def _end(
        self,
        game: Any,
        round_no: int,
        turn: int,
        ends: tuple[int, int] | None,
        hands: list[list[Tile]],
        confirmation: str,
        where: str,
    ) -> PeerRound:
        result = game.result
        if ends is None:
            raise BridgeError(f"{where}: the round ended without a play")
        pip_counts = {PLAYERS[i]: pips(hands[i]) for i in range(4)}
        t = team_pips(TEAMS, pip_counts)
        mover = PLAYERS[result.player]
        confirmed_by: list[str] = []
        if result.won:
            if hands[result.player]:
                raise BridgeError(f"{where}: won, but p{result.player} still holds tiles")
            reason = "domino"
            own = team_of(TEAMS, mover)
            documented = sum(pip_counts.values()) * (1 if own == "t0" else -1)
            if result.points != documented:
                raise BridgeError(f"{where}: {result}, documented rule gives {documented}")
            (other,) = set(TEAM_IDS) - {own}
            peer = RoundResult((own,), {own: abs(result.points), other: 0}, tie=False)
        else:
            reason = "blocked"
            if any(ends[0] in x or ends[1] in x for h in hands for x in h):
                raise BridgeError(f"{where}: stuck, but someone can play on {ends}")
            if result.player != (turn - 1) % 4:
                raise BridgeError(f"{where}: {result} names a player who did not close it")
            total = t["t0"] + t["t1"]
            documented = 0 if t["t0"] == t["t1"] else total if t["t0"] < t["t1"] else -total
            if result.points != documented:
                raise BridgeError(f"{where}: {result}, documented rule gives {documented}")
            winners = tuple(
                x for x, sign in zip(TEAM_IDS, (1, -1), strict=True) if result.points * sign > 0
            )
            awards = {x: (abs(result.points) if x in winners else 0) for x in TEAM_IDS}
            peer = RoundResult(winners, awards, tie=t["t0"] == t["t1"])
            if confirmation == "full_round":
                # A full round of legitimate passes, from whoever's turn it is; the package
                # allows none of them a move (that is what "stuck" is).
                for k in range(4):
                    confirmed_by.append(PLAYERS[(turn + k) % 4])
                    self.legal[self.em.emit("Passed", round=round_no, player=confirmed_by[-1])] = (
                        frozenset()
                    )
        return PeerRound(
            round_no=round_no,
            reason=reason,
            ends_at_seq=self.em.seq,
            pip_counts=pip_counts,
            open_ends=(min(ends), max(ends)),
            confirmed_by=confirmed_by,
            result=peer,
            peer_said=str(result),
        )


def _start(em: Emitter, rng: random.Random, target_score: int | None) -> str:
    confirmation = rng.choice(("full_round", "immediate"))
    rules = {**RULES, "block_confirmation": confirmation}
    if target_score is not None:
        rules["target_score"] = target_score
    em.emit("GameStarted", players=list(PLAYERS), teams=TEAMS, rules=rules)
    return confirmation


def play_one_game(rng: random.Random, game_id: str, game_index: int) -> PeerGame:
    """Plays one package game (one round for us), from a starting domino or a starting player."""
    import dominoes

    em = Emitter(game_id, game_index)
    legal: dict[int, frozenset[Move]] = {}
    lead_rule: set[int] = set()
    confirmation = _start(em, rng, None)
    if rng.random() < 0.5:
        kwargs: dict[str, Any] = {"starting_domino": dominoes.Domino(6, 6)}
    else:
        kwargs = {"starting_player": rng.randrange(4)}
    game = _seeded(f"{game_id}:deal", lambda: dominoes.Game.new(**kwargs))
    peer_round = _RoundWriter(em, legal, lead_rule).play(game, 1, rng, confirmation, game_id)
    peer_round.team_cumulative = dict(peer_round.result.team_awards) if peer_round.result else None
    return PeerGame(game_id, em.events, TEAMS, [peer_round], legal, lead_rule)


def play_one_series(
    rng: random.Random, game_id: str, game_index: int, target_score: int
) -> PeerGame:
    """Plays one package series to ``target_score``: one game of ours, a round per deal."""
    import dominoes

    em = Emitter(game_id, game_index)
    legal: dict[int, frozenset[Move]] = {}
    lead_rule: set[int] = set()
    confirmation = _start(em, rng, target_score)
    writer = _RoundWriter(em, legal, lead_rule)
    series = _seeded(f"{game_id}:deal:1", lambda: dominoes.Series(target_score=target_score))
    rounds = []
    game = series.games[-1]
    while game is not None:
        round_no = len(series.games)
        rounds.append(writer.play(game, round_no, rng, confirmation, f"{game_id} r{round_no}"))
        game = _seeded(f"{game_id}:deal:{round_no + 1}", series.next_game)
        rounds[-1].team_cumulative = dict(zip(TEAM_IDS, series.scores, strict=True))
    if not series.is_over():
        raise BridgeError(f"{game_id}: the series stopped before it was over")
    (winner,) = [x for x, s in zip(TEAM_IDS, series.scores, strict=True) if s >= target_score]
    return PeerGame(game_id, em.events, TEAMS, rounds, legal, lead_rule, game_won_by=(winner,))


def play_random_games(n: int, seed: int) -> list[PeerGame]:
    """Plays ``n`` package games, deterministically from ``seed``."""
    return [
        play_one_game(random.Random(f"pypi-dominoes:{seed}:{i}"), f"pd-{seed}-{i:05d}", i)
        for i in range(n)
    ]


def play_random_series(n: int, seed: int, target_score: int) -> list[PeerGame]:
    """Plays ``n`` package series to ``target_score``, deterministically from ``seed``."""
    return [
        play_one_series(
            random.Random(f"pypi-series:{seed}:{i}"), f"ps-{seed}-{i:05d}", i, target_score
        )
        for i in range(n)
    ]
