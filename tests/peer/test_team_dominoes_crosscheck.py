"""Peer cross-check: our referee against OpenSpiel's ``python_team_dominoes`` (partnerships).

Run with the peer dependency group, e.g. ``uv run --frozen pytest -m peer tests/peer``. The
mapping of OpenSpiel's game onto our rules is in ``team_dominoes_bridge.py``; in short: four
players in two teams (seats 0, 2 against 1, 3), all 28 tiles dealt, ``draw: none``, player 0
leads, ``block_winner: lowest_team``, ``block_points``/``domino_points: others``, ``tie:
no_winner``, and ``block_confirmation`` drawn per game.

What is compared, on 1,000 games from a fixed seed:

* every position, both ways: the moves OpenSpiel allows are exactly the plays our referee
  accepts without a foul, a pass is legitimate exactly where OpenSpiel allows no move (it
  skips that player), and ``false_pass`` otherwise; honest play gives no ``FoulRecorded`` and
  no rejection;
* the round's end: domino or blocked, at the same event (``immediate``: the closing play;
  ``full_round``: the fourth pass after it), the open ends, the pip counts of players and
  teams, ``confirmed_by``;
* the result (``winning_teams``, ``team_awards``, every player's ``awards`` and ``winners``,
  ``tie``) with OpenSpiel's ``returns()`` for every blocked round (ties included) and every
  domino whose team holds strictly fewer pips than the other.

Left out of the result comparison, and counted: a domino whose team holds as many pips as the
other team or more (the partner of the player who went out keeps a heavy hand). RULES.md
§5.1 gives that round to the team that went out; OpenSpiel's ``returns()`` scores every end
by the lower pip sum, so there it pays the other team, or nobody on equal sums. That is a
different rule, not a disagreement: the bridge checks that OpenSpiel's returns follow its own
documented rule on every such round, and the end, pips and seq are still compared.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.peer import team_dominoes_bridge as bridge
from tests.peer.peer_support import (
    disagreements,
    figures,
    interleave,
    probe_moves,
    require_peer,
    run_referee,
    team_pips,
    with_rules,
)

require_peer("pyspiel")

N_GAMES = 1000
SEED = 20261201

#: The figures of the run from SEED (docs/rules.md, "Peer cross-checks"). They change only
#: with the bridge or the locked open_spiel version; a disagreement fails the test before this.
EXPECTED = {
    "games": 1000,
    "rounds": 1000,
    "domino": 707,
    "blocked": 293,
    "blocked_full_round": 142,
    "blocked_tied": 12,
    "results_compared": 867,
    "results_left_out": 133,
    "positions_probed": 26191,
    "leads_named_by_peer": 0,
    "games_won": 0,
}
#: Of the rounds left out: the domino team held more pips (OpenSpiel pays the other team),
#: or as many (OpenSpiel pays nobody).
EXPECTED_LEFT_OUT = {"domino team higher": 105, "teams equal": 28}


def test_bridge_writes_valid_deterministic_games() -> None:
    """Fast: envelopes, deals and partnerships are right, and the seed decides everything."""
    games = bridge.play_random_games(30, seed=7)
    assert len({g.game_id for g in games}) == 30
    for g in games:
        assert [e["seq"] for e in g.events] == list(range(1, len(g.events) + 1))
        assert len({e["event_id"] for e in g.events}) == len(g.events)
        started, dealt = g.events[0], g.events[1]
        assert started["players"] == ["p0", "p1", "p2", "p3"]
        assert started["teams"] == {"a": ["p0", "p2"], "b": ["p1", "p3"]}
        assert dealt["boneyard"] == []
        assert dealt["leader"] == "p0"
        assert sorted(len(h) for h in dealt["hands"].values()) == [7, 7, 7, 7]
        actions = [e for e in g.events[2:] if e["type"] in ("TilePlayed", "Passed")]
        assert len(actions) == len(g.events) - 2
        assert set(g.legal) == {e["seq"] for e in actions}
    again = bridge.play_random_games(5, seed=7)
    assert [g.events for g in again] == [g.events for g in games[:5]]


def test_the_check_finds_planted_differences(tmp_path: Path) -> None:
    """Fast: a wrong option, a move taken from the peer's list, a foul: each is reported."""
    games = bridge.play_random_games(60, seed=11)
    assert not disagreements(
        games, run_referee(interleave(games, 1), tmp_path / "a.jsonl"), tmp_path
    )

    # Blocked rounds scored with `all` instead of `others`: the winners' own pips are added.
    planted = [with_rules(g, block_points="all") for g in games]
    run = run_referee(interleave(planted, 1), tmp_path / "b.jsonl")
    flagged = {p.split(":")[0] for p in disagreements(planted, run, tmp_path)}
    should = {
        g.game_id
        for g in games
        for r in g.rounds
        if r.reason == "blocked"
        and r.result
        and not r.result.tie
        and min(team_pips(bridge.TEAMS, r.pip_counts).values()) > 0
    }
    assert should
    assert flagged == should

    # A move OpenSpiel allowed, taken out of its list: the probe sees the referee accept it.
    game = games[0]
    seq = next(s for s, moves in game.legal.items() if len(moves) > 1)
    game.legal[seq] = frozenset(sorted(game.legal[seq])[1:])
    assert any(f"seq {seq}" in p for p in probe_moves(game))

    # A play on the wrong end is a foul in what was honest play.
    victim = games[1]
    i = _a_play_that_fits_one_end_only(victim.events)
    ev = victim.events[i]
    victim.events[i] = {**ev, "end": "left" if ev["end"] == "right" else "right"}
    run = run_referee(victim.events, tmp_path / "c.jsonl")
    assert any("fouls in honest play" in p for p in disagreements([victim], run, tmp_path))


def _a_play_that_fits_one_end_only(events: list[dict[str, Any]]) -> int:
    ends: list[int] = []
    for i, e in enumerate(events):
        if e["type"] != "TilePlayed":
            continue
        a, b = e["tile"]
        if not ends:
            ends = [a, b]
            continue
        side = 0 if e["end"] == "left" else 1
        if ends[1 - side] not in (a, b):
            return i
        ends[side] = b if a == ends[side] else a
    raise AssertionError("no play fits one end only")


@pytest.mark.peer
def test_referee_agrees_with_openspiel_team_dominoes(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    games = bridge.play_random_games(N_GAMES, seed=SEED)
    generated_s = time.perf_counter() - t0
    run = run_referee(interleave(games, SEED), tmp_path / "team-dominoes.jsonl")
    assert run.rejections == [], f"{len(run.rejections)} rejections, first {run.rejections[:3]}"
    problems = disagreements(games, run, tmp_path)
    seen = figures(games)
    checked_s = time.perf_counter() - t0
    left_out = [r for g in games for r in g.rounds if r.result is None]
    assert all(r.reason == "domino" and r.left_out == bridge.LEFT_OUT for r in left_out)
    kinds = Counter(
        "teams equal"
        if len(set(team_pips(bridge.TEAMS, r.pip_counts).values())) == 1
        else "domino team higher"
        for r in left_out
    )
    print(
        f"python_team_dominoes: {seen['games']} games compared ({run.records} events, "
        f"{seen['positions_probed']} positions probed both ways), {seen['blocked']} blocked "
        f"({seen['blocked_tied']} tied), {seen['domino']} won by domino; results compared "
        f"{seen['results_compared']}, left out {seen['results_left_out']} (domino team not "
        f"lower: {dict(kinds)}); {len(problems)} disagreements; {generated_s:.1f}s to play, "
        f"{checked_s:.1f}s in all"
    )
    assert problems == [], f"{len(problems)} disagreements, first: {problems[:10]}"
    assert seen == EXPECTED
    assert kinds == EXPECTED_LEFT_OUT
