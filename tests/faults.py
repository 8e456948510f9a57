"""The tests' own faults: a judge that fails on one chosen record, and a store that refuses one.

Nothing here is a switch of the referee: the tests put these in place themselves (with
``monkeypatch`` in the process, or by running ``python -m tests.faults serve`` for a live
referee), so production code has no way to fail on purpose.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

import referee.processing.referee as referee_module
from referee.domain.events import End, GameEvent, TilePlayed
from referee.domain.judge import Judgement, judge

FAULT_ENV = "REFEREE_TEST_FAULTY_PLAY"
"""A JSON list ``[round, player, [a, b], end]``: the play on which the faulty judge fails."""


class InjectedFaultError(RuntimeError):
    """The failure the faulty judge raises (a stand-in for a defect of the referee)."""


def faulty_judge(chosen: TilePlayed) -> Callable[[Any, GameEvent], Judgement]:
    """Returns a judge that fails on the ``chosen`` play, and judges every other event."""

    def judging(game: Any, event: GameEvent) -> Judgement:
        if type(event) is TilePlayed and event == chosen:
            raise InjectedFaultError(f"injected fault on {chosen}")
        return judge(game, event)

    return judging


def play_of(line: bytes) -> TilePlayed:
    """Returns the domain event of a ``TilePlayed`` line (the fault's target)."""
    event = json.loads(line)
    a, b = event["tile"]
    return TilePlayed(event["round"], event["player"], (a, b), _end(event.get("end")))


def install(chosen: TilePlayed) -> None:
    """Puts the faulty judge in the referee of this process."""
    referee_module.judge = faulty_judge(chosen)  # type: ignore[assignment]


def _end(value: str | None) -> End | None:
    return None if value is None else End(value)


def main() -> int:
    """``python -m tests.faults serve``: ``referee serve`` with the faulty judge in place."""
    spec = json.loads(os.environ[FAULT_ENV])
    round_no, player, (a, b), end = spec
    install(TilePlayed(round_no, player, (a, b), _end(end)))
    from referee.cli.main import main as referee_main

    return referee_main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
