"""Rows of every archived table for the archive's tests: NULLs, every byte value, the integer
bounds, control characters and odd whitespace in text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from referee.archive import (
    TABLES,
    Archive,
    Row,
    Segment,
    make_run_id,
    rows_digest,
    segment_name,
    verify_written,
    write_manifest,
    write_segment,
)

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
        "referee_version": "0.4.0",
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


# An archive of two runs: journal ids 1, 2, 4 in the first partition and 3, 5, 6 in the second
# (batches committed across the cut: the id ranges interleave, no id is in both), 7 to 9 in the
# third, and a fourth partition without rows.
LAYOUT: dict[int, list[tuple[int, float]]] = {
    0: [(1, 0.5), (2, 1.0), (4, 5.9)],
    6: [(3, 6.0), (5, 6.5), (6, 7.0)],
    12: [(7, 12.0), (8, 12.5), (9, 17.9)],
    18: [],
}
RUNS = [(0, 6), (12, 18)]


def rows_for(journal: list[tuple[int, float]]) -> dict[str, list[Row]]:
    """Rows of every table for journal rows ``(id, hours)``, each table in reading order."""
    out: dict[str, list[Row]] = {name: [] for name in edge_rows()}
    for id_, hours in journal:
        when = at(hours)
        out["journal"].append(journal_row(id_, when))
        out["game_versions"].append((f"g{id_ % 2}", id_, "{}", id_, when))
        out["game_versions"].append((f"g{id_ % 2 + 2}", id_, "{}", id_, when))
        for k in range(2):
            position = id_ * 10 + k
            out["verdicts"].append(
                (position, f"v{position}", "g", "Score", id_, id_, "{}", when, "t", 0)
            )
        if id_ % 2:
            out["dead_letters"].append((id_, id_, b"k", "bad_json", "{}", when, "t", 0))
        out["consumer_positions"].append(("referee", "t", 0, id_, id_, when))
    return out


def build_archive(archive: Archive) -> dict[str, list[Row]]:
    """Write ``LAYOUT`` in the two ``RUNS`` (manifests included); return each table's rows in
    reading order across the whole archive."""
    every: dict[str, list[Row]] = {name: [] for name in edge_rows()}
    for run in RUNS:
        entries = []
        segments = []
        for hours in run:
            seg = segment(hours)
            segments.append(seg)
            for name, rows in rows_for(LAYOUT[hours]).items():
                entry = write_segment(archive, name, seg, rows)
                verify_written(archive, entry, rows_digest(name, rows))
                entries.append(entry)
                every[name].extend(rows)
        write_manifest(archive, make_run_id(at(30 + run[0]), segments), entries)
    for name, table in TABLES.items():
        keys = [table.index(c) for c in table.order]
        every[name].sort(key=lambda row: tuple(row[i] for i in keys))
    return every
