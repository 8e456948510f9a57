"""The edge's checks of a ``GameStarted`` beyond its schema: options that cannot go together,
teams that are no partnership, a player who cannot be called so (RULES.md sections 6 and 9).

The limits themselves are the domain's (``referee.domain.options``); this turns the first one
broken into the detail of a ``schema_violation``.
"""

from __future__ import annotations

from msgspec import UNSET

from referee.contracts.limits import has_control_character
from referee.contracts.wire import GameStartedWire
from referee.domain.options import game_problem


def game_started_problem(event: GameStartedWire) -> str | None:
    """Returns the ``schema_violation`` detail of a game that cannot start, else ``None``."""
    teams = event.teams
    if teams is not UNSET and teams is not None:
        for team in teams:
            if has_control_character(team):
                return f"GameStarted: the team id {team!r} holds a control character - at `$.teams`"
    started = event.to_domain()
    problem = game_problem(started.players, started.rules, started.teams)
    if problem is None:
        return None
    return f"GameStarted: {problem.detail} - at `{problem.path}`"
