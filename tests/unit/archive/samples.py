"""Rows of every archived table for the archive's tests: NULLs, every byte value, the integer
bounds, control characters and odd whitespace in text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from referee.archive import Row, Segment, segment_name

I8_MIN, I8_MAX = -(2**63), 2**63 - 1
I4_MIN, I4_MAX = -(2**31), 2**31 - 1
ALL_BYTES = bytes(range(256))
ODD_TEXT = "\x01\x1f\x7f\t\n\r\x0b\x0c \u00a0\u2028\u2029\u3000\ufeff\u200b e\u0301 🂡 \\\"'"
DAY = datetime(2026, 12, 5, tzinfo=UTC)


def segment(hours: int, length: int = 6) -> Segment:
    """The partition ``[DAY + hours, DAY + hours + length)``."""
    start = DAY + timedelta(hours=hours)
    return Segment(segment_name(start), start, start + timedelta(hours=length))


def at(hours: float) -> datetime:
    return DAY + timedelta(hours=hours)


def journal_row(id_: int, when: datetime, **changes: object) -> Row:
    row: dict[str, object] = {
        "id": id_,
        "source_topic": "domino.game-events",
        "source_partition": 3,
        "source_offset": id_ * 10,
        "game_id": f"g{id_ % 3}",
        "seq": id_,
        "event_id": f"e{id_}",
        "event_type": "TilePlayed",
        "outcome": "applied",
        "reason": None,
        "took_place": True,
        "fingerprint": id_.to_bytes(8, "big", signed=True),
        "raw": b'{"type":"TilePlayed"}',
        "recorded_at": when,
        "max_event_bytes": 163840,
    }
    row.update(changes)
    return tuple(row.values())


def edge_rows() -> dict[str, list[Row]]:
    """For each table, rows inside ``segment(0)`` in reading order with every edge case."""
    t0, t1 = at(0), at(5) + timedelta(microseconds=999_999)
    other_zone = timezone(timedelta(hours=-7, minutes=-30))
    return {
        "journal": [
            journal_row(I8_MIN, t0, source_partition=I4_MIN, source_offset=I8_MIN, seq=I8_MIN),
            journal_row(
                -1,
                t0,
                game_id=None,
                seq=None,
                event_id=None,
                event_type=None,
                outcome="rejected",
                reason="bad_json",
                took_place=False,
                fingerprint=b"",
                raw=ALL_BYTES,
                max_event_bytes=None,
            ),
            journal_row(0, t1.astimezone(other_zone), game_id="", event_id=ODD_TEXT, raw=b"\0"),
            journal_row(
                I8_MAX, t1, source_partition=I4_MAX, source_offset=I8_MAX, max_event_bytes=I8_MAX
            ),
        ],
        "game_versions": [
            ("g1", I8_MIN, "", I8_MIN, t0),
            ("g1", 0, ODD_TEXT, 0, t0),
            ("g2", 0, '{"a":1}', 0, t1),
            (ODD_TEXT, I8_MAX, "{}", I8_MAX, t1),
        ],
        "verdicts": [
            (I8_MIN, "v1", "g1", "Foul", I8_MIN, I8_MIN, ODD_TEXT, t0, None, None),
            (0, "v2", "g1", "Score", 0, 7, "{}", t0, "domino.game-events", I4_MIN),
            (I8_MAX, "", "", "", I8_MAX, I8_MAX, "", t1, "", I4_MAX),
        ],
        "dead_letters": [
            (1, I8_MIN, None, "bad_json", "{}", t0, None, None),
            (2, 5, b"", ODD_TEXT, ODD_TEXT, t0, "t", 0),
            (I8_MAX, I8_MAX, ALL_BYTES, "", "", t1, "domino.game-events", I4_MAX),
        ],
        "consumer_positions": [
            ("referee", "domino.game-events", I4_MIN, I8_MIN, I8_MIN, t0),
            (ODD_TEXT, "", 0, 0, 0, t0),
            ("referee", "domino.game-events", I4_MAX, I8_MAX, I8_MAX, t1),
        ],
    }
