"""Writes the hostile logs of this folder and their expected outcomes.

Every case pairs the exact bytes of a log line with the outcome EVENTS.md prescribes for it,
written here by hand from the contract (not computed by the referee): the outcome, the
rejection reason, whether the record takes its game's next place, and words its ``detail``
must contain. Blank lines have no expectation: they are not records.

    uv run python -m tests.hostile.build     # rewrites tests/hostile/*.jsonl and *.expected.jsonl

``test_hostile.py`` checks the committed files are this script's output, then runs each log
in memory, through ``referee replay --database`` (then ``referee audit``) and through the
live service, and compares every record's outcome with its expectation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
AT = "2026-11-30T12:00:00Z"
MAX = 2**53 - 1


@dataclass(frozen=True)
class Expect:
    """What EVENTS.md says becomes of one record."""

    outcome: str  # applied, fouled, rejected, duplicate
    reason: str | None = None
    took_place: bool = True
    detail: str | None = None  # words the rejection's detail must contain
    why: str = ""
    raw: str | None = None  # the rejection's raw, where it is not simply the line


Case = tuple[bytes, Expect | None]


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def event(kind: str, game: str, seq: Any, eid: str | None = None, **fields: Any) -> dict[str, Any]:
    return {
        "event_id": eid if eid is not None else f"{game}-e{seq}",
        "type": kind,
        "game_id": game,
        "seq": seq,
        "occurred_at": AT,
        "schema_version": 1,
        **fields,
    }


def started(game: str, players: list[str] | None = None, **rules: Any) -> bytes:
    return dumps(event("GameStarted", game, 1, players=players or ["ann", "bob"], rules=rules))


DEAL = {"ann": [[6, 6], [1, 2]], "bob": [[6, 5], [0, 0]]}


def dealt(
    game: str,
    seq: int = 2,
    hands: dict[str, list[list[int]]] | None = None,
    boneyard: list[list[int]] | None = None,
    leader: str = "ann",
) -> bytes:
    return dumps(
        event(
            "RoundStarted",
            game,
            seq,
            round=1,
            hands=hands
            if hands is not None
            else {"ann": [[6, 6], [1, 2]], "bob": [[6, 5], [0, 0]]},
            boneyard=boneyard if boneyard is not None else [[3, 4]],
            leader=leader,
        )
    )


def passed(game: str, seq: Any, player: str = "ann", **fields: Any) -> bytes:
    return dumps(event("Passed", game, seq, **{"round": 1, "player": player, **fields}))


APPLIED = Expect("applied")
FALSE_PASS = Expect("fouled", why="the player could play: false_pass (applied)")


def rejected(
    reason: str, detail: str | None = None, *, place: bool = True, why: str = ""
) -> Expect:
    return Expect("rejected", reason, place, detail, why)


def nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def deep_nesting() -> list[Case]:
    g = "deep-1"
    bare = b"[" * 2000 + b"]" * 2000
    with_deep = dumps(event("TilePlayed", g, 5, round=1, player="bob", tile=[6, 5], end="left"))
    with_deep = with_deep[:-1] + b',"x":' + b"[" * 3000 + b"]" * 3000 + b"}"
    brackets_in_a_string = passed(g, 7, "ann", x="[" * 200 + "]" * 200)
    return [
        (started(g), APPLIED),
        (dealt(g), APPLIED),
        (
            passed(g, 3, x=nested(64)),
            rejected(
                "schema_violation",
                "nests 65 levels deep; the limit is 64",
                why="an unknown field nested 64 deep makes the event 65 levels deep (> 64)",
            ),
        ),
        (
            passed(g, 4, x=nested(63)),
            Expect("fouled", why="64 levels deep is allowed; ann could play: false_pass"),
        ),
        (
            bare,
            rejected(
                "schema_violation",
                "nests 2000 levels deep",
                place=False,
                why="too deep wherever the nesting is; no game id to take a place in",
            ),
        ),
        (
            with_deep,
            rejected(
                "schema_violation",
                "nests 3001 levels deep",
                why="the envelope is readable, so the record still takes seq 5",
            ),
        ),
        (passed(g, 6, "bob"), Expect("fouled", why="bob could play [6,5]: false_pass")),
        (
            b'{"x":' + b"[" * 100,
            rejected("malformed_json", "not valid JSON", place=False, why="not JSON at all"),
        ),
        (
            brackets_in_a_string,
            Expect("fouled", why="brackets inside a string are not nesting; ann: false_pass"),
        ),
    ]


def huge_integers() -> list[Case]:
    g = "int-1"
    g3 = "int-3"

    def replace(line: bytes, old: bytes, new: bytes) -> bytes:
        assert old in line
        return line.replace(old, new, 1)

    deal3 = dumps(
        event(
            "RoundStarted",
            g3,
            2,
            round=1,
            hands={"ann": [[0, 1]], "bob": [[2, 3]]},
            boneyard=[],
            leader="ann",
        )
    )
    return [
        (started(g), APPLIED),
        (dealt(g), APPLIED),
        (passed(g, MAX), rejected("seq_gap", "skips ahead", place=False, why="2^53-1 is valid")),
        (
            passed(g, MAX + 1),
            rejected("schema_violation", "$.seq", place=False, why="seq above 2^53-1"),
        ),
        (
            replace(passed(g, 3), b'"seq":3', b'"seq":' + b"9" * 400),
            rejected("schema_violation", "$.seq", place=False, why="a 400-digit seq"),
        ),
        (
            passed(g, 3, round=MAX + 1),
            rejected("schema_violation", "$.round", why="round above 2^53-1; takes seq 3"),
        ),
        (
            passed(g, 4, round=2**31),
            rejected("wrong_round", "round 2147483648", why="2^31 is a valid round number"),
        ),
        (
            dumps(event("TilePlayed", g, 5, round=1, player="ann", tile=[0, 10**30])),
            rejected("schema_violation", "$.tile", why="a pip value of 10^30"),
        ),
        (
            dumps(event("TilePlayed", g, 6, round=1, player="ann", tile=[-1, 2])),
            rejected("schema_violation", "$.tile", why="a negative pip value"),
        ),
        (
            dumps(event("TileDrawn", g, 7, round=1, player="ann", tile=[3, 19])),
            rejected("schema_violation", "$.tile", why="a pip value above 18"),
        ),
        (
            replace(passed(g, 8), b'"schema_version":1', b'"schema_version":18446744073709551616'),
            rejected("schema_violation", "$.schema_version", why="schema_version is 1"),
        ),
        (
            replace(passed(g, 9), b'"seq":9', b'"seq":9.0'),
            rejected("schema_violation", "$.seq", place=False, why="9.0 is not an integer"),
        ),
        (
            replace(passed(g, 9), b'"seq":9', b'"seq":true'),
            rejected("schema_violation", "$.seq", place=False, why="true is not an integer"),
        ),
        (passed(g, 9), Expect("fouled", why="seq 9 is next; ann could play: false_pass")),
        (
            replace(passed(g, 10), b'"seq":10', b'"seq":0'),
            rejected("schema_violation", "$.seq", place=False, why="seq starts at 1"),
        ),
        (
            started("int-2", target_score=MAX + 1),
            rejected("schema_violation", "$.rules.target_score", place=False),
        ),
        (started(g3, target_score=MAX), APPLIED),
        (
            started("int-4", double_blank=10**20),
            rejected("schema_violation", "$.rules.double_blank", place=False),
        ),
        (
            started("int-5", foul_penalty={"false_pass": 10**20}),
            rejected("schema_violation", "$.rules.foul_penalty", place=False),
        ),
        (
            started("int-6", max_pip=10**20),
            rejected("schema_violation", "$.rules.max_pip", place=False),
        ),
        (
            replace(deal3, b"[0,1]", b"[0,99999999999999999999]"),
            rejected("schema_violation", "$.hands", why="a pip value of 10^20 in a hand"),
        ),
        (
            replace(replace(deal3, b'"seq":2', b'"seq":3'), b"int-3-e2", b"int-3-e3"),
            Expect("applied", why="the deal at seq 3 after the rejected one at seq 2"),
        ),
    ]


def control_characters() -> list[Case]:
    g = "ctl-1"
    g3 = "ctl-3"
    nbsp = "b\u00a0b"
    raw_control = passed(g, 9).replace(b'"player":"ann"', b'"player":"an\x01n"')
    bad_game = passed(g, 9).replace(b'"game_id":"ctl-1"', b'"game_id":"ctl-1\\u0000"')
    return [
        (started(g), APPLIED),
        (dealt(g), APPLIED),
        (
            passed(g, 3, eid="e\u0000"),
            rejected(
                "schema_violation",
                "event id",
                why="NUL in the event id; the id is unreadable but game and seq take seq 3",
            ),
        ),
        (passed(g, 4, "ann\u0000"), rejected("schema_violation", "player id")),
        (passed(g, 5, "ann\u001f"), rejected("schema_violation", "player id")),
        (passed(g, 6, "ann\u007f"), rejected("schema_violation", "player id", why="DEL")),
        (passed(g, 7, "ann\u0085"), rejected("schema_violation", "player id", why="C1 NEL")),
        (passed(g, 8, eid="e\u009f8"), rejected("schema_violation", "event id", why="C1")),
        (
            raw_control,
            rejected(
                "malformed_json",
                "not valid JSON",
                place=False,
                why="JSON forbids an unescaped control character in a string",
            ),
        ),
        (
            bad_game,
            rejected(
                "schema_violation",
                "$.game_id",
                place=False,
                why="a game id outside its characters is unreadable: no place",
            ),
        ),
        (
            started("ctl-2", ["ann", "b\u0000b"]),
            rejected("schema_violation", "$.players[1]", place=False),
        ),
        (started(g3, ["ann", nbsp]), Expect("applied", why="U+00A0 is not a control character")),
        (
            dealt(g3, 2, {"ann": [[1, 2]], "b\u0000": [[3, 4]]}, [], "ann"),
            rejected("schema_violation", "$.hands"),
        ),
        (
            dealt(g3, 3, {"ann": [[1, 2]], nbsp: [[3, 4]]}, [], "an\u0000n"),
            rejected("schema_violation", "$.leader"),
        ),
        (dealt(g3, 4, {"ann": [[1, 2]], nbsp: [[3, 4]]}, [], nbsp), APPLIED),
        (passed(g, 9), Expect("fouled", why="ann could play: false_pass")),
        (
            dumps(event("TilePlayed", g3, 5, round=1, player=nbsp, tile=[3, 4])),
            Expect("applied", why="the last tile of its hand: the round is won by domino"),
        ),
    ]


RFC3339_CASES: list[tuple[str, bool, str]] = [
    ("2026-11-30t12:00:00z", True, "lower-case t and z"),
    ("2026-11-30T12:00:00z", True, "lower-case z"),
    ("2026-11-30t12:00:00Z", True, "lower-case t"),
    ("2026-11-30T12:00:00+01:60", False, "offset minutes 60"),
    ("2026-11-30T12:00:00+00:99", False, "offset minutes 99"),
    ("2026-11-30T12:00:00+24:00", False, "offset hours 24"),
    ("2026-11-30T12:00:00-23:59", True, "the widest offset"),
    ("2026-11-30T24:00:00Z", False, "hour 24"),
    ("2016-12-31T23:59:60Z", True, "a leap second"),
    ("2026-02-29T12:00:00Z", False, "2026 is no leap year"),
    ("2024-02-29T12:00:00Z", True, "2024 is a leap year"),
    ("2026-13-01T12:00:00Z", False, "month 13"),
    ("2026-11-30T12:00:00.123456789Z", True, "nine fraction digits"),
    ("2026-11-30T12:00:00", False, "no offset"),
    ("2026-11-30 12:00:00Z", False, "a space for T"),
    ("\u0662\u0660\u0662\u0666-11-30T12:00:00Z", False, "Arabic-Indic digits"),
    ("2026-11-30T12:00:00Z\n", False, "a line break after Z"),
    ("2026-11-30T12:60:00Z", False, "minute 60"),
    ("2026-11-30T12:00:61Z", False, "second 61"),
    ("2026-11-30T12:00:00.Z", False, "an empty fraction"),
    ("1900-02-29T00:00:00Z", False, "1900 is no leap year"),
    ("2000-02-29T00:00:00Z", True, "2000 is a leap year"),
]


def rfc3339() -> list[Case]:
    g = "time-1"
    cases: list[Case] = [(started(g), APPLIED), (dealt(g), APPLIED)]
    turn = ["ann", "bob"]
    seat = 0
    for seq, (stamp, valid, why) in enumerate(RFC3339_CASES, start=3):
        line = dumps({**event("Passed", g, seq, round=1, player=turn[seat]), "occurred_at": stamp})
        if valid:
            cases.append((line, Expect("fouled", why=f"{why}: valid; a false pass")))
            seat = 1 - seat
        else:
            cases.append((line, rejected("schema_violation", "$.occurred_at", why=why)))
    return cases


def blank_lines() -> list[Case]:
    g = "blank-1"
    return [
        (started(g) + b"\r", APPLIED),  # a CRLF line break
        (b"", None),
        (b"   ", None),
        (b"\t", None),
        (b"\r", None),
        (b" \t\r\r", None),
        (b"\x0c", rejected("malformed_json", place=False, why="a form feed is not blank")),
        (b"\x0b", rejected("malformed_json", place=False, why="a vertical tab is not blank")),
        (b"\xc2\xa0", rejected("malformed_json", place=False, why="a no-break space")),
        (
            b"abc\r\r\r",
            Expect(
                "rejected",
                "malformed_json",
                took_place=False,
                why="only the line break (CR LF) goes: raw keeps two carriage returns",
                raw="abc\r\r",
            ),
        ),
        (dealt(g) + b"   ", Expect("applied", why="JSON may end in spaces")),
        (b"\t" + passed(g, 3), Expect("fouled", why="JSON may start with a tab; false_pass")),
        (b"\x00", rejected("malformed_json", place=False)),
        (passed(g, 4, "bob"), Expect("fouled", why="the last line, without a line break")),
    ]


def player_names() -> list[Case]:
    g = "names-1"
    g2 = "names-2"
    quoted = '"quoted"'
    return [
        (started(g, ["boneyard", "null"]), APPLIED),
        (
            dealt(g, 2, {"boneyard": [], "null": [[1, 2]]}, [], "null"),
            rejected(
                "bad_deal",
                "'boneyard' was dealt no tiles",
                why="a player named boneyard is a player like any other",
            ),
        ),
        (dealt(g, 3, {"boneyard": [[0, 0]], "null": [[6, 6], [5, 5]]}, [], "null"), APPLIED),
        (
            dumps(event("TilePlayed", g, 4, round=1, player="null", tile=[6, 6])),
            APPLIED,
        ),
        (
            passed(g, 5, "boneyard"),
            Expect("applied", why="[0,0] shows no 6: a legitimate pass proposes the block"),
        ),
        (
            passed(g, 6, "null"),
            Expect("applied", why="[5,5] cannot play either: blocked; boneyard (0 pips) wins 10"),
        ),
        (started(g2, ["true", "{}", quoted, "[]"]), APPLIED),
        (
            dealt(
                g2,
                2,
                {"true": [[0, 1]], "{}": [[2, 3]], quoted: [[4, 5]], "[]": [[6, 6]]},
                [],
                "{}",
            ),
            APPLIED,
        ),
        (
            dumps(event("TilePlayed", g2, 3, round=1, player=quoted, tile=[4, 5])),
            Expect("fouled", why="it is {}'s turn: out_of_turn (rejected foul)"),
        ),
        (started("names-3", ["mexican", "left"]), APPLIED),
    ]


def duplicate_keys() -> list[Case]:
    g = "dup-1"
    p3 = passed(g, 3).replace(b'"type":"Passed"', b'"type":"GameStarted","type":"Passed"')
    p4 = passed(g, 4, "bob").replace(b'"seq":4', b'"seq":"x","seq":4')
    p5 = passed(g, 5).replace(b'"seq":5', b'"seq":5,"seq":"x"')
    p6 = passed(g, 5).replace(b'"player":"ann"', b'"player":"zed","player":"ann"')
    p7 = passed(g, 6, "bob").replace(b'"type":"Passed"', b'"type":"Passed","type":"Shuffled"')
    return [
        (started(g), APPLIED),
        (dealt(g), APPLIED),
        (p3, Expect("fouled", why="the last type wins: a Passed; ann could play")),
        (p4, Expect("fouled", why="the last seq wins: 4; bob could play")),
        (p5, rejected("schema_violation", "$.seq", place=False, why="the last seq is 'x'")),
        (p6, Expect("fouled", why="the last player wins: ann (seq 5)")),
        (p7, rejected("unknown_type", "Shuffled", why="the last type wins: Shuffled; seq 6")),
    ]


LOGS = {
    "deep_nesting": deep_nesting,
    "huge_integers": huge_integers,
    "control_characters": control_characters,
    "rfc3339": rfc3339,
    "blank_lines": blank_lines,
    "player_names": player_names,
    "duplicate_keys": duplicate_keys,
}


def render(name: str) -> tuple[bytes, bytes]:
    """Returns the log's bytes and its expectations (JSON Lines, one per record)."""
    cases = LOGS[name]()
    lines: list[bytes] = []
    expected: list[bytes] = []
    for number, (line, expect) in enumerate(cases, start=1):
        lines.append(line)
        if expect is not None:
            expected.append(
                dumps(
                    {
                        "line": number,
                        "outcome": expect.outcome,
                        "reason": expect.reason,
                        "took_place": expect.took_place and expect.outcome not in ("duplicate",),
                        "detail": expect.detail,
                        "why": expect.why,
                        "raw": expect.raw,
                    }
                )
            )
    # The last line of a log may lack its line break: blank_lines ends that way on purpose.
    log = b"\n".join(lines) + (b"" if name == "blank_lines" else b"\n")
    return log, b"\n".join(expected) + b"\n"


def main() -> None:
    """Writes every log and its expectations next to this file."""
    for name in LOGS:
        log, expected = render(name)
        (HERE / f"{name}.jsonl").write_bytes(log)
        (HERE / f"{name}.expected.jsonl").write_bytes(expected)


if __name__ == "__main__":
    main()
