"""Peer cross-check: our referee against OpenSpiel's ``python_block_dominoes``.

Run with the peer dependency group, e.g. ``uv run --group peer pytest -m peer tests/peer``.
The mapping of OpenSpiel's game onto our rules is documented in ``openspiel_bridge.py``.
"""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.peer.peer_support import require_peer

# A skip without OpenSpiel, a failure under CI (which installs the peer group).
require_peer("pyspiel")

N_GAMES = 1000
SEED = 20260101
REPLAY_TIMEOUT_S = 600


def _load_bridge() -> ModuleType:
    # Loaded by path so the test works whatever pytest's import mode is.
    name = "openspiel_bridge"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


bridge = _load_bridge()


def _interleave(games: list[Any], seed: int) -> list[dict[str, Any]]:
    """All games' events in one stream, randomly interleaved, each game's order kept."""
    rng = random.Random(seed)
    queues = [list(reversed(g.events)) for g in games]
    live = [q for q in queues if q]
    out: list[dict[str, Any]] = []
    while live:
        q = live[rng.randrange(len(live))]
        out.append(q.pop())
        if not q:
            live.remove(q)
    return out


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


# --- a minimal, independent reading of RULES.md for the event streams the bridge makes ------
# (2 players, draw "none", full_round confirmation, others / no_winner scoring, no fouls)


def _oracle(events: list[dict[str, Any]]) -> tuple[str, dict[str, int], dict[str, int]]:
    """Replays one bridge game by RULES.md; returns (reason, pip_counts, awards)."""
    started, round_started, *actions = events
    assert started["type"] == "GameStarted"
    assert round_started["type"] == "RoundStarted"
    players: list[str] = started["players"]
    assert round_started["boneyard"] == []
    hands = {p: {tuple(sorted(t)) for t in round_started["hands"][p]} for p in players}
    turn = players.index(round_started["leader"])
    left = right = None
    chain: list[str] = []  # consecutive legitimate passes
    for i, ev in enumerate(actions):
        last = i == len(actions) - 1
        player = ev["player"]
        assert player == players[turn], f"{ev['event_id']}: out of turn"
        if ev["type"] == "TilePlayed":
            tile = tuple(sorted(ev["tile"]))
            assert tile in hands[player], f"{ev['event_id']}: tile not in hand"
            if left is None:
                assert ev.get("end") is None
                left, right = ev["tile"]
            else:
                a, b = ev["tile"]
                shown = left if ev["end"] == "left" else right
                assert shown in (a, b), f"{ev['event_id']}: tile does not match"
                new = b if a == shown else a
                if ev["end"] == "left":
                    left = new
                else:
                    right = new
            hands[player].remove(tile)
            chain = []
            if not hands[player]:
                assert last, "events after a domino"
                pips = {p: sum(a + b for a, b in h) for p, h in hands.items()}
                others = sum(v for p, v in pips.items() if p != player)
                return "domino", pips, {p: others if p == player else 0 for p in players}
        else:
            assert ev["type"] == "Passed"
            can_play = left is None or any(left in t or right in t for t in hands[player])
            assert not can_play, f"{ev['event_id']}: false pass"
            chain.append(player)
            if len(chain) == len(players):
                assert last, "events after the block"
                assert not any(left in t or right in t for h in hands.values() for t in h)
                pips = {p: sum(a + b for a, b in h) for p, h in hands.items()}
                low = min(pips.values())
                winners = [p for p, v in pips.items() if v == low]
                awards = dict.fromkeys(players, 0)
                if len(winners) == 1:
                    awards[winners[0]] = sum(v for p, v in pips.items() if p != winners[0])
                return "blocked", pips, awards
        turn = (turn + 1) % len(players)
    raise AssertionError("round did not end")


def test_bridge_sanity_50_games() -> None:
    """Fast: the bridge's shadow-layout assertions hold, and its streams read right by RULES."""
    games = bridge.play_random_games(50, seed=7)  # raises BridgeError on any shadow mismatch
    assert len(games) == 50
    assert len({g.game_id for g in games}) == 50
    event_ids = [e["event_id"] for g in games for e in g.events]
    assert len(event_ids) == len(set(event_ids))
    for g in games:
        assert [e["seq"] for e in g.events] == list(range(1, len(g.events) + 1))
        assert all(e["game_id"] == g.game_id and e["schema_version"] == 1 for e in g.events)
        assert g.events[0]["rules"] == bridge.RULES
        reason, pips, awards = _oracle(g.events)
        assert reason == g.reason, g.game_id
        assert pips == g.pip_counts, g.game_id
        assert awards == g.expected_awards, (g.game_id, g.returns)
        # OpenSpiel is zero-sum; our awards are its positive part.
        assert sum(g.returns) == 0
        assert {p: max(0, r) for p, r in zip(bridge.PLAYERS, g.returns, strict=True)} == awards
    # Deterministic from the seed.
    again = bridge.play_random_games(5, seed=7)
    assert [g.events for g in again] == [g.events for g in games[:5]]


@pytest.mark.peer
def test_referee_agrees_with_openspiel(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    games = bridge.play_random_games(N_GAMES, seed=SEED)
    generated_s = time.perf_counter() - t0
    by_id = {g.game_id: g for g in games}
    assert len(by_id) == N_GAMES

    log = tmp_path / "openspiel-events.jsonl"
    verdicts_path = tmp_path / "verdicts.jsonl"
    rejected_path = tmp_path / "rejected.jsonl"
    with log.open("w", encoding="utf-8") as f:
        for ev in _interleave(games, SEED):
            f.write(json.dumps(ev, separators=(",", ":")) + "\n")

    t1 = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "referee",
            "replay",
            str(log),
            "--output",
            str(verdicts_path),
            "--rejected",
            str(rejected_path),
        ],
        capture_output=True,
        text=True,
        timeout=REPLAY_TIMEOUT_S,
        check=False,
    )
    replay_s = time.perf_counter() - t1
    print(f"generated {N_GAMES} OpenSpiel games in {generated_s:.2f}s; replay took {replay_s:.2f}s")
    assert proc.returncode == 0, f"referee replay failed:\n{proc.stdout}\n{proc.stderr}"

    rejected = _read_jsonl(rejected_path)
    assert rejected == [], f"{len(rejected)} rejections, first: {rejected[:3]}"

    verdicts = _read_jsonl(verdicts_path)
    assert verdicts, "no verdicts"
    fouls = [v for v in verdicts if v["type"] == "FoulRecorded"]
    assert fouls == [], f"{len(fouls)} fouls, first: {fouls[:3]}"

    per_game: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for v in verdicts:
        per_game[v["game_id"]].append(v)
    assert set(per_game) <= set(by_id), set(per_game) - set(by_id)

    mismatches = []
    for game_id, g in by_id.items():
        vs = per_game.get(game_id, [])
        kinds = Counter(v["type"] for v in vs)
        scored = [v for v in vs if v["type"] == "RoundScored"]
        if kinds["RoundScored"] != 1:
            mismatches.append((game_id, f"{kinds['RoundScored']} RoundScored"))
            continue
        rs = scored[0]
        blocks = kinds["BlockDeclared"]
        if blocks != (1 if g.reason == "blocked" else 0):
            mismatches.append((game_id, f"{blocks} BlockDeclared for a {g.reason} game"))
        if rs.get("reason") != g.reason:
            mismatches.append((game_id, f"reason {rs.get('reason')} != {g.reason}"))
        if rs.get("pip_counts") != g.pip_counts:
            mismatches.append((game_id, f"pip_counts {rs.get('pip_counts')} != {g.pip_counts}"))
        if rs.get("awards") != g.expected_awards:
            detail = f"awards {rs.get('awards')} != {g.expected_awards} (returns {g.returns})"
            mismatches.append((game_id, detail))
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[:10]}"
    # The figures docs/rules.md gives (Peer cross-checks); they change only with the bridge
    # or the locked open_spiel version.
    ends = Counter(g.reason for g in games)
    tied = sum(g.reason == "blocked" and len(set(g.pip_counts.values())) == 1 for g in games)
    print(f"python_block_dominoes: {N_GAMES} games, {dict(ends)}, {tied} tied, 0 mismatches")
    assert ends == {"domino": 279, "blocked": 721}
    assert tied == 32
