"""The committed JSON Schemas agree with the code's models, and real messages satisfy both."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from referee.contracts.parse import parse_event
from referee.contracts.schemas import all_schemas, render
from referee.contracts.verdicts import decode_verdict
from referee.contracts.wire import WireEvent

ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = ROOT / "schemas"
GOLDEN = ROOT / "tests" / "golden"


def committed(name: str) -> dict[str, object]:
    schema: dict[str, object] = json.loads(
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
    bad = dict(schema["examples"][0])  # type: ignore[index]
    bad["rules"] = {"max_pip": 7}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(bad)
    assert not isinstance(parse_event(json.dumps(bad).encode()), WireEvent)
