"""Scoring during play (RULES.md section 10): what a play scores from the layout's count."""

from __future__ import annotations

from referee.domain.rules import PlayScoring


def play_points(scoring: PlayScoring, count: int) -> int:
    """Returns the points a play scores when it leaves the layout counting ``count``."""
    if count <= 0 or scoring is PlayScoring.NONE:
        return 0
    fives = count // 5 if count % 5 == 0 else 0
    threes = count // 3 if count % 3 == 0 else 0
    if scoring is PlayScoring.FIVES:
        return count if fives else 0
    if scoring is PlayScoring.THREES:
        return count if threes else 0
    return fives + threes
