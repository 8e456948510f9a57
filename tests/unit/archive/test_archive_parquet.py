"""Rows to Parquet and back: every table, every edge value, exact schemas, same bytes each time."""

from __future__ import annotations

import io
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from referee.archive import (
    SCHEMAS,
    TABLES,
    ArchiveRowError,
    VerificationError,
    parquet_to_rows,
    rows_to_parquet,
)
from tests.unit.archive.samples import ALL_BYTES, at, edge_rows, journal_row

# The column sets of PostgreSQL, as issue 35 gives them: a change here is a change of format.
POSTGRES_COLUMNS = {
    "journal": "id int8, source_topic text, source_partition int4, source_offset int8, "
    "game_id text NULL, seq int8 NULL, event_id text NULL, event_type text NULL, outcome text, "
    "reason text NULL, took_place bool, fingerprint bytea, raw bytea, recorded_at timestamptz, "
    "max_event_bytes int8 NULL, referee_version text NULL",
    "game_versions": "game_id text, version int8, state text, journal_id int8, "
    "recorded_at timestamptz",
    "verdicts": "position int8, verdict_id text, game_id text, type text, cause_seq int8, "
    "journal_id int8, body text, recorded_at timestamptz, source_topic text NULL, "
    "source_partition int4 NULL",
    "dead_letters": "position int8, journal_id int8, key bytea NULL, reason text, body text, "
    "recorded_at timestamptz, source_topic text NULL, source_partition int4 NULL",
    "consumer_positions": "group_id text, topic text, partition int4, offset int8, "
    "journal_id int8, recorded_at timestamptz",
}
ARROW = {
    "int8": pa.int64(),
    "int4": pa.int32(),
    "text": pa.string(),
    "bytea": pa.binary(),
    "bool": pa.bool_(),
    "timestamptz": pa.timestamp("us", tz="UTC"),
}


@pytest.mark.parametrize("name", sorted(POSTGRES_COLUMNS))
def test_each_schema_is_the_postgres_column_set(name: str) -> None:
    expected = []
    for spec in POSTGRES_COLUMNS[name].split(", "):
        column, kind, *null = spec.split(" ")
        expected.append(pa.field(column, ARROW[kind], nullable=bool(null)))
    assert SCHEMAS[name].equals(pa.schema(expected))
    assert set(SCHEMAS) == set(POSTGRES_COLUMNS) == set(TABLES)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_table_round_trips_with_its_edge_values(name: str) -> None:
    rows = edge_rows()[name]
    data = rows_to_parquet(name, rows)
    back = parquet_to_rows(name, data)
    assert back == rows
    # the same types, not only equal values (True == 1, a datetime in another zone == UTC)
    for got, want in zip(back, rows, strict=True):
        assert [type(v) for v in got] == [type(v) for v in want]
        for value in got:
            if isinstance(value, datetime):
                assert value.utcoffset() == timedelta(0)
    assert pq.read_table(io.BytesIO(data)).schema.remove_metadata().equals(SCHEMAS[name])


def test_the_bytes_with_all_256_values_and_the_odd_text_survive() -> None:
    rows = edge_rows()["journal"]
    back = parquet_to_rows("journal", rows_to_parquet("journal", rows))
    assert back[1][12] == ALL_BYTES
    assert back[2][6] == rows[2][6]
    assert len(str(back[2][6])) == len(str(rows[2][6]))


def test_an_instant_in_another_zone_is_kept_as_the_same_instant_in_utc() -> None:
    zone = timezone(timedelta(hours=5, minutes=45))
    when = datetime(2026, 12, 5, 5, 45, 0, 1, tzinfo=zone)
    (back,) = parquet_to_rows("journal", rows_to_parquet("journal", [journal_row(1, when)]))
    assert back[13] == when
    assert back[13] == datetime(2026, 12, 5, 0, 0, 0, 1, tzinfo=UTC)
    assert isinstance(back[13], datetime)
    assert back[13].tzinfo is UTC


def test_rows_keep_the_order_they_were_given_in() -> None:
    rows = [journal_row(i, at(1)) for i in (5, 1, 9, 2)]
    assert parquet_to_rows("journal", rows_to_parquet("journal", rows)) == rows


def test_no_rows_is_a_file_too() -> None:
    data = rows_to_parquet("verdicts", [])
    assert parquet_to_rows("verdicts", data) == []
    assert pq.read_table(io.BytesIO(data)).schema.remove_metadata().equals(SCHEMAS["verdicts"])


def test_the_columns_are_compressed_with_zstd() -> None:
    metadata = pq.ParquetFile(io.BytesIO(rows_to_parquet("journal", edge_rows()["journal"])))
    group = metadata.metadata.row_group(0)
    assert {group.column(i).compression for i in range(group.num_columns)} == {"ZSTD"}


def test_the_same_rows_give_the_same_bytes_in_this_process_and_another() -> None:
    rows = edge_rows()
    first = {name: rows_to_parquet(name, r) for name, r in rows.items()}
    again = {name: rows_to_parquet(name, list(r)) for name, r in edge_rows().items()}
    assert first == again
    script = (
        "import sys, hashlib\n"
        "from referee.archive import rows_to_parquet\n"
        "from tests.unit.archive.samples import edge_rows\n"
        "for name, rows in sorted(edge_rows().items()):\n"
        "    print(name, hashlib.sha256(rows_to_parquet(name, rows)).hexdigest())\n"
    )
    other = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PYTHONPATH": "."},
    ).stdout
    import hashlib

    mine = "".join(f"{name} {hashlib.sha256(first[name]).hexdigest()}\n" for name in sorted(first))
    assert other == mine


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"recorded_at": datetime(2026, 12, 5)}, "naive datetime"),  # noqa: DTZ001
        ({"source_partition": 2**31}, "outside int4"),
        ({"id": 2**63}, "outside int8"),
        ({"id": True}, "needs an int"),
        ({"took_place": 1}, "needs a bool"),
        ({"outcome": None}, "NULL in a NOT NULL column"),
        ({"raw": "text"}, "needs bytes"),
        ({"game_id": b"g1"}, "needs a str"),
        ({"event_id": "\ud800"}, "lone surrogate"),
    ],
)
def test_a_value_its_column_cannot_hold_is_refused(change: dict[str, object], message: str) -> None:
    with pytest.raises(ArchiveRowError, match=message):
        rows_to_parquet("journal", [journal_row(1, at(1)), journal_row(2, at(1), **change)])


def test_a_row_of_the_wrong_arity_is_refused() -> None:
    with pytest.raises(ArchiveRowError, match="5 values for 6 columns"):
        rows_to_parquet("consumer_positions", [("g", "t", 0, 0, 0)])


def test_a_file_of_another_table_is_not_read_as_this_one() -> None:
    data = rows_to_parquet("verdicts", edge_rows()["verdicts"])
    with pytest.raises(VerificationError, match="schema"):
        parquet_to_rows("dead_letters", data)
    with pytest.raises(VerificationError, match="not a readable Parquet"):
        parquet_to_rows("verdicts", data[:-10])


def _earlier_journal_file(rows: list[tuple[object, ...]], width: int = 15) -> bytes:
    """A journal file of its first ``width`` columns: 15 is how release 0.3.0 archived it
    (no ``referee_version``)."""
    from referee.archive.parquet import arrow_schema
    from referee.archive.tables import earlier

    schema = arrow_schema(earlier(TABLES["journal"], width))
    columns = [pa.array([r[i] for r in rows], type=f.type) for i, f in enumerate(schema)]
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_arrays(columns, schema=schema), sink)
    return sink.getvalue()


def test_an_earlier_journal_archive_reads_with_no_writer() -> None:
    rows = [journal_row(i, at(1))[:15] for i in (1, 2)]
    back = parquet_to_rows("journal", _earlier_journal_file(rows))
    assert back == [(*r, None) for r in rows]


def test_a_file_with_a_column_set_no_release_wrote_is_refused() -> None:
    rows = [journal_row(i, at(1))[:14] for i in (1, 2)]  # without max_event_bytes either
    with pytest.raises(VerificationError, match="schema is not journal's"):
        parquet_to_rows("journal", _earlier_journal_file(rows, 14))
