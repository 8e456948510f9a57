"""The committed AsyncAPI document is the one the app generates, valid AsyncAPI 3.0.0, and
it says what a producer or consumer needs: payload, key and headers of every message."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from referee.contracts.wire import GAME_ID_PATTERN
from referee.service.asyncapi import asyncapi_document, render_asyncapi
from referee.service.tails import POSITION_HEADER

HERE = Path(__file__).resolve().parent
COMMITTED = HERE.parents[2] / "schemas" / "asyncapi.json"
SPEC = json.loads((HERE / "asyncapi_specs" / "3.0.0.json").read_text(encoding="utf-8"))

INPUT = {"GameStarted", "RoundStarted", "TilePlayed", "TileDrawn", "Passed"}
VERDICTS = {"FoulRecorded", "PointsScored", "BlockDeclared", "RoundScored", "GameWon"}


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return asyncapi_document()


def resolve(doc: dict[str, Any], ref: str) -> Any:
    node: Any = doc
    for part in ref.removeprefix("#/").split("/"):
        assert isinstance(node, dict), ref
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def asyncapi_errors(doc: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(SPEC)
    return [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(doc)]


def test_the_committed_asyncapi_document_is_not_stale() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == render_asyncapi(), (
        "schemas/asyncapi.json is stale: run `uv run referee schemas`"
    )


def test_the_document_is_valid_against_the_asyncapi_3_0_0_json_schema() -> None:
    committed = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert committed["asyncapi"] == "3.0.0"
    assert asyncapi_errors(committed) == []


def test_the_asyncapi_schema_catches_what_a_generator_could_get_wrong(
    doc: dict[str, Any],
) -> None:
    misspelt = copy.deepcopy(doc)
    binding = misspelt["components"]["messages"]["GameWon"]["bindings"]["kafka"]
    binding["keys"] = binding.pop("key")
    assert asyncapi_errors(misspelt)
    version_2 = copy.deepcopy(doc)
    next(iter(version_2["operations"].values()))["action"] = "publish"
    assert asyncapi_errors(version_2)
    openapi_style = copy.deepcopy(doc)
    source = openapi_style["components"]["schemas"]["EventRejected"]["properties"]["source"]
    source["discriminator"] = {"propertyName": "kind"}
    assert asyncapi_errors(openapi_style)


def test_it_describes_the_three_topics_with_their_messages(doc: dict[str, Any]) -> None:
    channels = {c["address"]: set(c["messages"]) for c in doc["channels"].values()}
    assert channels == {
        "domino.game-events": INPUT,
        "domino.referee-verdicts": VERDICTS,
        "domino.game-events.dlq": {"EventRejected"},
    }
    actions = sorted(op["action"] for op in doc["operations"].values())
    assert actions == ["receive", "send", "send"]


def messages_of(doc: dict[str, Any], address: str) -> dict[str, dict[str, Any]]:
    (channel,) = (c for c in doc["channels"].values() if c["address"] == address)
    return {name: resolve(doc, ref["$ref"]) for name, ref in channel["messages"].items()}


@pytest.mark.parametrize(
    "address", ["domino.game-events", "domino.referee-verdicts", "domino.game-events.dlq"]
)
def test_every_message_declares_its_payload_key_headers_and_content_type(
    doc: dict[str, Any], address: str
) -> None:
    for name, message in messages_of(doc, address).items():
        assert message["contentType"] == "application/json"
        payload = resolve(doc, message["payload"]["$ref"])
        assert payload["title"] == name
        key = resolve(doc, message["bindings"]["kafka"]["key"]["$ref"])
        assert key["description"]
        headers = resolve(doc, message["headers"]["$ref"])
        assert headers["type"] == "object"
        assert headers["description"]


@pytest.mark.parametrize("address", ["domino.referee-verdicts", "domino.game-events.dlq"])
def test_every_output_record_carries_the_outbox_position_header(
    doc: dict[str, Any], address: str
) -> None:
    for message in messages_of(doc, address).values():
        headers = resolve(doc, message["headers"]["$ref"])
        assert headers["required"] == [POSITION_HEADER]
        position = headers["properties"][POSITION_HEADER]
        validator = jsonschema.Draft7Validator(position)
        assert validator.is_valid("1041")
        assert not validator.is_valid("12a")
        assert not validator.is_valid("")


def test_the_keys_are_the_game_id_and_for_a_dead_letter_the_input_key(
    doc: dict[str, Any],
) -> None:
    for address in ("domino.game-events", "domino.referee-verdicts"):
        for message in messages_of(doc, address).values():
            key = resolve(doc, message["bindings"]["kafka"]["key"]["$ref"])
            assert key["type"] == "string"
            assert key["pattern"] == GAME_ID_PATTERN
            assert not jsonschema.Draft7Validator(key).is_valid(None)
    (dead,) = messages_of(doc, "domino.game-events.dlq").values()
    key = jsonschema.Draft7Validator(resolve(doc, dead["bindings"]["kafka"]["key"]["$ref"]))
    assert key.is_valid("table-42")
    assert key.is_valid(None)  # a record without key whose game id could not be read


def test_the_consumer_requirements_are_stated_where_consumers_look(doc: dict[str, Any]) -> None:
    by_address = {c["address"]: c for c in doc["channels"].values()}
    for address in ("domino.referee-verdicts", "domino.game-events.dlq"):
        (operation,) = (
            op
            for op in doc["operations"].values()
            if resolve(doc, op["channel"]["$ref"]) is by_address[address]
        )
        assert operation["action"] == "send"
        assert "isolation.level=read_committed" in operation["description"]
        policy = by_address[address]["bindings"]["kafka"]["topicConfiguration"]
        assert policy["cleanup.policy"] == ["delete"]
    verdicts = by_address["domino.referee-verdicts"]["description"]
    assert "the partition number of the input partition" in verdicts
    assert "as many partitions as domino.game-events" in verdicts
    dead = by_address["domino.game-events.dlq"]["description"]
    assert "as many partitions as the input topic" in dead
    (receive,) = (op for op in doc["operations"].values() if op["action"] == "receive")
    assert receive["bindings"]["kafka"]["groupId"] == {"type": "string", "enum": ["referee"]}


def test_every_payload_example_validates_against_the_documents_own_schema(
    doc: dict[str, Any],
) -> None:
    schemas = doc["components"]["schemas"]
    count = 0
    for name in (*INPUT, *VERDICTS, "EventRejected"):
        validator = jsonschema.Draft7Validator(
            {"$ref": f"#/components/schemas/{name}", "components": {"schemas": schemas}}
        )
        for example in schemas[name]["examples"]:
            validator.validate(example)
            count += 1
        bad = dict(schemas[name]["examples"][0], schema_version=2)
        assert not validator.is_valid(bad)
    assert count > 30
    tile = {"$ref": "#/components/schemas/TilePlayed", "components": {"schemas": schemas}}
    played = dict(schemas["TilePlayed"]["examples"][0], tile=[5, 3, 1])
    assert not jsonschema.Draft7Validator(tile).is_valid(played)  # items became draft 07's


def test_every_reference_in_the_document_resolves(doc: dict[str, Any]) -> None:
    def walk(node: object) -> int:
        count = 0
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "$ref":
                    resolve(doc, value)
                    count += 1
                else:
                    count += walk(value)
        elif isinstance(node, list):
            count += sum(walk(v) for v in node)
        return count

    assert walk(doc) > 20
