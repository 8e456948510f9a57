"""What the peer cross-checks share: the envelope, the referee run, the move probe, the comparison.

A *bridge* (one module per peer library) plays the peer's games and turns each into a
``PeerGame``: our input events (EVENTS.md) plus what the peer said, in our terms. This module
then

* runs our referee in process (``referee.processing.referee.Referee``, the same code as
  ``referee replay``) over all games' events interleaved in one stream;
* probes every position both ways: the moves the peer allows there are exactly the plays our
  referee accepts without a foul, and a pass is legitimate exactly where the peer allows no
  move (``probe_moves``);
* compares each round's verdicts with what the peer said (``compare_game``).
"""

from __future__ import annotations

import importlib
import json
import os
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from referee.contracts.parse import Unparsed, parse_event
from referee.contracts.rejection import FileSource
from referee.contracts.verdicts import encode_canonical
from referee.domain.errors import InvalidInput
from referee.domain.events import End, Passed, TilePlayed
from referee.domain.judge import judge
from referee.domain.state import GameState
from referee.domain.verdicts import FoulRecorded
from referee.processing.referee import Referee

Tile = tuple[int, int]
Move = tuple[Tile, str | None]
"""A play in our terms: the tile (low value first) and the end named (``None``: first tile)."""

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
_ENDS = ("left", "right")


def require_peer(module: str) -> ModuleType:
    """Imports a peer library; skips the module without it, and fails instead under CI.

    CI installs every dependency group (``scripts/test`` syncs ``--all-groups``), so a peer
    missing there is a broken install, not a reason to pass silently.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        message = f"peer library {module!r} is not installed ({exc}): uv sync --group peer"
        if os.environ.get("CI"):
            pytest.fail(message + " -- CI is set, so this is an error, not a skip", pytrace=False)
        pytest.skip(message, allow_module_level=True)


def tile(a: float, b: float) -> Tile:
    """Returns a peer's tile in our form: two ints, low value first."""
    x, y = int(a), int(b)
    if (x, y) != (a, b):
        raise BridgeError(f"non-integral tile ({a}, {b})")
    return (x, y) if x <= y else (y, x)


def pips(hand: list[Tile]) -> int:
    """Returns the pips of a hand (the double-blank counts 0)."""
    return sum(a + b for a, b in hand)


def can_play(hand: list[Tile], left: int, right: int) -> bool:
    """Checks if some tile of the hand shows the value of an end."""
    return any(left in t or right in t for t in hand)


class BridgeError(AssertionError):
    """A bridge's shadow model disagrees with its peer (a bug in the bridge or the peer)."""


@dataclass(frozen=True)
class RoundResult:
    """Who won a round and what each team scored, as the peer says, in our terms."""

    winning_teams: tuple[str, ...]
    team_awards: dict[str, int]
    tie: bool


@dataclass
class PeerRound:
    """One round as the peer played and scored it."""

    round_no: int
    reason: str
    """``"domino"`` or ``"blocked"``."""
    ends_at_seq: int
    """The seq of the event that ends the round for the peer (our verdicts' ``cause_seq``)."""
    pip_counts: dict[str, int]
    open_ends: tuple[int, int]
    """The two values the line shows at the end, sorted."""
    confirmed_by: list[str]
    """``confirmed_by`` of our BlockDeclared: the passers under ``full_round``, else empty."""
    result: RoundResult | None
    """The peer's result, or ``None`` when its scoring and our options differ (``left_out``)."""
    left_out: str = ""
    team_cumulative: dict[str, int] | None = None
    """The peer's running team scores after this round (series only)."""
    peer_said: str = ""
    """The peer's own result object, for messages."""


@dataclass
class PeerGame:
    """One peer game: our input events and what the peer said about each round."""

    game_id: str
    events: list[dict[str, Any]]
    teams: dict[str, list[str]]
    rounds: list[PeerRound]
    legal: dict[int, frozenset[Move]]
    """Seq of every TilePlayed and Passed -> the moves the peer allowed at that position."""
    lead_rule: set[int] = field(default_factory=set)
    """Seqs where the peer restricts the lead (a starting domino), which our rules do not."""
    game_won_by: tuple[str, ...] | None = None
    """The teams that won the game (a peer series), or ``None`` when the game does not end."""


class Emitter:
    """Writes one game's events with envelopes (ids, seq, times) as EVENTS.md wants them."""

    def __init__(self, game_id: str, game_index: int) -> None:
        self.game_id = game_id
        self.base = _EPOCH + timedelta(hours=game_index)
        self.events: list[dict[str, Any]] = []

    @property
    def seq(self) -> int:
        """Returns the seq of the last event written."""
        return len(self.events)

    def emit(self, type_: str, **fields: Any) -> int:
        """Appends an event; returns its seq."""
        seq = len(self.events) + 1
        at = self.base + timedelta(seconds=seq)
        self.events.append(
            {
                "event_id": f"{self.game_id}-e{seq:04d}",
                "type": type_,
                "game_id": self.game_id,
                "seq": seq,
                "occurred_at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "schema_version": 1,
                **fields,
            }
        )
        return seq


def team_of(teams: dict[str, list[str]], player: str) -> str:
    """Returns the team a player is in."""
    return next(t for t, members in teams.items() if player in members)


def team_pips(teams: dict[str, list[str]], pip_counts: dict[str, int]) -> dict[str, int]:
    """Returns each team's pip count T (RULES.md §5.1)."""
    return {t: sum(pip_counts[p] for p in members) for t, members in teams.items()}


def moves_on_line(offers: Sequence[tuple[Tile, int | None]], left: int, right: int) -> set[Move]:
    """Maps peer offers (a tile and the *value* it covers) onto our ends.

    A value shown by both ends is both ends for us (the peer does not tell them apart).
    """
    out: set[Move] = set()
    for t, value in offers:
        for end, shows in zip(_ENDS, (left, right), strict=True):
            if shows == value:
                out.add((t, end))
    return out


# --- running the referee ----------------------------------------------------------------------


def interleave(games: list[PeerGame], seed: int) -> list[dict[str, Any]]:
    """All games' events in one stream, randomly interleaved, each game's order kept."""
    rng = random.Random(seed)
    queues = [list(reversed(g.events)) for g in games]
    live = [q for q in queues if q]
    out: list[dict[str, Any]] = []
    while live:
        i = rng.randrange(len(live))
        q = live[i]
        out.append(q.pop())
        if not q:
            live[i] = live[-1]
            live.pop()
    return out


def encode(event: dict[str, Any]) -> bytes:
    """Returns one event as a log line's bytes (without the line break)."""
    return json.dumps(event, separators=(",", ":")).encode()


@dataclass
class RefereeRun:
    """What our referee said about a stream: verdicts by game, and every rejection."""

    verdicts: dict[str, list[dict[str, Any]]]
    rejections: list[dict[str, Any]]
    records: int


def run_referee(events: list[dict[str, Any]], log: Path) -> RefereeRun:
    """Writes the stream to ``log`` (so ``referee replay`` can re-run it) and judges it."""
    referee = Referee()
    verdicts: dict[str, list[dict[str, Any]]] = defaultdict(list)
    rejections: list[dict[str, Any]] = []
    with log.open("wb") as f:
        for number, event in enumerate(events, start=1):
            raw = encode(event)
            f.write(raw + b"\n")
            result = referee.process(raw, FileSource(log.name, number))
            for v in result.verdicts:
                verdicts[v.game_id].append(json.loads(encode_canonical(v)))
            if result.rejection is not None:
                rejections.append(json.loads(encode_canonical(result.rejection)))
    return RefereeRun(dict(verdicts), rejections, len(events))


def write_repro(game: PeerGame, folder: Path) -> Path:
    """Writes one game's events alone: a minimal log that reproduces a disagreement."""
    path = folder / f"{game.game_id}.jsonl"
    path.write_bytes(b"".join(encode(e) + b"\n" for e in game.events))
    return path


# --- the two-way move probe -------------------------------------------------------------------


def _fouls(game: GameState, event: TilePlayed | Passed) -> list[str]:
    try:
        verdicts = judge(game, event)[1]
    except InvalidInput as exc:  # e.g. the round is over for us but not for the peer
        return [f"cannot be judged ({exc})"]
    return [str(v.foul) for v in verdicts if isinstance(v, FoulRecorded)]


def probe_moves(game: PeerGame) -> list[str]:
    """Checks every action position of a game both ways against the peer's legal moves.

    At each position, the referee's state is branched (``judge`` is pure): every tile of the
    mover's hand on every end (or as the first tile) is judged, and the set of plays with no
    foul must equal the peer's legal moves; a pass must be legitimate exactly when the peer
    allows no move, and a ``false_pass`` otherwise. Returns the problems found.
    """
    problems: list[str] = []
    state: GameState | None = None
    hands: dict[str, list[Tile]] = {}
    first_play = True
    for ev in game.events:
        parsed = parse_event(encode(ev))
        if isinstance(parsed, Unparsed):
            problems.append(f"{game.game_id} seq {ev['seq']}: {parsed.reason}: {parsed.detail}")
            return problems
        domain = parsed.to_domain()
        kind = ev["type"]
        if kind == "RoundStarted":
            hands = {p: [tile(*t) for t in ts] for p, ts in ev["hands"].items()}
            first_play = True
        elif kind in ("TilePlayed", "Passed"):
            assert state is not None
            where = f"{game.game_id} seq {ev['seq']} ({ev['player']})"
            problems.extend(
                _probe_position(
                    state,
                    ev["round"],
                    ev["player"],
                    hands[ev["player"]],
                    first_play=first_play,
                    legal=game.legal[ev["seq"]],
                    lead_rule=ev["seq"] in game.lead_rule,
                    where=where,
                )
            )
            if kind == "TilePlayed":
                hands[ev["player"]].remove(tile(*ev["tile"]))
                first_play = False
        try:
            state, _ = judge(state, domain)
        except InvalidInput as exc:
            problems.append(f"{game.game_id} seq {ev['seq']}: cannot be judged: {exc}")
            return problems
    return problems


def _probe_position(
    state: GameState,
    round_no: int,
    player: str,
    hand: list[Tile],
    *,
    first_play: bool,
    legal: frozenset[Move],
    lead_rule: bool,
    where: str,
) -> list[str]:
    problems = []
    ends: tuple[str | None, ...] = (None,) if first_play else _ENDS
    accepted: set[Move] = set()
    for t in hand:
        for end in ends:
            play = TilePlayed(round_no, player, t, None if end is None else End(end))
            if not _fouls(state, play):
                accepted.add((t, end))
    if lead_rule:
        # The peer names the first tile (a starting domino); any lead is fair for us.
        if not legal <= accepted:
            problems.append(f"{where}: peer allows {sorted(legal - accepted)}, referee fouls them")
    elif accepted != legal:
        only_peer = sorted(legal - accepted, key=str)
        only_ours = sorted(accepted - legal, key=str)
        problems.append(f"{where}: peer-only moves {only_peer}, referee-only moves {only_ours}")
    pass_fouls = _fouls(state, Passed(round_no, player))
    expected = ["false_pass"] if legal else []
    if pass_fouls != expected:
        problems.append(f"{where}: a pass gives fouls {pass_fouls}, expected {expected}")
    return problems


# --- comparing verdicts with the peer ---------------------------------------------------------


def compare_game(game: PeerGame, verdicts: list[dict[str, Any]]) -> list[str]:
    """Returns every way our verdicts for one game differ from what the peer said."""
    problems: list[str] = []
    fouls = [v for v in verdicts if v["type"] == "FoulRecorded"]
    if fouls:
        problems.append(f"{len(fouls)} fouls in honest play, first {fouls[0]}")
    by_round: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for v in verdicts:
        by_round[v["round"]].append(v)
    if set(by_round) - {r.round_no for r in game.rounds}:
        problems.append(f"verdicts for rounds the peer did not play: {sorted(by_round)}")
    for peer in game.rounds:
        problems.extend(
            f"round {peer.round_no}: {p}"
            for p in _compare_round(game, peer, by_round[peer.round_no])
        )
    won = [v for v in verdicts if v["type"] == "GameWon"]
    if game.game_won_by is None:
        if won:
            problems.append(f"GameWon {won} but the peer's game does not end")
    elif len(won) != 1:
        problems.append(f"{len(won)} GameWon, the peer's game was won by {game.game_won_by}")
    else:
        last = game.rounds[-1]
        if tuple(won[0].get("winning_teams", ())) != game.game_won_by:
            problems.append(f"GameWon {won[0].get('winning_teams')} != peer {game.game_won_by}")
        if won[0]["cause_seq"] != last.ends_at_seq:
            problems.append(f"GameWon at seq {won[0]['cause_seq']}, peer at {last.ends_at_seq}")
        if won[0].get("team_cumulative") != last.team_cumulative:
            problems.append(
                f"GameWon team_cumulative {won[0].get('team_cumulative')} != peer "
                f"{last.team_cumulative}"
            )
    return problems


def _compare_round(game: PeerGame, peer: PeerRound, verdicts: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    blocks = [v for v in verdicts if v["type"] == "BlockDeclared"]
    scored = [v for v in verdicts if v["type"] == "RoundScored"]
    if len(scored) != 1:
        return [f"{len(scored)} RoundScored (peer: {peer.reason})"]
    rs = scored[0]
    if rs["reason"] != peer.reason:
        problems.append(f"reason {rs['reason']} != peer {peer.reason}")
    if rs["cause_seq"] != peer.ends_at_seq:
        problems.append(f"round scored at seq {rs['cause_seq']}, peer ended at {peer.ends_at_seq}")
    if rs["pip_counts"] != peer.pip_counts:
        problems.append(f"pip_counts {rs['pip_counts']} != peer {peer.pip_counts}")
    expected_t = team_pips(game.teams, peer.pip_counts)
    if rs.get("team_pip_counts") != expected_t:
        problems.append(f"team_pip_counts {rs.get('team_pip_counts')} != {expected_t}")
    if len(blocks) != (1 if peer.reason == "blocked" else 0):
        problems.append(f"{len(blocks)} BlockDeclared for a {peer.reason} round")
    for b in blocks:
        if b["cause_seq"] != peer.ends_at_seq:
            problems.append(f"block declared at seq {b['cause_seq']}, peer at {peer.ends_at_seq}")
        if tuple(sorted(b["open_ends"].values())) != peer.open_ends:
            problems.append(f"open_ends {b['open_ends']} != peer {peer.open_ends}")
        if b["confirmed_by"] != peer.confirmed_by:
            problems.append(f"confirmed_by {b['confirmed_by']} != {peer.confirmed_by}")
        if b["pip_counts"] != peer.pip_counts:
            problems.append(f"block pip_counts {b['pip_counts']} != peer {peer.pip_counts}")
    if peer.result is not None:
        want = peer.result
        if tuple(rs.get("winning_teams", ())) != want.winning_teams:
            problems.append(
                f"winning_teams {rs.get('winning_teams')} != peer {want.winning_teams} "
                f"({peer.peer_said})"
            )
        if rs.get("team_awards") != want.team_awards:
            problems.append(
                f"team_awards {rs.get('team_awards')} != peer {want.team_awards} ({peer.peer_said})"
            )
        if rs["tie"] != want.tie:
            problems.append(f"tie {rs['tie']} != peer {want.tie}")
        by_player = {p: want.team_awards[team_of(game.teams, p)] for p in peer.pip_counts}
        if rs["awards"] != by_player:
            problems.append(f"awards {rs['awards']} != {by_player}")
        winners = [p for p in peer.pip_counts if team_of(game.teams, p) in want.winning_teams]
        if rs["winners"] != winners:
            problems.append(f"winners {rs['winners']} != {winners}")
    if peer.team_cumulative is not None and rs.get("team_cumulative") != peer.team_cumulative:
        problems.append(f"team_cumulative {rs.get('team_cumulative')} != {peer.team_cumulative}")
    return problems


# --- the whole check --------------------------------------------------------------------------


def with_rules(game: PeerGame, **options: Any) -> PeerGame:
    """Returns a copy of a game whose GameStarted carries other rule options (to plant a
    difference the check must find)."""
    started, *rest = game.events
    changed = {**started, "rules": {**started["rules"], **options}}
    return PeerGame(
        game.game_id,
        [changed, *rest],
        game.teams,
        game.rounds,
        game.legal,
        game.lead_rule,
        game.game_won_by,
    )


def disagreements(games: list[PeerGame], run: RefereeRun, folder: Path) -> list[str]:
    """Compares every game's verdicts and probes every position; returns the disagreements.

    The first few games that disagree are written alone to ``folder`` as reproducing logs.
    """
    problems: list[str] = []
    written = 0
    for game in games:
        found = compare_game(game, run.verdicts.get(game.game_id, [])) + probe_moves(game)
        if found:
            problems.extend(f"{game.game_id}: {p}" for p in found)
            if written < 5:
                problems.append(f"{game.game_id}: reproducing log {write_repro(game, folder)}")
                written += 1
    return problems


def figures(games: list[PeerGame]) -> dict[str, int]:
    """Counts what a run covered: games, rounds, how they ended, what was compared."""
    rounds = [r for g in games for r in g.rounds]
    return {
        "games": len(games),
        "rounds": len(rounds),
        "domino": sum(r.reason == "domino" for r in rounds),
        "blocked": sum(r.reason == "blocked" for r in rounds),
        "blocked_full_round": sum(bool(r.confirmed_by) for r in rounds),
        "blocked_tied": sum(
            r.reason == "blocked" and r.result is not None and r.result.tie for r in rounds
        ),
        "results_compared": sum(r.result is not None for r in rounds),
        "results_left_out": sum(r.result is None for r in rounds),
        "positions_probed": sum(len(g.legal) for g in games),
        "leads_named_by_peer": sum(len(g.lead_rule) for g in games),
        "games_won": sum(g.game_won_by is not None for g in games),
    }
