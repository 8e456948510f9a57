"""Which options, teams and players can make one game (RULES.md sections 5.3, 6, 8.2, 9).

A ``GameStarted`` that breaks one of these limits is invalid input (``schema_violation``).
The limits apply to the options in effect: in trains the scoring is ``penalty`` unless
``scoring: award`` is given. An option given at its default value is always allowed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from referee.domain.rules import (
    BlockConfirmation,
    BlockWinner,
    DoubleRule,
    EngineOrder,
    Layout,
    PlayScoring,
    PointsPolicy,
    Rounding,
    Rules,
    Scoring,
    SpinnerArms,
    TiePolicy,
    default_scoring,
)
from referee.domain.trains import MEXICAN


class Problem(NamedTuple):
    """Why a game cannot start: where (a JSON path into ``GameStarted``) and what."""

    path: str
    detail: str


def game_problem(
    players: Sequence[str], rules: Rules, teams: Mapping[str, Sequence[str]] | None
) -> Problem | None:
    """Returns the first reason these players, rules and teams cannot make a game, if any."""
    return (
        _layout_problem(rules)
        or _penalty_problem(rules, teams)
        or (teams_problem(players, teams) if teams is not None else None)
        or _players_problem(players, rules)
    )


_LAYOUT_ONLY: tuple[tuple[str, object, tuple[Layout, ...]], ...] = (
    ("spinner_arms", SpinnerArms.AFTER_SIDES, (Layout.SPINNER,)),
    ("mexican_train", True, (Layout.TRAINS,)),
    ("double_rule", DoubleRule.SATISFY, (Layout.TRAINS,)),
    ("engine_order", EngineOrder.FREE, (Layout.TRAINS,)),
    ("play_scoring", PlayScoring.NONE, (Layout.LINE, Layout.SPINNER)),
)
"""Options that only some layouts use: (option, its default, the layouts that use it)."""


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _layout_problem(rules: Rules) -> Problem | None:
    layout = rules.layout
    for option, default, used_by in _LAYOUT_ONLY:
        value = getattr(rules, option)
        if value != default and layout not in used_by:
            where = " or ".join(used_by)
            return Problem(
                f"$.rules.{option}",
                f"{option} is {_show(value)}, but it applies only to layout {where} "
                f"and this game's layout is {layout}",
            )
    if layout is Layout.TRAINS and rules.block_confirmation is BlockConfirmation.IMMEDIATE:
        return Problem(
            "$.rules.block_confirmation",
            "block_confirmation immediate is not allowed with layout trains "
            "(a pass opens a train and so changes who can play)",
        )
    return None


_AWARD_ONLY: tuple[tuple[str, object], ...] = (
    ("play_scoring", PlayScoring.NONE),
    ("block_points", PointsPolicy.OTHERS),
    ("domino_points", PointsPolicy.OTHERS),
    ("block_winner", BlockWinner.LOWEST_TEAM),
    ("tie", TiePolicy.NO_WINNER),
    ("rounding", Rounding.NONE),
)
"""Options that penalty scoring cannot combine with, and their defaults (section 5.3)."""


def _penalty_problem(rules: Rules, teams: Mapping[str, Sequence[str]] | None) -> Problem | None:
    if rules.scoring is not Scoring.PENALTY:
        return None
    why = "scoring is penalty"
    if default_scoring(rules.layout) is Scoring.PENALTY:
        why += f" (the default of layout {rules.layout}; give scoring: award to change it)"
    if teams is not None:
        return Problem("$.teams", f"teams cannot be combined with penalty scoring: {why}")
    for option, default in _AWARD_ONLY:
        value = getattr(rules, option)
        if value != default:
            return Problem(
                f"$.rules.{option}",
                f"{option} is {value}, but {why}, which allows only {option} {default}",
            )
    return None


def teams_problem(players: Sequence[str], teams: Mapping[str, Sequence[str]]) -> Problem | None:
    """Returns why ``teams`` are no valid partnership of ``players`` (section 9), if they are
    not: at least 2 teams of one size, every player in exactly one, partners alternating."""
    if len(teams) < 2:
        return Problem("$.teams", f"there must be at least 2 teams, got {len(teams)}")
    team_of: dict[str, str] = {}
    for team, members in teams.items():
        if not members:
            return Problem(f"$.teams[{team!r}]", f"team {team!r} has no players")
        for p in members:
            if p not in players:
                return Problem(
                    f"$.teams[{team!r}]", f"{p!r} of team {team!r} is not a player of this game"
                )
            if p in team_of:
                return Problem(
                    f"$.teams[{team!r}]",
                    f"player {p!r} is listed twice (teams {team_of[p]!r} and {team!r})",
                )
            team_of[p] = team
    missing = [p for p in players if p not in team_of]
    if missing:
        return Problem("$.teams", f"players {missing} are in no team; every player must be")
    sizes = {len(members) for members in teams.values()}
    if len(sizes) > 1:
        return Problem("$.teams", f"teams must all be of the same size, got sizes {sorted(sizes)}")
    count = len(teams)
    for i, p in enumerate(players):
        partner = players[(i + count) % len(players)]
        if team_of[partner] != team_of[p]:
            return Problem(
                "$.teams",
                f"partners must alternate around the table: with {count} teams, {p!r} (seat "
                f"{i}) and {partner!r} (seat {(i + count) % len(players)}) must be partners",
            )
    return None


def _players_problem(players: Sequence[str], rules: Rules) -> Problem | None:
    if rules.layout is Layout.TRAINS and rules.mexican_train and MEXICAN in players:
        return Problem(
            "$.players",
            f"a player may not be called {MEXICAN!r} in a game with the Mexican train "
            "(it is the public train's id)",
        )
    return None
