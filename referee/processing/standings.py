"""Standings: cumulative scores, winners and fouls, read off a stream of verdicts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from referee.contracts.verdicts import (
    FoulRecordedWire,
    GameWonWire,
    OutputVerdict,
    PointsScoredWire,
    RoundScoredWire,
)


@dataclass(slots=True)
class GameStanding:
    """Where one game stands."""

    game_id: str
    rounds: int = 0
    cumulative: dict[str, int] = field(default_factory=dict)
    winner: str | None = None
    fouls: Counter[str] = field(default_factory=Counter)
    penalty_scoring: bool = False
    """Whether the game scores by penalty (learnt from its first ``RoundScored``): a foul's
    penalty is then added, not deducted."""


def standings(verdicts: Iterable[OutputVerdict]) -> list[GameStanding]:
    """Returns the standing of every game that has a verdict, by game id."""
    games: dict[str, GameStanding] = {}
    for v in verdicts:
        game = games.setdefault(v.game_id, GameStanding(v.game_id))
        if isinstance(v, RoundScoredWire):
            game.rounds += 1
            game.cumulative = dict(v.cumulative)
            game.penalty_scoring = v.scoring == "penalty"
        elif isinstance(v, PointsScoredWire):
            game.cumulative = dict(v.cumulative)
        elif isinstance(v, GameWonWire):
            game.winner = v.winner
            game.cumulative = dict(v.cumulative)
        elif isinstance(v, FoulRecordedWire):
            game.fouls[v.player] += 1
            if v.penalty:
                sign = 1 if game.penalty_scoring else -1
                game.cumulative[v.player] = game.cumulative.get(v.player, 0) + sign * v.penalty
    return [games[k] for k in sorted(games)]


def format_standings(rows: list[GameStanding]) -> str:
    """Returns a plain-text standings table."""
    lines = [f"{'game':<20} {'rounds':>6}  {'winner':<12} scores (fouls)"]
    for g in rows:
        scores = ", ".join(
            f"{p} {s}" + (f" ({g.fouls[p]})" if g.fouls[p] else "")
            for p, s in sorted(g.cumulative.items(), key=lambda kv: (-kv[1], kv[0]))
        )
        lines.append(f"{g.game_id:<20} {g.rounds:>6}  {g.winner or '-':<12} {scores}")
    return "\n".join(lines)
