"""Bridge from OpenSpiel's ``python_block_dominoes`` to our wire events (EVENTS.md).

OpenSpiel (PyPI ``open_spiel``, module ``open_spiel/python/games/block_dominoes.py``) is used as
an independent peer: it deals, we pick uniformly random legal moves, and its ``returns()`` at the
end are the expected result. This module turns each OpenSpiel game into the event stream our
referee consumes, plus the awards our referee must announce.

What OpenSpiel's game is (read from its source, open_spiel 2.0.x):

* 2 players, double-six set (28 tiles), 7 tiles each, dealt by 14 chance outcomes: the first 7
  go to player 0, the next 7 to player 1. The 14 undealt tiles are never used (no drawing):
  in our terms they are *sleeping*, so ``draw: none`` and an empty boneyard.
* Player 0 always moves first (``_next_player = 0`` after the deal), with any tile.
* A player action is (tile, edge): ``edge`` is the *value* of the open end covered (``None`` for
  the first tile). OpenSpiel keeps the two open ends as a sorted list of values, not as
  left/right. When both ends show the same value the action does not say which side; the
  resulting pair of open values is the same either way, so we may pick either end.
* There is no pass action. After a play: if the mover's hand is empty the game ends (domino);
  else if the opponent has a legal move, the opponent moves; else if the mover still has one,
  the mover moves again (the opponent is *skipped*, which is a legitimate pass for us); else the
  game ends blocked (nobody can move; the boneyard is empty by construction).
* ``returns()``: with P0, P1 the pip sums left in hand, equal sums give ``[0, 0]``; otherwise
  the player with fewer pips gets ``+`` the other player's pip sum and the other gets its
  negation (zero-sum). This applies to a domino (the player who went out has 0 pips) as well as
  to a block. The double-blank counts 0.

Mapping onto RULES.md (see ``RULES`` below): ``block_points: others`` (the winner scores the
loser's pips, not minus its own), ``tie: no_winner`` (equal pips: nobody scores),
``double_blank: 0``, ``rounding: none``. ``domino_points`` is not constrained by OpenSpiel
(with L = 0 the three choices coincide); we use the default ``others``. Our awards are never
negative, so ``expected_awards[p] = max(0, returns[p])``: the winner's award is its positive
return, the loser's award is 0, a tie gives 0 to both. (Corner case: a domino when the
opponent holds only [0,0] gives returns [0, 0]; we also expect 0 for both, the domino winner
scoring the 0 pips of the others.)

Events: ``GameStarted`` (players ``p0``, ``p1``), ``RoundStarted`` round 1 with the dealt
hands, ``boneyard: []`` and leader ``p0``, then one ``TilePlayed`` per OpenSpiel move. A skipped
player gets a ``Passed`` at the point where it would have moved. When OpenSpiel ends blocked,
we append a full clockwise round of legitimate passes starting with the player whose turn it is
(the one after the last mover), which confirms the block under ``block_confirmation:
full_round``.

``open_spiel`` is imported lazily inside functions only, so this module can be imported (and
the test collected and skipped) without it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

GAME_NAME = "python_block_dominoes"
PLAYERS = ("p0", "p1")

#: The rules object that reproduces OpenSpiel's returns (see module docstring).
RULES: dict[str, Any] = {
    "max_pip": 6,
    "draw": "none",
    "block_confirmation": "full_round",
    "block_points": "others",
    "domino_points": "others",
    "tie": "no_winner",
    "rounding": "none",
    "double_blank": 0,
}

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)

Tile = tuple[int, int]


class BridgeError(AssertionError):
    """The bridge's shadow model disagrees with OpenSpiel (a bug in the bridge or the peer)."""


@dataclass
class PeerGame:
    game_id: str
    events: list[dict[str, Any]]
    expected_awards: dict[str, int]
    #: OpenSpiel's raw ``state.returns()`` as ints, player order p0, p1.
    returns: tuple[int, ...] = ()
    #: ``"domino"`` or ``"blocked"`` (how OpenSpiel's game ended).
    reason: str = ""
    #: pips left in each hand at the end (double-blank = 0).
    pip_counts: dict[str, int] = field(default_factory=dict)
    #: the player who went out (domino) or ``None``.
    domino_player: str | None = None


def _load_game() -> Any:
    # Python games register themselves with pyspiel when their module is imported.
    import open_spiel.python.games.block_dominoes  # noqa: F401
    import pyspiel

    return pyspiel.load_game(GAME_NAME)


def _tile(t: Any) -> Tile:
    a, b = int(t[0]), int(t[1])
    return (a, b) if a <= b else (b, a)


def _pips(hand: list[Tile]) -> int:
    return sum(a + b for a, b in hand)


def _can_play(hand: list[Tile], left: int, right: int) -> bool:
    return any(left in t or right in t for t in hand)


class _Emitter:
    def __init__(self, game_id: str, game_index: int) -> None:
        self.game_id = game_id
        self.base = _EPOCH + timedelta(minutes=game_index)
        self.events: list[dict[str, Any]] = []

    def emit(self, type_: str, **fields: Any) -> None:
        seq = len(self.events) + 1
        at = self.base + timedelta(seconds=seq)
        self.events.append(
            {
                "event_id": f"{self.game_id}-e{seq:03d}",
                "type": type_,
                "game_id": self.game_id,
                "seq": seq,
                "occurred_at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "schema_version": 1,
                **fields,
            }
        )


def play_one_game(game: Any, rng: random.Random, game_id: str, game_index: int = 0) -> PeerGame:
    """Play one OpenSpiel game with uniformly random chance outcomes and legal moves."""
    state = game.new_initial_state()
    while state.is_chance_node():
        outcomes = state.chance_outcomes()
        state.apply_action(outcomes[rng.randrange(len(outcomes))][0])

    hands = [[_tile(t) for t in h] for h in state.hands]
    if len(hands) != 2 or any(len(h) != 7 for h in hands):
        raise BridgeError(f"unexpected deal {state.hands}")
    if len(set(hands[0]) | set(hands[1])) != 14:
        raise BridgeError(f"duplicate tile in deal {state.hands}")
    if state.current_player() != 0:
        raise BridgeError(f"OpenSpiel's first player is {state.current_player()}, expected 0")

    em = _Emitter(game_id, game_index)
    em.emit("GameStarted", players=list(PLAYERS), rules=dict(RULES))
    em.emit(
        "RoundStarted",
        round=1,
        hands={PLAYERS[i]: [list(t) for t in hands[i]] for i in range(2)},
        boneyard=[],
        leader=PLAYERS[0],
    )

    left: int | None = None
    right: int | None = None
    turn = 0  # whose turn it is in *our* model (next clockwise after the last action)
    last_mover: int | None = None

    while not state.is_terminal():
        actor = state.current_player()
        if actor not in (0, 1):
            raise BridgeError(f"unexpected current player {actor}")
        # OpenSpiel skipped the player whose turn it is for us: that is a legitimate pass.
        if actor != turn:
            if left is None or right is None or _can_play(hands[turn], left, right):
                raise BridgeError(f"{game_id}: OpenSpiel skipped p{turn}, who can play")
            em.emit("Passed", round=1, player=PLAYERS[turn])
            turn = 1 - turn
            if actor != turn:
                raise BridgeError(f"{game_id}: turn order lost")

        action_id = state.legal_actions()[rng.randrange(len(state.legal_actions()))]
        action = _decode_action(state, action_id)
        tile = _tile(action.tile)
        if action.player != actor:
            raise BridgeError(f"{game_id}: action {action} by wrong player {actor}")
        if tile not in hands[actor]:
            raise BridgeError(f"{game_id}: {tile} not in p{actor}'s shadow hand")

        shown = list(tile) if rng.random() < 0.5 else [tile[1], tile[0]]  # orientation is free
        if left is None or right is None:
            if action.edge is not None:
                raise BridgeError(f"{game_id}: first play names an edge: {action}")
            # The first tile [x, y] as sent opens the line with left = x, right = y.
            left, right = shown
            em.emit("TilePlayed", round=1, player=PLAYERS[actor], tile=shown)
        else:
            edge = int(action.edge)
            other = tile[1] if tile[0] == edge else tile[0]
            sides = [s for s, v in (("left", left), ("right", right)) if v == edge]
            if not sides:
                raise BridgeError(f"{game_id}: {action} covers {edge}, ends are {left},{right}")
            end = sides[0] if len(sides) == 1 else rng.choice(sides)
            if end == "left":
                left = other
            else:
                right = other
            em.emit("TilePlayed", round=1, player=PLAYERS[actor], tile=shown, end=end)

        hands[actor].remove(tile)
        state.apply_action(action_id)
        last_mover = actor
        turn = 1 - actor

        peer_ends = sorted(int(v) for v in state.open_edges)
        if peer_ends != sorted([left, right]):
            raise BridgeError(
                f"{game_id}: shadow ends {left},{right} != OpenSpiel's {state.open_edges}"
            )
        for i in range(2):
            if sorted(hands[i]) != sorted(_tile(t) for t in state.hands[i]):
                raise BridgeError(f"{game_id}: shadow hand p{i} != OpenSpiel's")

    if last_mover is None or left is None or right is None:
        raise BridgeError(f"{game_id}: game ended without a move")

    pip_counts = {PLAYERS[i]: _pips(hands[i]) for i in range(2)}
    if not hands[last_mover]:
        reason = "domino"
        domino_player: str | None = PLAYERS[last_mover]
    else:
        reason = "blocked"
        domino_player = None
        if any(_can_play(h, left, right) for h in hands):
            raise BridgeError(f"{game_id}: OpenSpiel ended but someone can still play")
        # A full clockwise round of legitimate passes, starting with whoever's turn it is.
        for k in range(len(PLAYERS)):
            em.emit("Passed", round=1, player=PLAYERS[(turn + k) % len(PLAYERS)])

    returns = tuple(int(r) for r in state.returns())
    if [float(r) for r in returns] != [float(r) for r in state.returns()]:
        raise BridgeError(f"{game_id}: non-integral returns {state.returns()}")
    expected_awards = {PLAYERS[i]: max(0, returns[i]) for i in range(2)}

    # Independent check of the mapping: what RULES says for this end position.
    ours = _awards_by_rules(pip_counts)
    if ours != expected_awards:
        raise BridgeError(
            f"{game_id}: RULES mapping gives {ours}, OpenSpiel's returns {returns} "
            f"give {expected_awards} (reason {reason}, pips {pip_counts})"
        )

    return PeerGame(
        game_id=game_id,
        events=em.events,
        expected_awards=expected_awards,
        returns=returns,
        reason=reason,
        pip_counts=pip_counts,
        domino_player=domino_player,
    )


def _decode_action(state: Any, action_id: int) -> Any:
    """OpenSpiel's Action object (player, tile, edge) for an action id."""
    from open_spiel.python.games import block_dominoes

    action = block_dominoes._ACTIONS[action_id]
    if state.action_to_string(state.current_player(), action_id) != str(action):
        raise BridgeError(f"action table mismatch for {action_id}")
    return action


def _awards_by_rules(pip_counts: dict[str, int]) -> dict[str, int]:
    """Awards under RULES (others / no_winner / no rounding) for 2 players, domino or block.

    A domino winner has 0 pips, so both cases reduce to: the unique lowest pip count wins
    the other players' pips; a shared lowest count scores nobody.
    """
    low = min(pip_counts.values())
    winners = [p for p, v in pip_counts.items() if v == low]
    awards = dict.fromkeys(pip_counts, 0)
    if len(winners) == 1:
        awards[winners[0]] = sum(v for p, v in pip_counts.items() if p != winners[0])
    return awards


def play_random_games(n: int, seed: int) -> list[PeerGame]:
    """Play ``n`` OpenSpiel games, deterministically from ``seed``; one PeerGame each."""
    game = _load_game()
    games = []
    for i in range(n):
        rng = random.Random(f"openspiel-peer:{seed}:{i}")
        games.append(play_one_game(game, rng, f"os-{seed}-{i:05d}", i))
    return games
