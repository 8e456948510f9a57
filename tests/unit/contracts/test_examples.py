"""The schemas' examples are real messages: each scenario, refereed, gives exactly the
verdicts and rejections it shows, and every id, seq and time in them fits its game."""

from __future__ import annotations

import base64
import json
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from aiokafka.partitioner import murmur2

from referee.contracts.examples import SCENARIOS, VERDICT_ORDER, Scenario, examples
from referee.contracts.parse import parse_event
from referee.contracts.rejection import KafkaSource
from referee.contracts.verdicts import (
    VERDICT_NAMESPACE,
    decode_verdict,
    encode_canonical,
    verdict_id,
)
from referee.contracts.wire import EVENT_TYPES, WireEvent
from referee.processing.referee import Referee

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"


def committed_examples(name: str) -> list[dict[str, Any]]:
    doc = json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))
    return list(doc["examples"])


def canonical(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.game_id)
def test_refereeing_a_scenario_gives_exactly_its_verdicts_and_rejections(
    scenario: Scenario,
) -> None:
    referee = Referee()
    verdicts: list[bytes] = []
    rejections: list[dict[str, Any]] = []
    for index, raw in enumerate(scenario.records):
        result = referee.process(raw, scenario.source_of(index))
        verdicts += [encode_canonical(v) for v in result.verdicts]
        if result.rejection is not None:
            rejections.append(json.loads(encode_canonical(result.rejection)))
    assert verdicts == list(scenario.verdicts)
    assert rejections == scenario.rejections()
    assert referee.tally.duplicates == 0


@pytest.mark.parametrize(
    "scenario", [s for s in SCENARIOS if isinstance(s.first, KafkaSource)], ids=lambda s: s.game_id
)
def test_a_kafka_scenario_sits_on_the_partition_its_key_gives(scenario: Scenario) -> None:
    first = scenario.first
    assert isinstance(first, KafkaSource)
    key = scenario.game_id.encode()
    assert (murmur2(key) & 0x7FFFFFFF) % scenario.partitions == first.partition


def test_the_committed_examples_are_the_scenarios() -> None:
    for name, generated in examples().items():
        assert committed_examples(name) == generated, name
    every_verdict = [json.loads(v) for s in SCENARIOS for v in s.verdicts]
    shown = [v for name in VERDICT_ORDER for v in committed_examples(name)]
    assert sorted(map(canonical, shown)) == sorted(map(canonical, every_verdict))


def test_every_example_verdict_id_is_the_uuid5_of_its_game_cause_and_index() -> None:
    causes: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for name in VERDICT_ORDER:  # one event's verdicts come in this order (RULES.md section 7)
        for verdict in committed_examples(name):
            causes[verdict["game_id"], verdict["cause_seq"]].append(verdict)
    assert sum(map(len, causes.values())) == sum(len(s.verdicts) for s in SCENARIOS)
    for (game_id, cause_seq), verdicts in causes.items():
        for index, verdict in enumerate(verdicts):
            name = f"{game_id}/{cause_seq}/{index}"
            assert verdict["verdict_id"] == str(uuid.uuid5(VERDICT_NAMESPACE, name)), name
            assert verdict["verdict_id"] == verdict_id(game_id, cause_seq, index)


def test_every_verdict_example_names_an_input_example_as_its_cause() -> None:
    events = {e["event_id"]: e for name in EVENT_TYPES for e in committed_examples(name)}
    for name in VERDICT_ORDER:
        for verdict in committed_examples(name):
            cause = events[verdict["cause_event_id"]]
            assert cause["game_id"] == verdict["game_id"]
            assert cause["seq"] == verdict["cause_seq"]
            assert cause["occurred_at"] == verdict["occurred_at"]
            assert cause["round"] == verdict["round"]


def test_the_events_of_a_scenario_are_one_game_in_order() -> None:
    for scenario in SCENARIOS:
        events = scenario.events()
        assert {e["game_id"] for e in events} == {scenario.game_id}
        assert len({e["event_id"] for e in events}) == len(events)
        assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
        times = [e["occurred_at"] for e in events]
        assert times == sorted(times)


def test_every_example_is_what_the_models_read_and_write() -> None:
    for name in EVENT_TYPES:
        for event in committed_examples(name):
            parsed = parse_event(canonical(event))
            assert isinstance(parsed, WireEvent), parsed
            assert parsed.event_id == event["event_id"]
    for name in VERDICT_ORDER:
        for verdict in committed_examples(name):
            line = canonical(verdict)
            assert encode_canonical(decode_verdict(line)) == line


def test_every_optional_field_appears_in_some_example() -> None:
    for path in sorted(SCHEMAS.glob("*.schema.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        optional = set(doc["properties"]) - set(doc["required"])
        shown = {field for example in doc["examples"] for field in example}
        assert optional <= shown, f"{path.name}: no example shows {optional - shown}"


def test_the_rejection_examples_show_both_sources_both_encodings_and_several_reasons() -> None:
    rejections = committed_examples("EventRejected")
    assert {r["source"]["kind"] for r in rejections} == {"kafka", "file"}
    assert {r["raw_encoding"] for r in rejections} == {"utf-8", "base64"}
    assert len({r["reason"] for r in rejections}) >= 4
    for rejection in rejections:
        if rejection.get("raw_omitted"):
            assert rejection["raw"] == ""  # too large to carry: the journal keeps the bytes
            continue
        if rejection["raw_encoding"] == "base64":
            raw = base64.b64decode(rejection["raw"], validate=True)
            with pytest.raises(UnicodeDecodeError):
                raw.decode("utf-8")
        else:
            shown = json.loads(rejection["raw"])
            for field in ("game_id", "seq", "event_id"):
                assert shown[field] == rejection[field]
