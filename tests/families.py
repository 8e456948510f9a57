"""The families of the rulebook, as the property tests simulate them (``referee simulate``).

Each family is the ``SimulationOptions`` that make its games (the options ``referee simulate``
forces: ``--layout``, ``--teams``, ``--play-scoring``, ``--scoring``) and a test of a game's
``GameStarted`` that says whether the game belongs to it: ``simulate`` has no option that forces
``draw``, so the block game (``draw: none``) and the draw game are told apart among the games
of a line, and a game is kept only if it is of its family. The property tests of
``referee explain`` run over every family here and guard that each was covered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from referee.contracts.parse import parse_event
from referee.contracts.wire import InputEvent
from referee.domain.events import GameStarted
from referee.domain.rules import DrawRule, Layout, PlayScoring, Scoring
from referee.simulate import SimulationOptions, simulate


@dataclass(frozen=True)
class Family:
    """A family of games: how ``simulate`` makes them, and which of its games belong."""

    options: SimulationOptions
    member: Callable[[GameStarted], bool]
    scores_in_play: bool = False
    """Whether its plays score (``PointsScored``): RULES.md section 10."""


def _line(game: GameStarted) -> bool:
    return game.rules.layout is Layout.LINE


FAMILIES: dict[str, Family] = {
    # the blocked game of the source article: no drawing, the undealt tiles sleep
    "block": Family(
        SimulationOptions(layout="line"),
        lambda g: _line(g) and g.rules.draw is DrawRule.NONE,
    ),
    # a line with a boneyard to draw from (until_playable or once)
    "draw": Family(
        SimulationOptions(layout="line"),
        lambda g: _line(g) and g.rules.draw is not DrawRule.NONE,
    ),
    # All Fives: a spinner whose count scores its multiples of five
    "all_fives": Family(
        SimulationOptions(layout="spinner", play_scoring="fives"),
        lambda g: g.rules.layout is Layout.SPINNER and g.rules.play_scoring is PlayScoring.FIVES,
        scores_in_play=True,
    ),
    # Mexican Train: trains from an engine, personal trains open and closed, pending doubles
    "mexican_train": Family(
        SimulationOptions(layout="trains"),
        lambda g: g.rules.layout is Layout.TRAINS,
    ),
    # partnerships: teams that score together
    "partnership": Family(SimulationOptions(teams=True), lambda g: g.teams is not None),
    # penalty scoring: each player adds their pips, low is good
    "penalty": Family(
        SimulationOptions(scoring="penalty"), lambda g: g.rules.scoring is Scoring.PENALTY
    ),
    # a count that is a multiple of three scores itself
    "threes": Family(
        SimulationOptions(play_scoring="threes"),
        lambda g: g.rules.play_scoring is PlayScoring.THREES,
        scores_in_play=True,
    ),
    # a count scores a point for each five and each three it holds
    "fives_and_threes": Family(
        SimulationOptions(play_scoring="fives_and_threes"),
        lambda g: g.rules.play_scoring is PlayScoring.FIVES_AND_THREES,
        scores_in_play=True,
    ),
    # every family at once, as `referee simulate --rules random` draws them
    "mixed": Family(SimulationOptions(rules="random"), lambda g: True),
}
"""Every family the property tests of ``referee explain`` cover, by name."""


def game_started(line: bytes) -> GameStarted | None:
    """Returns the ``GameStarted`` a log line holds, if it holds one."""
    wire = parse_event(line)
    if not isinstance(wire, InputEvent):
        return None
    event = wire.to_domain()
    return event if isinstance(event, GameStarted) else None


def family_log(name: str, **options: Any) -> Iterator[tuple[str, bytes]]:
    """Yields (game id, line) of a simulated log of the family, only its games' lines;
    ``options`` replace those of ``SimulationOptions`` (``games``, ``seed``, ...)."""
    family = FAMILIES[name]
    members: set[str] = set()
    seen: set[str] = set()
    for game_id, line in simulate(dataclasses.replace(family.options, **options)):
        if game_id not in seen:
            seen.add(game_id)
            started = game_started(line)
            if started is not None and family.member(started):
                members.add(game_id)
        if game_id in members:
            yield game_id, line


def family_games(name: str, count: int, **options: Any) -> dict[str, list[bytes]]:
    """Returns the lines of the first ``count`` games of the family that ``simulate`` plays
    one at a time, by game id (``options`` as for ``family_log``)."""
    games: dict[str, list[bytes]] = {}
    for game_id, line in family_log(name, concurrency=1, **options):
        if game_id not in games and len(games) == count:
            break
        games.setdefault(game_id, []).append(line)
    return games
