"""Bridge from OpenSpiel's ``python_team_dominoes`` to our wire events (EVENTS.md).

What OpenSpiel's game is (read from its source, ``open_spiel/python/games/team_dominoes.py``,
open_spiel 2.0.2):

* Loaded with ``pyspiel.load_game("python_team_dominoes")`` once ``open_spiel.python.games``
  (which registers the Python games) is imported.
* 4 players, double-six (28 tiles), all dealt: 28 chance outcomes, tile k of the deal to
  player k mod 4, so 7 each and nothing left over (``draw: none``, empty boneyard).
  Partners are players 0 and 2 against 1 and 3: our seats in the order of play, so
  ``teams`` ``{"a": [p0, p2], "b": [p1, p3]}`` alternates as RULES.md §9 asks.
* Player 0 always leads, with any tile. An action is (tile, value of the end covered); the
  two open ends are a sorted list of values, not left/right. A value shown by both ends is
  either end for us (the resulting ends are the same).
* No pass action. After a play: an empty hand ends the game (domino); otherwise the next
  player in order with a legal move moves, the players in between being *skipped* (for us,
  legitimate passes; the mover itself may move again after three skips); nobody able to move
  ends the game (blocked). (A "team has played all its tiles" check in that loop can never
  fire: a domino ends the game first.)
* ``returns()``: with T0, T1 the pip sums of the teams' hands (the double-blank counts 0),
  equal sums give 0 to everyone; otherwise the team with fewer pips gets ``+`` the other
  team's sum and the other team its negation. This is the same for a domino and a block.

Mapping onto RULES.md (``RULES``): ``block_winner: lowest_team``, ``block_points: others``,
``tie: no_winner``, ``domino_points: others``, ``double_blank: 0``, ``rounding: none``, and
``block_confirmation`` drawn per game (``full_round``: a full round of passes follows
OpenSpiel's end; ``immediate``: the block is declared on the closing play itself).

Where the scoring differs: a *domino* whose team does not hold strictly fewer pips than the
other team. RULES.md §5.1: the team of the player who went out wins the round. OpenSpiel
scores a domino like a block: the team with fewer pips wins (the partner of the player who
went out may hold more pips than both opponents), and equal sums score nobody. Those rounds
are compared for everything but the result (end, seq, pip counts), and counted.
"""

from __future__ import annotations

import random
from typing import Any

from tests.peer.peer_support import (
    BridgeError,
    Emitter,
    Move,
    PeerGame,
    PeerRound,
    RoundResult,
    Tile,
    can_play,
    moves_on_line,
    pips,
    team_of,
    team_pips,
    tile,
)

GAME_NAME = "python_team_dominoes"
PLAYERS = ("p0", "p1", "p2", "p3")
TEAMS = {"a": ["p0", "p2"], "b": ["p1", "p3"]}

#: The options that reproduce OpenSpiel's returns (see the module docstring).
RULES: dict[str, Any] = {
    "max_pip": 6,
    "draw": "none",
    "block_winner": "lowest_team",
    "block_points": "others",
    "domino_points": "others",
    "tie": "no_winner",
    "rounding": "none",
    "double_blank": 0,
}

LEFT_OUT = "domino, but the domino team does not hold strictly fewer pips"


def load_game() -> Any:
    """Returns OpenSpiel's ``python_team_dominoes`` game."""
    import open_spiel.python.games  # noqa: F401  (registers the Python games with pyspiel)
    import pyspiel

    return pyspiel.load_game(GAME_NAME)


def _action(action_id: int) -> Any:
    from open_spiel.python.games import team_dominoes

    return team_dominoes._ACTIONS[action_id]


def _offers(
    state: Any, player: int, action_ids: list[int] | None = None
) -> list[tuple[Tile, int | None]]:
    """The legal actions OpenSpiel gives a player now, as (tile, value covered)."""
    out = []
    for action_id in state.get_legal_actions(player) if action_ids is None else action_ids:
        action = _action(action_id)
        if action.player != player:
            raise BridgeError(f"action {action} listed for p{player}")
        out.append((tile(*action.tile), None if action.edge is None else int(action.edge)))
    return out


def _legal(offers: list[tuple[Tile, int | None]], ends: tuple[int, int] | None) -> frozenset[Move]:
    if ends is None:
        if any(v is not None for _, v in offers):
            raise BridgeError(f"a first play that names a value: {offers}")
        return frozenset((t, None) for t, _ in offers)
    return frozenset(moves_on_line(offers, *ends))


def play_one_game(game: Any, rng: random.Random, game_id: str, game_index: int) -> PeerGame:
    """Plays one OpenSpiel game with random chance outcomes and random legal actions."""
    state = game.new_initial_state()
    while state.is_chance_node():
        outcomes = state.chance_outcomes()
        state.apply_action(outcomes[rng.randrange(len(outcomes))][0])
    hands = [sorted(tile(*t) for t in h) for h in state.hands]
    if [len(h) for h in hands] != [7, 7, 7, 7] or len({t for h in hands for t in h}) != 28:
        raise BridgeError(f"{game_id}: unexpected deal {state.hands}")
    if state.current_player() != 0:
        raise BridgeError(f"{game_id}: OpenSpiel's leader is {state.current_player()}, not 0")

    confirmation = rng.choice(("full_round", "immediate"))
    em = Emitter(game_id, game_index)
    # Team listing order is free; list it either way to show it does not matter.
    teams = dict(TEAMS) if rng.random() < 0.5 else {"b": TEAMS["b"], "a": TEAMS["a"]}
    em.emit(
        "GameStarted",
        players=list(PLAYERS),
        teams=teams,
        rules={**RULES, "block_confirmation": confirmation},
    )
    em.emit(
        "RoundStarted",
        round=1,
        hands={PLAYERS[i]: [list(t) for t in hands[i]] for i in range(4)},
        boneyard=[],
        leader=PLAYERS[0],
    )

    legal: dict[int, frozenset[Move]] = {}
    ends: tuple[int, int] | None = None  # (left, right) in our line
    turn = 0  # whose turn it is for us
    last_mover = 0
    while not state.is_terminal():
        actor = state.current_player()
        while turn != actor:  # OpenSpiel skipped this player: a legitimate pass for us
            offers = _offers(state, turn)
            if offers or ends is None or can_play(hands[turn], *ends):
                raise BridgeError(f"{game_id}: OpenSpiel skipped p{turn}, who can play")
            legal[em.emit("Passed", round=1, player=PLAYERS[turn])] = frozenset()
            turn = (turn + 1) % 4
        action_ids = state.legal_actions()
        moves = _legal(_offers(state, actor, action_ids), ends)
        action_id = action_ids[rng.randrange(len(action_ids))]
        action = _action(action_id)
        t = tile(*action.tile)
        if t not in hands[actor]:
            raise BridgeError(f"{game_id}: {t} not in p{actor}'s shadow hand")
        shown = list(t) if rng.random() < 0.5 else [t[1], t[0]]  # orientation is free
        if ends is None:
            ends = (shown[0], shown[1])  # the first tile [x, y] opens left x, right y
            seq = em.emit("TilePlayed", round=1, player=PLAYERS[actor], tile=shown)
        else:
            covered = int(action.edge)
            sides = [i for i in (0, 1) if ends[i] == covered]
            if not sides:
                raise BridgeError(f"{game_id}: {action} covers {covered}, ends are {ends}")
            side = rng.choice(sides)
            new = t[1] if t[0] == covered else t[0]
            ends = (new, ends[1]) if side == 0 else (ends[0], new)
            end = ("left", "right")[side]
            seq = em.emit("TilePlayed", round=1, player=PLAYERS[actor], tile=shown, end=end)
        legal[seq] = moves
        hands[actor].remove(t)
        state.apply_action(action_id)
        last_mover, turn = actor, (actor + 1) % 4
        if sorted(int(v) for v in state.open_edges) != sorted(ends):
            raise BridgeError(f"{game_id}: shadow ends {ends} != OpenSpiel's {state.open_edges}")
        if [sorted(h) for h in hands] != [sorted(tile(*x) for x in h) for h in state.hands]:
            raise BridgeError(f"{game_id}: shadow hands differ from OpenSpiel's")

    if ends is None:
        raise BridgeError(f"{game_id}: the game ended without a play")
    pip_counts = {PLAYERS[i]: pips(hands[i]) for i in range(4)}
    returns = [float(r) for r in state.returns()]
    confirmed_by: list[str] = []
    if not hands[last_mover]:
        reason = "domino"
    else:
        reason = "blocked"
        if any(_offers(state, p) or can_play(hands[p], *ends) for p in range(4)):
            raise BridgeError(f"{game_id}: OpenSpiel ended blocked but someone can play")
        if confirmation == "full_round":
            # A full round of legitimate passes, from whoever's turn it is: OpenSpiel allows
            # none of them a move, and the last one confirms the block.
            for k in range(4):
                confirmed_by.append(PLAYERS[(turn + k) % 4])
                legal[em.emit("Passed", round=1, player=confirmed_by[-1])] = frozenset()
    result, left_out = _result(returns, pip_counts, reason, PLAYERS[last_mover], game_id)
    peer_round = PeerRound(
        round_no=1,
        reason=reason,
        ends_at_seq=em.seq,
        pip_counts=pip_counts,
        open_ends=(min(ends), max(ends)),
        confirmed_by=confirmed_by,
        result=result,
        left_out=left_out,
        team_cumulative=None if result is None else dict(result.team_awards),
        peer_said=f"returns {returns}",
    )
    return PeerGame(game_id, em.events, teams, [peer_round], legal)


def _result(
    returns: list[float], pip_counts: dict[str, int], reason: str, mover: str, game_id: str
) -> tuple[RoundResult | None, str]:
    """OpenSpiel's returns in our terms, after checking them against the documented rule."""
    t = team_pips(TEAMS, pip_counts)
    # The documented rule (module docstring), checked so that a left-out round is explained.
    if t["a"] == t["b"]:
        documented = [0.0] * 4
    else:
        lower, higher = sorted(t, key=t.__getitem__)
        documented = [
            float(t[higher] if team_of(TEAMS, p) == lower else -t[higher]) for p in PLAYERS
        ]
    if returns != documented:
        raise BridgeError(f"{game_id}: returns {returns}, documented rule gives {documented}")
    if reason == "domino":
        own = team_of(TEAMS, mover)
        (other,) = set(t) - {own}
        if not t[own] < t[other]:
            return None, LEFT_OUT
    by_team = {team_of(TEAMS, p): int(r) for p, r in zip(PLAYERS, returns, strict=True)}
    winners = tuple(x for x in ("a", "b") if by_team[x] > 0)
    tied = t["a"] == t["b"]
    awards = {x: max(0, by_team[x]) for x in ("a", "b")}
    return RoundResult(winners, awards, tied), ""


def play_random_games(n: int, seed: int) -> list[PeerGame]:
    """Plays ``n`` OpenSpiel team games, deterministically from ``seed``."""
    game = load_game()
    return [
        play_one_game(game, random.Random(f"team-dominoes:{seed}:{i}"), f"ost-{seed}-{i:05d}", i)
        for i in range(n)
    ]
