"""The rows digest: the encoding docs/archive.md gives, independent of how Parquet stores them."""

from __future__ import annotations

import hashlib
import io
from datetime import UTC, datetime, timedelta, timezone

import pyarrow.parquet as pq
import pytest

from referee.archive import (
    SCHEMAS,
    ArchiveRowError,
    RowsDigest,
    parquet_to_rows,
    rows_digest,
    rows_to_parquet,
)
from tests.unit.archive.samples import at, edge_rows, journal_row


def test_the_digest_is_the_documented_encoding() -> None:
    when = datetime(1970, 1, 1, 0, 0, 1, 2, tzinfo=UTC)  # 1_000_002 microseconds
    row = ("grp", "t\u00e9", -1, 2**63 - 1, 7, when)
    parts = [
        b"referee-archive-rows/1\0consumer_positions\0",
        b"\1", (3).to_bytes(8, "big"), b"grp",
        b"\1", (3).to_bytes(8, "big"), "t\u00e9".encode(),
        b"\1", b"\xff\xff\xff\xff",
        b"\1", b"\x7f", b"\xff" * 7,
        b"\1", (7).to_bytes(8, "big"),
        b"\1", (1_000_002).to_bytes(8, "big"),
    ]  # fmt: skip
    expected = hashlib.sha256(b"".join(parts)).hexdigest()
    assert rows_digest("consumer_positions", [row]) == expected


def test_null_bool_and_bytea_are_encoded_as_documented() -> None:
    row = (1, 2, None, "r", "b", datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC), None, 0)
    parts = [
        b"referee-archive-rows/1\0dead_letters\0",
        b"\1", (1).to_bytes(8, "big"), b"\1", (2).to_bytes(8, "big"),
        b"\0",
        b"\1", (1).to_bytes(8, "big"), b"r", b"\1", (1).to_bytes(8, "big"), b"b",
        b"\1", (-1).to_bytes(8, "big", signed=True),
        b"\0",
        b"\1", (0).to_bytes(4, "big"),
    ]  # fmt: skip
    expected = hashlib.sha256(b"".join(parts)).hexdigest()
    assert rows_digest("dead_letters", [row]) == expected
    journal = journal_row(1, at(0), took_place=False)
    with_true = journal_row(1, at(0), took_place=True)
    assert rows_digest("journal", [journal]) != rows_digest("journal", [with_true])


@pytest.mark.parametrize("name", sorted(edge_rows()))
def test_the_digest_of_the_rows_read_back_is_the_digest_of_the_rows_written(name: str) -> None:
    rows = edge_rows()[name]
    assert rows_digest(name, parquet_to_rows(name, rows_to_parquet(name, rows))) == rows_digest(
        name, rows
    )


def test_the_digest_does_not_depend_on_the_parquet_encoding() -> None:
    rows = edge_rows()["journal"]
    ours = rows_to_parquet("journal", rows)
    table = pq.read_table(io.BytesIO(ours))
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="snappy", use_dictionary=False, row_group_size=1)
    other = sink.getvalue()
    assert other != ours
    assert rows_digest("journal", parquet_to_rows("journal", other)) == rows_digest("journal", rows)
    assert pq.read_table(io.BytesIO(other)).schema.remove_metadata().equals(SCHEMAS["journal"])


def test_the_same_instant_in_another_zone_gives_the_same_digest() -> None:
    zone = timezone(timedelta(hours=-3))
    a = journal_row(1, at(1))
    b = journal_row(1, at(1).astimezone(zone))
    assert rows_digest("journal", [a]) == rows_digest("journal", [b])


def test_every_value_counts() -> None:
    rows = edge_rows()["journal"]
    base = rows_digest("journal", rows)
    seen = {base}
    for column in range(len(rows[0])):
        changed = list(rows[2])
        value = changed[column]
        if isinstance(value, bool):
            changed[column] = not value
        elif isinstance(value, int):
            changed[column] = value + 1
        elif isinstance(value, str):
            changed[column] = value + "x"
        elif isinstance(value, bytes):
            changed[column] = value + b"x"
        elif isinstance(value, datetime):
            changed[column] = value - timedelta(microseconds=1)
        else:
            changed[column] = "x"
        digest = rows_digest("journal", [rows[0], rows[1], tuple(changed), rows[3]])
        assert digest not in seen, f"column {column}"
        seen.add(digest)


def test_null_is_not_empty_and_boundaries_between_values_count() -> None:
    empty, x = ("g", 1, "", 1, at(0)), ("g", 1, "x", 1, at(0))
    assert rows_digest("game_versions", [empty]) != rows_digest("game_versions", [x])
    key_null = (1, 1, None, "r", "b", at(0), None, None)
    key_empty = (1, 1, b"", "r", "b", at(0), None, None)
    assert rows_digest("dead_letters", [key_null]) != rows_digest("dead_letters", [key_empty])
    split1 = (1, 1, None, "ab", "c", at(0), None, None)
    split2 = (1, 1, None, "a", "bc", at(0), None, None)
    assert rows_digest("dead_letters", [split1]) != rows_digest("dead_letters", [split2])


def test_order_count_and_table_count() -> None:
    rows = edge_rows()["verdicts"]
    assert rows_digest("verdicts", rows) != rows_digest("verdicts", rows[::-1])
    assert rows_digest("verdicts", rows) != rows_digest("verdicts", rows[:-1])
    assert rows_digest("verdicts", []) != rows_digest("game_versions", [])


def test_the_incremental_digest_is_the_same_and_counts_rows() -> None:
    rows = edge_rows()["game_versions"]
    digest = RowsDigest("game_versions")
    for row in rows:
        digest.update(row)
    assert digest.count == len(rows)
    assert digest.hexdigest() == rows_digest("game_versions", rows)


def test_a_bad_row_is_refused_not_digested() -> None:
    with pytest.raises(ArchiveRowError, match="row 1, column version"):
        rows_digest("game_versions", [("g", 1, "", 1, at(0)), ("g", "2", "", 1, at(0))])
