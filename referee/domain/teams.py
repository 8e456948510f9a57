"""Partnerships (RULES.md section 9): who scores with whom.

Teams shape scoring only; turns, fouls and the block stay per player. Without ``teams`` every
player is a team of one, numbered by seat, and every scoring formula is edition 1's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import NamedTuple


class Teams(NamedTuple):
    """Each seat's team number, and the team ids (``None``: every player a team of one).

    Teams are numbered in the order of their earliest-seated member, the order in which
    verdicts list them.
    """

    of_seat: tuple[int, ...]
    ids: tuple[str, ...] | None

    @property
    def size(self) -> int:
        """Returns how many teams there are."""
        return len(self.of_seat) if self.ids is None else len(self.ids)

    def members(self, team: int) -> tuple[int, ...]:
        """Returns the seats of a team, in the order of play."""
        return tuple(seat for seat, t in enumerate(self.of_seat) if t == team)

    def totals(self, per_seat: Sequence[int]) -> tuple[int, ...]:
        """Returns each team's sum of its members' values (a team's pip count T)."""
        totals = [0] * self.size
        for seat, value in enumerate(per_seat):
            totals[self.of_seat[seat]] += value
        return tuple(totals)

    def by_seat(self, per_team: Sequence[int]) -> tuple[int, ...]:
        """Returns each seat's team figure."""
        return tuple(per_team[t] for t in self.of_seat)


@cache
def solo(players: int) -> Teams:
    """Returns the teams of a game without partnerships: every player alone.

    One shared value per table size (a game holds its teams for as long as it is open).
    """
    return Teams(tuple(range(players)), None)


def seat_teams(players: Sequence[str], teams: Mapping[str, Sequence[str]] | None) -> Teams:
    """Returns the teams of a game; ``teams`` maps team ids to players (already valid)."""
    if teams is None:
        return solo(len(players))
    team_of_player = {p: team for team, members in teams.items() for p in members}
    ids: list[str] = []
    for p in players:
        if team_of_player[p] not in ids:
            ids.append(team_of_player[p])
    number = {team: i for i, team in enumerate(ids)}
    return Teams(tuple(number[team_of_player[p]] for p in players), tuple(ids))
