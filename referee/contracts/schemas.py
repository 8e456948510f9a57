"""JSON Schemas (draft 2020-12) of every input event, verdict and ``EventRejected``.

They are generated from the msgspec models the referee validates with, so the committed files
in ``schemas/`` cannot drift from the code: a test regenerates them and compares.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from referee.contracts.rejection import EventRejected
from referee.contracts.verdicts import VERDICTS
from referee.contracts.wire import INPUT_EVENTS

DRAFT = "https://json-schema.org/draft/2020-12/schema"
BASE_ID = "https://referee.dominoes.example/schemas/"

_ENVELOPE = {
    "game_id": "table-42",
    "occurred_at": "2026-11-30T12:00:07Z",
    "schema_version": 1,
}
_VERDICT = {
    **_ENVELOPE,
    "round": 1,
    "cause_event_id": "e-0007",
    "cause_seq": 7,
}

_TRAINS_HANDS = {"ann": [[12, 5], [5, 10]], "bob": [[12, 3], [0, 0]], "cid": [[11, 11]]}

EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "GameStarted": [
        {
            **_ENVELOPE,
            "event_id": "e-0001",
            "type": "GameStarted",
            "seq": 1,
            "players": ["ann", "bob", "cid"],
            "rules": {"max_pip": 12, "draw": "none", "tie": "split"},
        },
        {
            **_ENVELOPE,
            "event_id": "e-0001",
            "type": "GameStarted",
            "seq": 1,
            "players": ["ann", "bob", "cid"],
            "rules": {"max_pip": 12, "layout": "trains", "rounds": 13},
        },
        {
            **_ENVELOPE,
            "event_id": "e-0001",
            "type": "GameStarted",
            "seq": 1,
            "players": ["ann", "bob", "cid", "dee"],
            "rules": {"layout": "spinner", "play_scoring": "fives", "target_score": 150},
            "teams": {"north": ["ann", "cid"], "east": ["bob", "dee"]},
        },
    ],
    "RoundStarted": [
        {
            **_ENVELOPE,
            "event_id": "e-0002",
            "type": "RoundStarted",
            "seq": 2,
            "round": 1,
            "hands": {"ann": [[5, 10], [3, 4]], "bob": [[12, 12], [4, 9]], "cid": [[0, 1]]},
            "boneyard": [],
            "leader": "ann",
        },
        {
            **_ENVELOPE,
            "event_id": "e-0002",
            "type": "RoundStarted",
            "seq": 2,
            "round": 1,
            "hands": _TRAINS_HANDS,
            "boneyard": [[2, 7]],
            "leader": "bob",
            "engine": [12, 12],
        },
    ],
    "TilePlayed": [
        {
            **_ENVELOPE,
            "event_id": "e-0007",
            "type": "TilePlayed",
            "seq": 7,
            "round": 1,
            "player": "bob",
            "tile": [5, 3],
            "end": "right",
        },
        {
            **_ENVELOPE,
            "event_id": "e-0007",
            "type": "TilePlayed",
            "seq": 7,
            "round": 1,
            "player": "bob",
            "tile": [12, 3],
            "train": "mexican",
        },
    ],
    "TileDrawn": [
        {
            **_ENVELOPE,
            "event_id": "e-0008",
            "type": "TileDrawn",
            "seq": 8,
            "round": 1,
            "player": "cid",
            "tile": [2, 2],
        }
    ],
    "Passed": [
        {
            **_ENVELOPE,
            "event_id": "e-0009",
            "type": "Passed",
            "seq": 9,
            "round": 1,
            "player": "ann",
        }
    ],
    "FoulRecorded": [
        {
            **_VERDICT,
            "verdict_id": "2f0c0d52-5b1e-5d9e-8a51-3c1b6b8c0a11",
            "type": "FoulRecorded",
            "player": "bob",
            "foul": "false_pass",
            "applied": True,
            "penalty": 0,
        }
    ],
    "PointsScored": [
        {
            **_VERDICT,
            "verdict_id": "4c3b2a19-0f8e-5d7c-9b6a-5f4e3d2c1b0a",
            "type": "PointsScored",
            "player": "bob",
            "count": 15,
            "points": 15,
            "cumulative": {"ann": 0, "bob": 15, "cid": 0, "dee": 15},
            "team": "east",
            "team_cumulative": {"north": 0, "east": 15},
        }
    ],
    "BlockDeclared": [
        {
            **_VERDICT,
            "verdict_id": "6a4d1c7e-1f2b-5e3c-9d8a-7b6c5d4e3f21",
            "type": "BlockDeclared",
            "proposer": "cid",
            "confirmed_by": ["cid", "ann", "bob"],
            "open_ends": {"left": 3, "right": 7},
            "pip_counts": {"ann": 15, "bob": 24, "cid": 1},
        },
        {
            **_VERDICT,
            "verdict_id": "6a4d1c7e-1f2b-5e3c-9d8a-7b6c5d4e3f22",
            "type": "BlockDeclared",
            "proposer": "bob",
            "confirmed_by": ["bob", "cid", "ann"],
            "open_ends": {"ann": 12, "bob": 3, "cid": 12, "mexican": 11},
            "pip_counts": {"ann": 15, "bob": 0, "cid": 22},
        },
    ],
    "RoundScored": [
        {
            **_VERDICT,
            "verdict_id": "9b8a7c6d-5e4f-5a3b-8c2d-1e0f9a8b7c61",
            "type": "RoundScored",
            "reason": "blocked",
            "winners": ["cid"],
            "pip_counts": {"ann": 15, "bob": 24, "cid": 1},
            "awards": {"ann": 0, "bob": 0, "cid": 39},
            "cumulative": {"ann": 0, "bob": 0, "cid": 39},
            "tie": False,
        },
        {
            **_VERDICT,
            "verdict_id": "9b8a7c6d-5e4f-5a3b-8c2d-1e0f9a8b7c62",
            "type": "RoundScored",
            "reason": "blocked",
            "winners": ["bob", "dee"],
            "pip_counts": {"ann": 9, "bob": 3, "cid": 6, "dee": 4},
            "awards": {"ann": 0, "bob": 15, "cid": 0, "dee": 15},
            "cumulative": {"ann": 0, "bob": 15, "cid": 0, "dee": 15},
            "tie": False,
            "team_pip_counts": {"north": 15, "east": 7},
            "team_awards": {"north": 0, "east": 15},
            "team_cumulative": {"north": 0, "east": 15},
            "winning_teams": ["east"],
        },
        {
            **_VERDICT,
            "verdict_id": "9b8a7c6d-5e4f-5a3b-8c2d-1e0f9a8b7c63",
            "type": "RoundScored",
            "reason": "blocked",
            "winners": ["bob"],
            "pip_counts": {"ann": 15, "bob": 0, "cid": 22},
            "awards": {"ann": 15, "bob": 0, "cid": 22},
            "cumulative": {"ann": 15, "bob": 0, "cid": 22},
            "tie": False,
            "scoring": "penalty",
        },
    ],
    "GameWon": [
        {
            **_VERDICT,
            "verdict_id": "0d1e2f3a-4b5c-5d6e-9f8a-7b6c5d4e3f01",
            "type": "GameWon",
            "winner": "cid",
            "cumulative": {"ann": 20, "bob": 35, "cid": 105},
        },
        {
            **_VERDICT,
            "verdict_id": "0d1e2f3a-4b5c-5d6e-9f8a-7b6c5d4e3f02",
            "type": "GameWon",
            "winner": "bob",
            "cumulative": {"ann": 95, "bob": 160, "cid": 95, "dee": 160},
            "winners": ["bob", "dee"],
            "winning_teams": ["east"],
            "team_cumulative": {"north": 95, "east": 160},
        },
    ],
    "EventRejected": [
        {
            "type": "EventRejected",
            "reason": "seq_gap",
            "detail": "seq 9 of game 'table-42' skips ahead; the next expected seq is 8",
            "raw": '{"event_id":"e-0009","type":"Passed","game_id":"table-42","seq":9}',
            "raw_encoding": "utf-8",
            "source": {
                "kind": "kafka",
                "topic": "domino.game-events",
                "partition": 3,
                "offset": 1041,
            },
            "game_id": "table-42",
            "seq": 9,
            "event_id": "e-0009",
            "schema_version": 1,
        }
    ],
}


def _public(name: str) -> str:
    return name.removesuffix("Wire")


def _rename_refs(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                out[key] = "#/$defs/" + _public(value.rsplit("/", 1)[1])
            elif key == "title" and isinstance(value, str):
                out[key] = _public(value)
            else:
                out[key] = _rename_refs(value)
        return out
    if isinstance(node, list):
        return [_rename_refs(v) for v in node]
    return node


def schema_for(model: type[msgspec.Struct]) -> dict[str, Any]:
    """Returns the standalone JSON Schema document of one message type."""
    raw = msgspec.json.schema(model)
    defs = {_public(k): _rename_refs(v) for k, v in raw["$defs"].items()}
    name = _public(model.__name__)
    body = defs.pop(name)
    doc: dict[str, Any] = {
        "$schema": DRAFT,
        "$id": f"{BASE_ID}{name}.schema.json",
        **body,
        "examples": EXAMPLES[name],
    }
    if defs:
        doc["$defs"] = defs
    return doc


def all_schemas() -> dict[str, dict[str, Any]]:
    """Returns every schema document by message name."""
    models: list[type[msgspec.Struct]] = [*INPUT_EVENTS, *VERDICTS, EventRejected]
    return {_public(m.__name__): schema_for(m) for m in models}


def render(doc: dict[str, Any]) -> str:
    """Returns a schema document as committed: indented, keys in a stable order."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def write_schemas(directory: Path) -> list[Path]:
    """Writes every schema into ``directory``; returns the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, doc in all_schemas().items():
        path = directory / f"{name}.schema.json"
        path.write_text(render(doc), encoding="utf-8")
        written.append(path)
    return written
