"""The tests' own faults: a judge that fails on one chosen record, and a store that refuses one.

Nothing here is a switch of the referee: the tests put these in place themselves (with
``monkeypatch`` in the process, or by running ``python -m tests.faults serve`` for a live
referee), so production code has no way to fail on purpose.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import Any

from referee.domain import revisions
from referee.domain.events import End, GameEvent, TilePlayed
from referee.domain.judge import Judgement, judge
from referee.domain.revisions import RulesRevision

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


def with_judge_1(judging: Callable[[Any, GameEvent], Judgement]) -> Any:
    """The revisions of ``referee.domain.revisions`` with ``judging`` as revision 1's judge
    (what a test puts in place of ``revisions.REVISIONS``: every game that starts, or is
    loaded from the store, after that is judged by it)."""
    one = revisions.REVISIONS[1]
    return MappingProxyType({**revisions.REVISIONS, 1: RulesRevision(1, judging, one.summary)})


def play_of(line: bytes) -> TilePlayed:
    """Returns the domain event of a ``TilePlayed`` line (the fault's target)."""
    event = json.loads(line)
    a, b = event["tile"]
    return TilePlayed(event["round"], event["player"], (a, b), _end(event.get("end")))


def chosen_play(log: Path) -> tuple[int, bytes]:
    """Returns (line number, line) of a play in the middle of a game that goes on after it."""
    events: list[tuple[int, bytes, dict[str, Any]]] = []
    for number, line in enumerate(log.read_bytes().splitlines(), start=1):
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a bad line of the simulation
        if isinstance(event, dict) and isinstance(event.get("game_id"), str):
            events.append((number, line, event))
    last = {event["game_id"]: number for number, _, event in events}
    sent = Counter(line for _, line, _ in events)  # a re-sent copy would be judged again
    third = events[len(events) // 3][0]
    for number, line, event in events:
        if (
            number > third
            and event.get("type") == "TilePlayed"
            and event.get("end")
            and last[event["game_id"]] > number + 5
            and event.get("event_id", "").startswith("ev-")
            and sent[line] == 1
        ):
            return number, line
    raise AssertionError("no play to fail on")


def fault_env(line: bytes) -> dict[str, str]:
    """The environment that makes ``python -m tests.faults serve`` fail on this play."""
    play = play_of(line)
    end = None if play.end is None else play.end.value
    return {FAULT_ENV: json.dumps([play.round, play.player, list(play.tile), end])}


def install(chosen: TilePlayed) -> None:
    """Puts the faulty judge in the referee of this process."""
    revisions.REVISIONS = with_judge_1(faulty_judge(chosen))


def _end(value: str | None) -> End | None:
    return None if value is None else End(value)


def main() -> int:
    """``python -m tests.faults serve``: ``referee serve`` with the faulty judge in place."""
    spec = json.loads(os.environ[FAULT_ENV])
    round_number, player, (a, b), end = spec
    install(TilePlayed(round_number, player, (a, b), _end(end)))
    from referee.cli.main import main as referee_main

    return referee_main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
