"""Every reason code of EVENTS.md ("Bad input"), through ``Referee.process``.

Each test checks the reason and that the detail names what was wrong (the field or value).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from referee.contracts.parse import DEFAULT_MAX_EVENT_BYTES
from referee.processing.outcome import Outcome, Processed
from tests.unit.edge.edge_helpers import (
    GAME,
    Table,
    after_domino,
    dealt,
    drawn,
    event,
    in_round,
    passed,
    played,
    raw,
    started,
)


def rejected(result: Processed, reason: str, *mentions: str) -> None:
    """Then: the record was rejected for ``reason`` and the detail mentions every ``mention``."""
    assert result.outcome is Outcome.REJECTED, result
    assert result.verdicts == ()
    assert result.rejection is not None
    assert result.rejection.reason.value == reason, result.rejection.detail
    for mention in mentions:
        assert mention in result.rejection.detail, (mention, result.rejection.detail)


# --- malformed_json ---------------------------------------------------------------------------


def test_truncated_json_is_malformed() -> None:
    result = Table().one(b'{"event_id": "e-1", "type": "TilePlayed", ')
    rejected(result, "malformed_json", "not valid JSON")
    assert result.rejection is not None
    assert result.rejection.raw == '{"event_id": "e-1", "type": "TilePlayed", '
    assert result.rejection.raw_encoding == "utf-8"
    assert result.game_id is None
    assert result.seq is None


def test_non_utf8_bytes_are_malformed_and_kept_as_base64() -> None:
    garbage = b'\xff\xfe{"event_id": "\x80"}'
    result = Table().one(garbage)
    rejected(result, "malformed_json")
    assert result.rejection is not None
    assert result.rejection.raw_encoding == "base64"
    assert base64.b64decode(result.rejection.raw) == garbage


def test_invalid_utf8_inside_a_string_is_malformed_and_kept_as_base64() -> None:
    line = raw(started()).replace(b'"ann"', b'"\xe9ric"')
    result = Table().one(line)
    rejected(result, "malformed_json", "UTF-8")
    assert result.rejection is not None
    assert result.rejection.raw_encoding == "base64"
    assert base64.b64decode(result.rejection.raw) == line


def test_utf8_raw_is_kept_as_text() -> None:
    line = raw(event("Passed", 2, round=1, player="zoë")).replace(b'"seq":2', b'"seq":"two"')
    result = Table().one(line)
    rejected(result, "schema_violation", "$.seq")
    assert result.rejection is not None
    assert result.rejection.raw_encoding == "utf-8"
    assert result.rejection.raw.encode() == line


# --- schema_violation -------------------------------------------------------------------------


def _without(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != key}


SCHEMA_CASES: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "missing occurred_at": (_without(started(), "occurred_at"), ("occurred_at", "missing")),
    "missing players": (_without(started(), "players"), ("players",)),
    "seq of the wrong type": ({**started(), "seq": "one"}, ("$.seq", "int")),
    "seq a boolean": ({**started(), "seq": True}, ("$.seq",)),
    "seq 0": ({**started(), "seq": 0}, ("$.seq", ">= 1")),
    "unknown rule option": (started(spinner=True), ("spinner", "$.rules")),
    "max_pip 7": (started(max_pip=7), ("$.rules.max_pip", "7")),
    "double_blank 101": (started(double_blank=101), ("$.rules.double_blank", "100")),
    "double_blank -1": (started(double_blank=-1), ("$.rules.double_blank",)),
    "unknown draw rule": (started(draw="sometimes"), ("$.rules.draw", "sometimes")),
    "unknown foul kind": (started(foul_penalty={"cheating": 3}), ("cheating", "foul_penalty")),
    "target_score 0": (started(target_score=0), ("$.rules.target_score",)),
    "duplicate players": (
        {**started(), "players": ["ann", "bob", "ann"]},
        ("$.players", "distinct"),
    ),
    "one player": ({**started(), "players": ["ann"]}, ("$.players", ">= 2")),
    "eleven players": (
        {**started(), "players": [f"p{i}" for i in range(11)]},
        ("$.players", "<= 10"),
    ),
    "empty player id": ({**started(), "players": ["ann", ""]}, ("$.players",)),
    "game_id with a space": (started(game_id="table 42"), ("$.game_id",)),
    "game_id with a slash": (started(game_id="table/42"), ("$.game_id",)),
    # A regex search would let "$" match before a final line break; the schema's does not.
    "game_id ending in a line break": (started(game_id="table-42\n"), ("$.game_id",)),
    "game_id of 129 chars": (started(game_id="g" * 129, event_id="e1"), ("$.game_id",)),
    "empty event_id": (event("GameStarted", 1, event_id="", players=["a", "b"]), ("$.event_id",)),
    "event_id of 65 chars": (
        event("GameStarted", 1, event_id="e" * 65, players=["a", "b"]),
        ("$.event_id",),
    ),
    "occurred_at not a timestamp": ({**started(), "occurred_at": "yesterday"}, ("occurred_at",)),
    "occurred_at without a zone": (
        {**started(), "occurred_at": "2026-11-30T12:00:00"},
        ("occurred_at",),
    ),
    "schema_version 2": ({**started(), "schema_version": 2}, ("$.schema_version",)),
    "end neither left nor right": (played(3, "ann", [6, 6], end="middle"), ("$.end", "middle")),
    "tile of three values": (played(3, "ann", [1, 2, 3]), ("$.tile",)),
    "tile value 19": (played(3, "ann", [1, 19]), ("$.tile",)),
    "tile value negative": (played(3, "ann", [-1, 2]), ("$.tile",)),
    "round 0": (passed(3, "ann", round_no=0), ("$.round",)),
    "player missing": (_without(passed(3, "ann"), "player"), ("player",)),
    "hands not an object": ({**dealt(), "hands": [["ann", [1, 2]]]}, ("$.hands",)),
}


@pytest.mark.parametrize(("data", "mentions"), list(SCHEMA_CASES.values()), ids=list(SCHEMA_CASES))
def test_schema_violation_names_the_field(data: dict[str, Any], mentions: tuple[str, ...]) -> None:
    result = Table().one(raw(data))
    rejected(result, "schema_violation", *mentions)


def test_schema_violation_names_the_event_type() -> None:
    result = Table().one(raw({**passed(3, "ann"), "round": "one"}))
    rejected(result, "schema_violation", "Passed", "$.round")


def test_a_json_value_that_is_not_an_object_is_a_schema_violation() -> None:
    rejected(Table().one(b"[1, 2]"), "schema_violation", "object", "list")


def test_an_event_without_type_is_a_schema_violation() -> None:
    rejected(Table().one(raw(_without(started(), "type"))), "schema_violation", "'type'")


def test_a_schema_violation_keeps_the_readable_place() -> None:
    result = Table().one(raw({**passed(3, "ann"), "player": 5}))
    rejected(result, "schema_violation", "$.player")
    assert result.rejection is not None
    assert (result.rejection.game_id, result.rejection.seq, result.rejection.event_id) == (
        GAME,
        3,
        f"{GAME}-e0003",
    )


def test_an_unreadable_game_id_is_not_kept() -> None:
    result = Table().one(raw(started(game_id="table 42")))
    assert result.rejection is not None
    assert result.rejection.game_id is None
    assert result.rejection.seq == 1


# --- unknown_type -----------------------------------------------------------------------------


def test_unknown_type_names_the_type() -> None:
    result = Table().one(raw(event("Shuffled", 3, round=1)))
    rejected(result, "unknown_type", "'Shuffled'", "TilePlayed")
    assert result.rejection is not None
    assert result.rejection.seq == 3


def test_a_type_that_is_not_a_string_is_unknown() -> None:
    rejected(Table().one(raw({**passed(3, "ann"), "type": 7})), "unknown_type", "7")


def test_type_names_are_case_sensitive() -> None:
    rejected(Table().one(raw({**passed(3, "ann"), "type": "passed"})), "unknown_type", "'passed'")


# --- too_large --------------------------------------------------------------------------------


def _padded(size: int) -> bytes:
    """A valid GameStarted of exactly ``size`` bytes (padding in the occurred_at fraction)."""
    base = raw({**started(), "occurred_at": "2026-11-30T12:00:00.Z"})
    fill = size - len(base)
    assert fill > 0
    line = base.replace(b"00.Z", b"00." + b"1" * fill + b"Z")
    assert len(line) == size
    return line


def test_the_default_limit_is_64_kib() -> None:
    assert DEFAULT_MAX_EVENT_BYTES == 64 * 1024
    at_limit = Table().one(_padded(64 * 1024))
    assert at_limit.outcome is Outcome.APPLIED, at_limit.rejection
    over = Table().one(_padded(64 * 1024 + 1))
    rejected(over, "too_large", str(64 * 1024 + 1), str(64 * 1024))


def test_a_custom_limit() -> None:
    line = raw(started())
    assert Table(max_event_bytes=len(line)).one(line).outcome is Outcome.APPLIED
    rejected(Table(max_event_bytes=len(line) - 1).one(line), "too_large", str(len(line) - 1))


def test_too_large_keeps_the_raw_bytes() -> None:
    line = b'{"event_id":"huge","pad":"' + b"x" * 70_000 + b'"}'
    result = Table().one(line)
    rejected(result, "too_large", "70028", "65536")
    assert result.rejection is not None
    assert result.rejection.raw.encode() == line


# --- unknown_game -----------------------------------------------------------------------------


def test_unknown_game_names_the_game() -> None:
    rejected(Table().one(raw(passed(2, "ann"))), "unknown_game", repr(GAME), "Passed")


def test_an_unknown_game_stays_unknown_until_it_starts() -> None:
    table = Table()
    first, second, start = table.feed(passed(2, "ann"), passed(2, "ann"), started())
    rejected(first, "unknown_game")
    rejected(second, "unknown_game")  # it took no place, so it is not a duplicate either
    assert start.outcome is Outcome.APPLIED


# --- game_already_started ---------------------------------------------------------------------


def test_a_second_game_started() -> None:
    table = Table()
    first, again = table.feed(started(), {**started(seq=2), "players": ["cid", "dee"]})
    assert first.outcome is Outcome.APPLIED
    rejected(again, "game_already_started", "already started")
    assert again.took_place


# --- unknown_player ---------------------------------------------------------------------------


def test_unknown_player_names_the_player() -> None:
    rejected(in_round().one(raw(passed(3, "zed"))), "unknown_player", "'zed'")


def test_unknown_player_drawing() -> None:
    rejected(in_round().one(raw(drawn(3, "zed", [3, 4]))), "unknown_player", "'zed'")


# --- bad_deal ---------------------------------------------------------------------------------


BAD_DEALS: dict[str, tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]] = {
    "a hand for a stranger": (
        {},
        dealt(hands={"ann": [[1, 2]], "zed": [[3, 4]]}),
        ("zed", "bob"),
    ),
    "a player without a hand": ({}, dealt(hands={"ann": [[1, 2]]}), ("bob",)),
    "leader not a player": ({}, dealt(leader="zed"), ("zed", "leader")),
    "an empty hand": ({}, dealt(hands={"ann": [[1, 2]], "bob": []}), ("bob", "no tiles")),
    "a tile outside double-six": (
        {},
        dealt(hands={"ann": [[1, 2]], "bob": [[6, 7]]}),
        ("[6,7]", "double-6"),
    ),
    "a tile outside double-nine in the boneyard": (
        {"max_pip": 9},
        dealt(boneyard=[[9, 10]]),
        ("[9,10]", "boneyard", "double-9"),
    ),
    "a tile twice in two hands": (
        {},
        dealt(hands={"ann": [[1, 2]], "bob": [[2, 1]]}),
        ("[1,2]", "twice"),
    ),
    "a tile twice in hand and boneyard": ({}, dealt(boneyard=[[6, 6]]), ("[6,6]", "twice")),
    "a tile twice in one hand": (
        {},
        dealt(hands={"ann": [[1, 2], [1, 2]], "bob": [[3, 4]]}),
        ("[1,2]", "twice"),
    ),
    "a boneyard in a draw none game": (
        {"draw": "none"},
        dealt(boneyard=[[3, 4]]),
        ("draw: none", "1 tiles"),
    ),
}


@pytest.mark.parametrize(
    ("rules", "deal", "mentions"), list(BAD_DEALS.values()), ids=list(BAD_DEALS)
)
def test_bad_deal(rules: dict[str, Any], deal: dict[str, Any], mentions: tuple[str, ...]) -> None:
    table = Table()
    table.one(raw(started(**rules)))
    result = table.one(raw(deal))
    rejected(result, "bad_deal", *mentions)
    assert result.took_place
    # the bad deal changed nothing: a good deal for round 1 may follow
    assert table.one(raw(dealt(seq=3, boneyard=[]))).outcome is Outcome.APPLIED


def test_a_deal_that_sleeps_tiles_is_fine() -> None:
    table = Table()
    table.one(raw(started(draw="none")))
    assert table.one(raw(dealt(boneyard=[]))).outcome is Outcome.APPLIED


# --- round_not_started ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "action",
    [passed(2, "ann"), played(2, "ann", [6, 6]), drawn(2, "ann", [3, 4])],
    ids=["pass", "play", "draw"],
)
def test_an_action_before_the_first_round(action: dict[str, Any]) -> None:
    table = Table()
    table.one(raw(started()))
    rejected(table.one(raw(action)), "round_not_started", action["type"], "RoundStarted")


# --- wrong_round ------------------------------------------------------------------------------


def test_an_action_for_another_round() -> None:
    rejected(in_round().one(raw(passed(3, "ann", round_no=2))), "wrong_round", "round 2", "1")


def test_a_round_started_while_a_round_is_in_play() -> None:
    result = in_round().one(raw(dealt(seq=3, round_no=2)))
    rejected(result, "wrong_round", "round 1 is still in play", "round 2")


def test_a_first_round_that_is_not_round_1() -> None:
    table = Table()
    table.one(raw(started()))
    rejected(table.one(raw(dealt(round_no=2))), "wrong_round", "round 2", "expected round 1")


def test_a_round_that_skips_ahead() -> None:
    result = after_domino().one(raw(dealt(seq=4, round_no=3)))
    rejected(result, "wrong_round", "round 3", "expected round 2")


def test_a_round_started_again() -> None:
    result = after_domino().one(raw(dealt(seq=4, round_no=1)))
    rejected(result, "wrong_round", "round 1", "expected round 2")


def test_an_action_for_the_next_round_before_it_starts() -> None:
    result = after_domino().one(raw(passed(4, "bob", round_no=2)))
    rejected(result, "wrong_round", "round 2")


# --- round_over -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "action",
    [passed(4, "bob"), played(4, "bob", [6, 5], end="left"), drawn(4, "bob", [3, 4])],
    ids=["pass", "play", "draw"],
)
def test_an_action_after_the_round_was_scored(action: dict[str, Any]) -> None:
    rejected(after_domino().one(raw(action)), "round_over", "round 1 is over")


def test_an_action_after_a_declared_block() -> None:
    table = Table()
    table.feed(
        started(draw="none"),
        dealt(hands={"ann": [[6, 6], [1, 2]], "bob": [[3, 4], [0, 0]]}, boneyard=[]),
        played(3, "ann", [6, 6]),
        passed(4, "bob"),
    )
    last = table.one(raw(passed(5, "ann")))
    assert [type(v).__name__ for v in last.verdicts] == ["BlockDeclaredWire", "RoundScoredWire"]
    rejected(table.one(raw(passed(6, "bob"))), "round_over", "round 1 is over")


# --- game_over --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "after",
    [dealt(seq=4, round_no=2), passed(4, "bob"), played(4, "bob", [6, 5], end="left")],
    ids=["next round", "pass", "play"],
)
def test_anything_after_game_won(after: dict[str, Any]) -> None:
    table = Table()
    results = table.feed(
        started(target_score=1),
        dealt(hands={"ann": [[6, 6]], "bob": [[6, 5], [0, 0]]}),
        played(3, "ann", [6, 6]),
    )
    assert [type(v).__name__ for v in results[2].verdicts] == ["RoundScoredWire", "GameWonWire"]
    rejected(table.one(raw(after)), "game_over", "'ann'")


# --- seq_gap ----------------------------------------------------------------------------------


def test_a_seq_that_skips_ahead() -> None:
    result = in_round().one(raw(played(5, "ann", [6, 6])))
    rejected(result, "seq_gap", "seq 5", "next expected seq is 3")
    assert not result.took_place


def test_game_started_must_have_seq_1() -> None:
    result = Table().one(raw(started(seq=2)))
    rejected(result, "seq_gap", "seq 1", "2")


# --- seq_conflict -----------------------------------------------------------------------------


def test_the_same_seq_with_other_content() -> None:
    table = in_round()
    table.one(raw(played(3, "ann", [6, 6])))
    result = table.one(raw(played(3, "ann", [1, 2], event_id="another")))
    rejected(result, "seq_conflict", "seq 3", repr(GAME))
    assert not result.took_place


def test_the_same_event_id_with_other_content() -> None:
    table = in_round()
    table.one(raw(played(3, "ann", [6, 6], event_id="e-play")))
    result = table.one(raw(passed(4, "bob", event_id="e-play")))
    rejected(result, "seq_conflict", "'e-play'")


def test_a_game_started_again_with_other_content() -> None:
    table = Table()
    table.one(raw(started()))
    rejected(table.one(raw(started(max_pip=9))), "seq_conflict", "seq 1")


def test_event_ids_are_scoped_per_game() -> None:
    table = Table()
    first = table.one(raw(started(event_id="shared")))
    other = table.one(raw(started(game_id="table-43", event_id="shared")))
    assert (first.outcome, other.outcome) == (Outcome.APPLIED, Outcome.APPLIED)


# --- the rejection record ---------------------------------------------------------------------


def test_the_rejection_is_event_rejected_json_with_its_source() -> None:
    from referee.contracts.verdicts import encode_canonical

    result = Table().one(raw(passed(2, "ann")))
    assert result.rejection is not None
    record = json.loads(encode_canonical(result.rejection))
    assert record["type"] == "EventRejected"
    assert record["reason"] == "unknown_game"
    assert record["source"] == {"kind": "file", "file": "edge.jsonl", "line": 1}
    assert record["game_id"] == GAME
    assert record["seq"] == 2
    assert record["schema_version"] == 1
    assert json.loads(record["raw"]) == passed(2, "ann")


# --- known gaps (these fail until the lead fixes them; see the report) ------------------------


@pytest.mark.parametrize(
    "stamp",
    [
        "2026-13-01T12:00:00Z",
        "2026-02-30T12:00:00Z",
        "2026-11-30T25:00:00Z",
        "2026-11-30T12:61:00Z",
    ],
)
def test_occurred_at_must_be_a_real_rfc3339_time(stamp: str) -> None:
    # EVENTS.md: `occurred_at` is an "RFC 3339 timestamp"; month 13, February 30, hour 25 and
    # minute 61 are not (RFC 3339 section 5.7). The wire pattern only checks the digits' shape.
    result = Table().one(raw({**started(), "occurred_at": stamp}))
    rejected(result, "schema_violation", "occurred_at")
