"""Rules revisions: a number for the judge's behaviour (docs/rules.md, "Rules revisions").

A rules revision names one judge: the function that folds a game's events into its state and
verdicts. Every game is judged, from its ``GameStarted`` to its end, under one revision, so
the same log always gives the same verdicts. A change that alters any verdict or rejection
for any input is a new revision, added here; the old ones stay, for the games pinned to them
(as edition 2 kept edition 1's bytes). ``tests/corpus`` holds the hashes of each revision's
verdicts on a frozen corpus, and fails when a revision's bytes change.

Pure: no clock, no environment, no database. Which revision a new game gets is the
deployment's choice (``REFEREE_RULES_REVISION``); where a game's revision is recorded is the
store's (``game_revisions``, migration 0009).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from referee.domain.events import GameEvent
from referee.domain.judge import Judgement, judge
from referee.domain.state import GameState

Judge = Callable[[GameState | None, GameEvent], Judgement]
"""One step of a game's fold: ``judge(state, event) -> (state, verdicts)``."""


@dataclass(frozen=True, slots=True)
class RulesRevision:
    """A numbered judge, and what it judges."""

    number: int
    judge: Judge
    summary: str


class UnknownRevisionError(ValueError):
    """A rules revision this referee does not have (a newer release's, or a typo)."""

    def __init__(self, number: int) -> None:
        known = ", ".join(str(n) for n in sorted(REVISIONS))
        super().__init__(
            f"rules revision {number} is not known to this referee (it judges revisions "
            f"{known}); a game pinned to a newer revision needs the release that has it"
        )
        self.number = number


REVISIONS: Mapping[int, RulesRevision] = MappingProxyType(
    {
        1: RulesRevision(
            1,
            judge,
            "the rulebook's edition 2 (RULES.md) with edition 1's games byte for byte, as "
            "judged by release 0.1.0",
        ),
    }
)
"""Every revision this referee can judge under, by number."""

NEWEST: int = max(REVISIONS)
"""The newest revision: what a new game gets unless the deployment asks for another."""


def revision(number: int) -> RulesRevision:
    """Returns revision ``number``; raises ``UnknownRevisionError`` if this referee lacks it."""
    found = REVISIONS.get(number)
    if found is None:
        raise UnknownRevisionError(number)
    return found


def judge_of(number: int) -> Judge:
    """Returns the judge of revision ``number`` (``UnknownRevisionError`` if there is none)."""
    return revision(number).judge
