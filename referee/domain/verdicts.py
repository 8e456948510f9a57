"""What the referee announces (RULES.md section 7).

Fields that only some games give a meaning (teams, penalty scoring, joint winners) are
``None`` when the game's options give them none; the wire then leaves them out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from referee.domain.fouls import FoulKind
from referee.domain.rules import Scoring


class RoundEnd(StrEnum):
    """How a round ended."""

    DOMINO = "domino"
    """A player played their last tile."""
    BLOCKED = "blocked"
    """Nobody could play and the boneyard was exhausted."""


@dataclass(frozen=True, slots=True)
class FoulRecorded:
    """A player broke a rule; ``applied`` tells if the action stood."""

    player: str
    foul: FoulKind
    applied: bool
    penalty: int


@dataclass(frozen=True, slots=True)
class PointsScored:
    """A play scored at once from the layout's count (section 10)."""

    player: str
    count: int
    points: int
    cumulative: Mapping[str, int]
    team: str | None = None
    team_cumulative: Mapping[str, int] | None = None


@dataclass(frozen=True, slots=True)
class BlockDeclared:
    """The round is blocked: nobody can play and the boneyard is exhausted."""

    proposer: str
    confirmed_by: tuple[str, ...]
    open_ends: Mapping[str, int]
    """Each end (or train) and the value it shows."""
    pip_counts: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class RoundScored:
    """A round ended and was scored."""

    reason: RoundEnd
    winners: tuple[str, ...]
    pip_counts: Mapping[str, int]
    awards: Mapping[str, int]
    cumulative: Mapping[str, int]
    tie: bool
    scoring: Scoring | None = None
    """``PENALTY`` under penalty scoring (``awards`` are then the pips each player added)."""
    team_pip_counts: Mapping[str, int] | None = None
    team_awards: Mapping[str, int] | None = None
    team_cumulative: Mapping[str, int] | None = None
    winning_teams: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class GameWon:
    """The game is over: its (first) winner and the final scores."""

    winner: str
    cumulative: Mapping[str, int]
    winners: tuple[str, ...] | None = None
    """Every winning player, when teams, ``rounds`` or penalty scoring give it a meaning."""
    winning_teams: tuple[str, ...] | None = None
    team_cumulative: Mapping[str, int] | None = None


Verdict = FoulRecorded | PointsScored | BlockDeclared | RoundScored | GameWon
"""Every kind of verdict, in the order one event's verdicts are announced."""
