"""Wire events written compactly, and a referee fed with them, for the edge tests."""

from __future__ import annotations

import json
from typing import Any

from referee.contracts.rejection import FileSource
from referee.processing.outcome import Processed
from referee.processing.referee import Referee

GAME = "table-42"
AT = "2026-11-30T12:00:00Z"
SOURCE = FileSource("edge.jsonl", 1)


def event(
    kind: str, seq: int, game_id: str = GAME, event_id: str | None = None, **fields: Any
) -> dict[str, Any]:
    """Returns one input event as a dict, every envelope field filled in."""
    return {
        "event_id": event_id if event_id is not None else f"{game_id}-e{seq:04d}",
        "type": kind,
        "game_id": game_id,
        "seq": seq,
        "occurred_at": AT,
        "schema_version": 1,
        **fields,
    }


def raw(data: dict[str, Any]) -> bytes:
    """Returns the event as wire bytes."""
    return json.dumps(data, separators=(",", ":")).encode()


def started(
    seq: int = 1, game_id: str = GAME, event_id: str | None = None, **rules: Any
) -> dict[str, Any]:
    """A two-player game of ann and bob."""
    return event("GameStarted", seq, game_id, event_id, players=["ann", "bob"], rules=rules)


def dealt(
    seq: int = 2,
    game_id: str = GAME,
    round_number: int = 1,
    hands: dict[str, list[list[int]]] | None = None,
    boneyard: list[list[int]] | None = None,
    leader: str = "ann",
) -> dict[str, Any]:
    """A deal: by default ann holds 6-6 1-2, bob 5-6 0-0, and 3-4 is in the boneyard."""
    return event(
        "RoundStarted",
        seq,
        game_id,
        round=round_number,
        hands=hands if hands is not None else {"ann": [[6, 6], [1, 2]], "bob": [[6, 5], [0, 0]]},
        boneyard=boneyard if boneyard is not None else [[3, 4]],
        leader=leader,
    )


def played(
    seq: int,
    player: str,
    tile: list[int],
    end: str | None = None,
    round_number: int = 1,
    **extra: Any,
) -> dict[str, Any]:
    """A tile played (no end for the first tile of a round)."""
    fields: dict[str, Any] = {"round": round_number, "player": player, "tile": tile}
    if end is not None:
        fields["end"] = end
    return event("TilePlayed", seq, **fields, **extra)


def passed(seq: int, player: str, round_number: int = 1, **extra: Any) -> dict[str, Any]:
    """A pass."""
    return event("Passed", seq, round=round_number, player=player, **extra)


def drawn(seq: int, player: str, tile: list[int], round_number: int = 1) -> dict[str, Any]:
    """A draw from the boneyard."""
    return event("TileDrawn", seq, round=round_number, player=player, tile=tile)


class FedReferee:
    """A referee, and the events fed to it so far."""

    def __init__(self, max_event_bytes: int | None = None) -> None:
        self.referee = Referee() if max_event_bytes is None else Referee(max_event_bytes)

    def feed(self, *events: dict[str, Any] | bytes) -> list[Processed]:
        """Processes each event in order and returns the results."""
        return [self.referee.process(e if isinstance(e, bytes) else raw(e), SOURCE) for e in events]

    def one(self, data: dict[str, Any] | bytes) -> Processed:
        """Processes one event and returns its result."""
        return self.feed(data)[0]


def in_round(**rules: Any) -> FedReferee:
    """Given a game of ann and bob with the default deal of round 1 (seq 1 and 2 taken)."""
    table = FedReferee()
    results = table.feed(started(**rules), dealt())
    assert [r.outcome.value for r in results] == ["applied", "applied"]
    return table


def after_domino(**rules: Any) -> FedReferee:
    """Given round 1 already won by ann's domino at seq 3 (ann was dealt a single 6-6)."""
    table = FedReferee()
    results = table.feed(
        started(**rules),
        dealt(hands={"ann": [[6, 6]], "bob": [[6, 5], [0, 0]]}),
        played(3, "ann", [6, 6]),
    )
    assert [r.outcome.value for r in results] == ["applied", "applied", "applied"]
    assert [type(v).__name__ for v in results[2].verdicts] == ["RoundScoredWire"]
    return table
