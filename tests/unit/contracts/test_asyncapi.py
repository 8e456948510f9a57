"""The committed AsyncAPI document is the one the app generates, and it is coherent."""

from __future__ import annotations

from pathlib import Path

from referee.service.asyncapi import asyncapi_document, render_asyncapi

COMMITTED = Path(__file__).resolve().parents[3] / "schemas" / "asyncapi.json"


def test_the_committed_asyncapi_document_is_not_stale() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == render_asyncapi(), (
        "schemas/asyncapi.json is stale: run `uv run referee schemas`"
    )


def test_it_describes_the_three_topics_with_their_messages() -> None:
    doc = asyncapi_document()
    assert doc["asyncapi"] == "3.0.0"
    channels = {c["address"]: set(c["messages"]) for c in doc["channels"].values()}
    assert channels == {
        "domino.game-events": {"GameStarted", "RoundStarted", "TilePlayed", "TileDrawn", "Passed"},
        "domino.referee-verdicts": {
            "FoulRecorded",
            "PointsScored",
            "BlockDeclared",
            "RoundScored",
            "GameWon",
        },
        "domino.game-events.dlq": {"EventRejected"},
    }
    actions = sorted(op["action"] for op in doc["operations"].values())
    assert actions == ["receive", "send", "send"]


def test_every_reference_in_the_document_resolves() -> None:
    doc = asyncapi_document()

    def resolve(ref: str) -> object:
        node: object = doc
        for part in ref.removeprefix("#/").split("/"):
            assert isinstance(node, dict), ref
            node = node[part]
        return node

    def walk(node: object) -> int:
        count = 0
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "$ref":
                    resolve(value)
                    count += 1
                else:
                    count += walk(value)
        elif isinstance(node, list):
            count += sum(walk(v) for v in node)
        return count

    assert walk(doc) > 20
