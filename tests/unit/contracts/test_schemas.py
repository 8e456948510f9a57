"""The committed JSON Schemas agree with the code's models, and real messages satisfy both."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from referee.contracts.parse import parse_event
from referee.contracts.schemas import all_schemas, render
from referee.contracts.verdicts import decode_verdict
from referee.contracts.wire import WireEvent

ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = ROOT / "schemas"
GOLDEN = ROOT / "tests" / "golden"


def committed(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(
        (SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8")
    )
    return schema


@pytest.mark.parametrize("name", sorted(all_schemas()))
def test_the_committed_schema_is_the_generated_one(name: str) -> None:
    generated = render(all_schemas()[name])
    assert (SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8") == generated, (
        f"schemas/{name}.schema.json is stale: run `uv run referee schemas`"
    )


def test_no_schema_file_is_left_over() -> None:
    files = {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")}
    assert files == set(all_schemas())


@pytest.mark.parametrize("name", sorted(all_schemas()))
def test_each_schema_is_valid_draft_2020_12_and_its_example_validates(name: str) -> None:
    schema = committed(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    examples = schema["examples"]
    assert isinstance(examples, list)
    assert examples
    for example in examples:
        jsonschema.Draft202012Validator(schema).validate(example)


def _golden_lines(suffix: str) -> list[bytes]:
    lines = []
    for path in sorted(GOLDEN.glob(f"*{suffix}")):
        if suffix == ".jsonl" and path.name.endswith(".verdicts.jsonl"):
            continue
        lines += [line for line in path.read_bytes().splitlines() if line.strip()]
    return lines


def test_every_golden_input_line_validates_against_schema_and_model() -> None:
    lines = _golden_lines(".jsonl")
    assert len(lines) > 50
    for line in lines:
        event = json.loads(line)
        jsonschema.Draft202012Validator(committed(event["type"])).validate(event)
        assert isinstance(parse_event(line), WireEvent)


def test_every_golden_verdict_validates_against_schema_and_model() -> None:
    lines = _golden_lines(".verdicts.jsonl")
    assert len(lines) > 10
    for line in lines:
        verdict = json.loads(line)
        jsonschema.Draft202012Validator(committed(verdict["type"])).validate(verdict)
        assert decode_verdict(line).verdict_id == verdict["verdict_id"]


def test_the_schema_rejects_what_the_model_rejects() -> None:
    schema = committed("GameStarted")
    bad = dict(schema["examples"][0])
    bad["rules"] = {"max_pip": 7}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(bad)
    assert not isinstance(parse_event(json.dumps(bad).encode()), WireEvent)


def _objects(node: object, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Returns every object schema in a document (``examples`` left out), with its path."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        if "properties" in node:
            found.append((path, node))
        for key, value in node.items():
            if key != "examples":
                found += _objects(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _objects(value, f"{path}/{i}")
    return found


def undescribed(doc: dict[str, Any]) -> list[str]:
    """Returns the path of every property, and every definition, that has no description."""
    missing = [
        f"{path}/properties/{name}"
        for path, node in _objects(doc)
        for name, prop in node["properties"].items()
        if not str(prop.get("description", "")).strip()
    ]
    missing += [f"/$defs/{k}" for k, v in doc.get("$defs", {}).items() if not v.get("description")]
    if not doc.get("description"):
        missing.append("/")
    return missing


@pytest.mark.parametrize("name", sorted(all_schemas()))
def test_every_property_of_every_schema_has_a_description(name: str) -> None:
    assert undescribed(committed(name)) == []


def test_the_description_check_finds_a_property_without_one() -> None:
    doc = copy.deepcopy(committed("GameStarted"))
    del doc["$defs"]["Rules"]["properties"]["tie"]["description"]
    assert undescribed(doc) == ["/$defs/Rules/properties/tie"]


@pytest.mark.parametrize("name", sorted(all_schemas()))
def test_times_are_date_times_and_verdict_ids_uuids(name: str) -> None:
    props = committed(name)["properties"]
    assert isinstance(props, dict)
    if "occurred_at" in props:
        assert props["occurred_at"]["format"] == "date-time"
    if "verdict_id" in props:
        assert props["verdict_id"]["format"] == "uuid"


def _with_examples(node: object) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if isinstance(node.get("examples"), list):
            found.append(node)
        for key, value in node.items():
            if key != "examples":
                found += _with_examples(value)
    elif isinstance(node, list):
        for value in node:
            found += _with_examples(value)
    return found


@pytest.mark.parametrize("name", sorted(all_schemas()))
def test_every_example_of_every_field_validates_against_that_field(name: str) -> None:
    doc = committed(name)
    nodes = _with_examples({k: v for k, v in doc.items() if k != "examples"})
    for node in nodes:
        schema = {**node, "$schema": doc["$schema"], "$defs": doc.get("$defs", {})}
        for example in node["examples"]:
            jsonschema.Draft202012Validator(schema).validate(example)


def test_the_formats_hold_for_the_examples_and_are_checked_when_asked() -> None:
    # `format` is an annotation unless the validator is asked to check it, as consumers may.
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    for name in sorted(all_schemas()):
        schema = committed(name)
        for example in schema["examples"]:
            jsonschema.Draft202012Validator(schema, format_checker=checker).validate(example)
    schema = committed("FoulRecorded")
    bad = dict(schema["examples"][0], verdict_id="not-a-uuid")
    jsonschema.Draft202012Validator(schema).validate(bad)
    with pytest.raises(jsonschema.ValidationError, match="uuid"):
        jsonschema.Draft202012Validator(schema, format_checker=checker).validate(bad)
