"""What the referee announces (RULES.md section 7)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from referee.domain.fouls import FoulKind


class RoundEnd(StrEnum):
    """How a round ended."""

    DOMINO = "domino"
    """A player played their last tile."""
    BLOCKED = "blocked"
    """Nobody could play and the boneyard was empty."""


@dataclass(frozen=True, slots=True)
class FoulRecorded:
    """A player broke a rule; ``applied`` tells if the action stood."""

    player: str
    foul: FoulKind
    applied: bool
    penalty: int


@dataclass(frozen=True, slots=True)
class BlockDeclared:
    """The round is blocked: nobody can play and the boneyard is empty."""

    proposer: str
    confirmed_by: tuple[str, ...]
    open_ends: tuple[int, int]
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


@dataclass(frozen=True, slots=True)
class GameWon:
    """A player reached the target score and won the game."""

    winner: str
    cumulative: Mapping[str, int]


Verdict = FoulRecorded | BlockDeclared | RoundScored | GameWon
"""Every kind of verdict, in the order one event's verdicts are announced."""
