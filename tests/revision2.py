"""A rules revision 2 of the tests' own: what a release with a new rulebook would add.

Revision 2 judges every event as revision 1 does, except that each foul costs one point more
than the game's rules say (a foul the rules set no penalty for costs 1): a ``FoulRecorded``
carries the higher ``penalty``, and the cumulative scores of every later verdict show it. The
game's stored state keeps the rules it started with (the bump is applied as each event is
judged), so a game of revision 2 loaded from the store and judged by revision 1's judge gives
revision 1's verdicts from there on: a lost pin shows in the verdicts' bytes.

Nothing here is a switch of the referee: the tests put it in place themselves, with
``monkeypatch`` in the process (``with_revision_2``), or by running ``python -m tests.revision2
CMD ...`` for a referee process (``referee CMD ...`` with revision 2 known and the newest, so
the default for new games, as a release that shipped it would have).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from referee.domain import revisions
from referee.domain.events import GameEvent
from referee.domain.fouls import FoulKind
from referee.domain.judge import Judgement, judge
from referee.domain.revisions import RulesRevision
from referee.domain.rules import Rules
from referee.domain.state import GameState

SUMMARY = "the tests' revision 2: revision 1, with every foul costing one point more"


def bumped(rules: Rules) -> Rules:
    """The rules with every foul's penalty one point higher."""
    return replace(
        rules, foul_penalty=MappingProxyType({k: rules.penalty(k) + 1 for k in FoulKind})
    )


def judge_2(game: GameState | None, event: GameEvent) -> Judgement:
    """Revision 2's judge: revision 1's, each foul costing one point more."""
    if game is None:
        return judge(game, event)  # a GameStarted: no foul, and the state keeps its rules
    rules = game.rules
    after, verdicts = judge(game._replace(rules=bumped(rules)), event)
    return after._replace(rules=rules), verdicts


REVISION_2 = RulesRevision(2, judge_2, SUMMARY)


def with_revision_2() -> Mapping[int, RulesRevision]:
    """The revisions of ``referee.domain.revisions`` with revision 2 added (what a test puts
    in place of ``revisions.REVISIONS``; ``NEWEST`` stays, so it is no game's default)."""
    return MappingProxyType({**revisions.REVISIONS, 2: REVISION_2})


_IMPORTED_BY_NAME = ("referee.processing", "referee.service", "referee.cli")
"""The packages whose modules import ``NEWEST`` by name (their defaults are bound when they
are imported): revision 2 must be the newest before any of them is imported."""


def install() -> None:
    """Makes revision 2 known to this process's referee, and the newest."""
    early = sorted(m for m in sys.modules if m.startswith(_IMPORTED_BY_NAME))
    assert not early, f"imported before revision 2 was installed: {early}"
    revisions.REVISIONS = with_revision_2()
    revisions.NEWEST = 2


def main() -> int:
    """``python -m tests.revision2 CMD ...``: ``referee CMD ...`` with revision 2 the newest."""
    install()
    from referee.cli.main import main as referee_main

    return referee_main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
