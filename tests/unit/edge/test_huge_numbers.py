"""A number beyond a double's range (``1e400``) is valid JSON: judged as any other number.

JSON's grammar bounds no number, so ``{"round":1e400}`` is well-formed; EVENTS.md makes a field
of the wrong type or out of range a ``schema_violation`` that keeps the record's place (the
envelope's ``game_id``, ``seq`` and ``event_id``, when they can be read). msgspec's untyped
decoder fails on such a float with "Number out of range" as if the JSON were malformed; the
edge reads it as an infinite float instead, so it is judged as ``1e2`` or a 400-digit integer
is, the same by the referee in memory and by the processing step on its store.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from referee.contracts.parse import Unparsed, parse_event, read_envelope
from referee.contracts.rejection import KafkaSource
from referee.domain.errors import RejectionReason
from referee.processing.outcome import Outcome, Processed
from referee.processing.referee import Referee
from referee.processing.step import InputRecord, ProcessingStep
from tests.fakes import FakeStepStore
from tests.unit.edge.edge_helpers import (
    GAME,
    FedReferee,
    dealt,
    in_round,
    passed,
    played,
    raw,
    started,
)

HUGE = ("1e400", "-1e400", "1E+400", "1.0e400", "-0.5E401")
"""Literals of JSON's grammar beyond a double's range, of either sign."""

_MARK = 987_654_321
"""A number no event holds: the place where a literal is written in."""


def with_literal(data: dict[str, Any], literal: str) -> bytes:
    """Returns the event's wire bytes with the number ``_MARK`` written as ``literal``."""
    encoded = raw(data)
    assert encoded.count(str(_MARK).encode()) == 1
    return encoded.replace(str(_MARK).encode(), literal.encode())


def pass_in_round(literal: str) -> bytes:
    """Returns ann's pass at seq 3 with ``literal`` for its round."""
    return with_literal(passed(3, "ann", round_number=_MARK), literal)


def rejection(result: Processed) -> tuple[str, str, str | None, int | None, str | None]:
    """The rejection's reason, detail and the place it kept."""
    assert result.outcome is Outcome.REJECTED, result
    assert result.rejection is not None
    r = result.rejection
    return r.reason.value, r.detail, result.game_id, result.seq, result.event_id


# --- in a field the contract types ---------------------------------------------------------------


@pytest.mark.parametrize("literal", HUGE)
def test_a_huge_round_is_a_schema_violation_that_keeps_its_place(literal: str) -> None:
    table = in_round()
    result = table.one(pass_in_round(literal))

    assert rejection(result) == (
        "schema_violation",
        "Passed: Expected `int`, got `float` - at `$.round`",
        GAME,
        3,
        f"{GAME}-e0003",
    )
    assert result.took_place, "the next expected seq: the record takes the place"
    after = table.one(played(4, "ann", [6, 6]))
    assert after.outcome is Outcome.APPLIED, after.rejection


def test_a_huge_round_is_judged_as_a_small_float_or_a_huge_integer_is() -> None:
    huge, small, digits = (
        rejection(in_round().one(pass_in_round(n))) for n in ("1e400", "1e2", "9" * 400)
    )

    assert huge == small
    assert digits[0] == huge[0] == "schema_violation"
    assert digits[2:] == huge[2:] == (GAME, 3, f"{GAME}-e0003")
    assert digits[1] == "Passed: Expected `int` <= 9007199254740991 - at `$.round`"


@pytest.mark.parametrize("literal", HUGE)
def test_a_huge_seq_is_a_schema_violation_without_a_seq_and_takes_no_place(literal: str) -> None:
    table = in_round()
    record = with_literal(passed(_MARK, "ann", event_id="pass-3"), literal)

    result = table.one(record)

    assert rejection(result) == (
        "schema_violation",
        "Passed: Expected `int`, got `float` - at `$.seq`",
        GAME,
        None,
        "pass-3",
    )
    assert not result.took_place
    after = table.one(played(3, "ann", [6, 6]))
    assert after.outcome is Outcome.APPLIED, "seq 3 is still the next expected"


def test_a_huge_number_where_a_string_belongs_says_so() -> None:
    record = raw(passed(3, "ann", event_id="x")).replace(b'"x"', b"1e400")

    result = in_round().one(record)

    assert rejection(result) == (
        "schema_violation",
        "Passed: Expected `str`, got `float` - at `$.event_id`",
        GAME,
        3,
        None,
    )


def test_a_huge_type_is_an_unknown_type_that_keeps_its_place() -> None:
    record = raw(passed(3, "ann")).replace(b'"Passed"', b"1e400")

    result = in_round().one(record)

    reason, detail, game_id, seq, event_id = rejection(result)
    assert (reason, game_id, seq, event_id) == ("unknown_type", GAME, 3, f"{GAME}-e0003")
    assert detail.startswith("type inf is not one of")


def test_a_huge_number_deep_in_a_game_s_rules_is_a_schema_violation() -> None:
    record = with_literal(started(target_score=_MARK), "1e400")

    result = FedReferee().one(record)

    reason, detail, game_id, seq, _ = rejection(result)
    assert (reason, game_id, seq) == ("schema_violation", GAME, 1)
    assert "GameStarted: " in detail
    assert "$.rules.target_score" in detail
    assert "Number out of range" not in detail


# --- in a field the contract does not know ----------------------------------------------------


@pytest.mark.parametrize("literal", HUGE)
def test_a_huge_number_in_an_unknown_field_of_a_valid_event_is_ignored(literal: str) -> None:
    # Unknown fields are ignored (EVENTS.md: fields may be added), whatever number they hold,
    # as a small one is.
    table = in_round()
    record = with_literal(played(3, "ann", [6, 6], extra_field=_MARK), literal)

    result = table.one(record)

    assert result.outcome is Outcome.APPLIED, result.rejection
    assert (result.game_id, result.seq) == (GAME, 3)


@pytest.mark.parametrize("literal", HUGE)
def test_a_huge_number_in_an_unknown_field_of_an_invalid_event_leaves_its_fault_to_say(
    literal: str,
) -> None:
    # The typed decoder stops at the bad round; the record is read whole only to explain it,
    # and was malformed_json without a place before.
    data = passed(3, "ann", extra={"nested": [_MARK]})
    data["round"] = 1.5
    record = with_literal(data, literal)

    result = in_round().one(record)

    assert rejection(result) == (
        "schema_violation",
        "Passed: Expected `int`, got `float` - at `$.round`",
        GAME,
        3,
        f"{GAME}-e0003",
    )
    assert result.took_place


@pytest.mark.parametrize("literal", HUGE)
def test_a_huge_number_nested_too_deeply_is_too_deep_not_malformed(literal: str) -> None:
    deep = json.loads("[" * 70 + str(_MARK) + "]" * 70)
    record = with_literal(passed(3, "ann", extra=deep), literal)

    result = in_round().one(record)

    reason, detail, game_id, seq, event_id = rejection(result)
    assert (reason, game_id, seq, event_id) == ("schema_violation", GAME, 3, f"{GAME}-e0003")
    assert "levels deep; the limit is 64" in detail


# --- what stays malformed ----------------------------------------------------------------------


def test_json_malformed_after_a_huge_number_is_still_malformed_and_says_where() -> None:
    record = pass_in_round("1e400")[:-1] + b",,}"

    parsed = parse_event(record)

    assert isinstance(parsed, Unparsed)
    assert parsed.reason is RejectionReason.MALFORMED_JSON
    assert parsed.detail.startswith("not valid JSON: JSON is malformed")
    assert "Number out of range" not in parsed.detail
    assert (parsed.game_id, parsed.seq, parsed.event_id) == (None, None, None)


@pytest.mark.parametrize("text", ["1e400x", "1e", "1e+", "Infinity", "-Infinity", "NaN", "01e400"])
def test_what_json_s_grammar_refuses_stays_malformed(text: str) -> None:
    record = raw(passed(3, "ann", round_number=_MARK)).replace(str(_MARK).encode(), text.encode())

    parsed = parse_event(record)

    assert isinstance(parsed, Unparsed)
    assert parsed.reason is RejectionReason.MALFORMED_JSON, parsed.detail


def test_a_huge_number_alone_is_no_object() -> None:
    parsed = parse_event(b"1e400")

    assert isinstance(parsed, Unparsed)
    assert parsed.reason is RejectionReason.SCHEMA_VIOLATION
    assert parsed.detail == "an event must be a JSON object, got float"


def test_the_envelope_of_a_record_holding_a_huge_number_is_read() -> None:
    record = with_literal(passed(3, "ann", extra=[_MARK]), "1e400")
    assert read_envelope(record) == (GAME, 3, f"{GAME}-e0003")
    huge_seq = record.replace(b'"seq":3', b'"seq":1e400')
    assert read_envelope(huge_seq) == (GAME, None, f"{GAME}-e0003")


# --- the same on the store -------------------------------------------------------------------


def test_the_processing_step_journals_and_dead_letters_it_as_the_referee_judges_it() -> None:
    lines = [
        raw(started()),
        raw(dealt()),
        pass_in_round("1e400"),
        with_literal(passed(_MARK, "ann", event_id="pass-x"), "-1e400"),
        with_literal(played(4, "ann", [6, 6], extra_field=_MARK), "1E+400"),
    ]
    memory = Referee()
    expected = [memory.process(line, KafkaSource("t", 0, i)) for i, line in enumerate(lines)]
    store = FakeStepStore()
    step = ProcessingStep(store, "g")
    records = [InputRecord(line, "t", 0, i, KafkaSource("t", 0, i)) for i, line in enumerate(lines)]

    asyncio.run(step.process(records))

    journal = sorted(store.journal, key=lambda row: row.source_offset)
    assert [(r.game_id, r.seq, r.event_id, r.outcome, r.reason, r.took_place) for r in journal] == [
        (
            p.game_id,
            p.seq,
            p.event_id,
            p.outcome.value,
            p.rejection.reason.value if p.rejection else None,
            p.took_place,
        )
        for p in expected
    ]
    assert [r.reason for r in journal] == [
        None,
        None,
        "schema_violation",
        "schema_violation",
        None,
    ]
    bodies = sorted(store.dead_letters, key=lambda row: row.journal_id)
    details = [json.loads(row.body)["detail"] for row in bodies]
    assert details == [p.rejection.detail for p in expected if p.rejection is not None]
    assert details == [
        "Passed: Expected `int`, got `float` - at `$.round`",
        "Passed: Expected `int`, got `float` - at `$.seq`",
    ]


def test_a_worker_shards_a_record_with_a_huge_number_by_its_game() -> None:
    # --workers N sends each line to its game's shard; a line whose envelope holds 1e400
    # must go where the rest of its game goes, or the game's next event is a seq_gap there.
    from referee.usecases.replay import shard_of

    plain = b'{"type":"Passed","game_id":"g2","seq":3,"event_id":"x","round":1}'
    huge = b'{"type":"Passed","game_id":"g2","seq":3,"event_id":1e400,"round":1}'
    assert all(shard_of(huge, n) == shard_of(plain, n) for n in range(2, 9))
