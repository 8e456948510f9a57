"""Rows to Parquet bytes and back, with one fixed Arrow schema per table.

The bytes are deterministic: the same rows (in the same order) give the same bytes with the same
pyarrow version, so a rerun of an interrupted archive run writes identical files. Every writer
option that could change the bytes is spelled out below rather than left to pyarrow's defaults.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Final

import pyarrow as pa
import pyarrow.parquet as pq

from referee.archive.errors import VerificationError
from referee.archive.tables import (
    EARLIER_WIDTHS,
    TABLES,
    Kind,
    Row,
    Table,
    check_row,
    earlier,
    table,
)

ARROW_TYPES: Final = {
    Kind.INT4: pa.int32(),
    Kind.INT8: pa.int64(),
    Kind.TEXT: pa.string(),
    Kind.BYTEA: pa.binary(),
    Kind.BOOL: pa.bool_(),
    Kind.TIMESTAMPTZ: pa.timestamp("us", tz="UTC"),
}
"""PostgreSQL type -> Arrow type: bytea is binary, timestamptz is microseconds in UTC."""


def arrow_schema(t: Table) -> pa.Schema:
    """The Arrow schema of a table: its columns in order, NOT NULL ones not nullable."""
    return pa.schema(
        [pa.field(c.name, ARROW_TYPES[c.kind], nullable=c.nullable) for c in t.columns]
    )


SCHEMAS: Final[dict[str, pa.Schema]] = {name: arrow_schema(t) for name, t in TABLES.items()}
"""The Arrow schema of each archived table, by name."""

COMPRESSION: Final = "zstd"
COMPRESSION_LEVEL: Final = 3
ROW_GROUP_ROWS: Final = 65_536
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def rows_to_parquet(table_name: str, rows: Sequence[Row]) -> bytes:
    """The Parquet file (zstd) of ``rows`` of ``table_name``, rows in the order given.

    Each row is checked against the table first (``ArchiveRowError`` names the row and column).
    """
    t = table(table_name)
    for number, row in enumerate(rows):
        check_row(t, row, number)
    schema = SCHEMAS[t.name]
    columns = [
        pa.array([row[i] for row in rows], type=field.type) for i, field in enumerate(schema)
    ]
    arrow_table = pa.Table.from_arrays(columns, schema=schema)
    sink = io.BytesIO()
    pq.write_table(
        arrow_table,
        sink,
        row_group_size=ROW_GROUP_ROWS,
        version="2.6",
        data_page_version="1.0",
        use_dictionary=True,
        compression=COMPRESSION,
        compression_level=COMPRESSION_LEVEL,
        write_statistics=True,
        store_schema=True,
        write_page_index=False,
        write_page_checksum=True,
    )
    return sink.getvalue()


def _column_values(column: pa.ChunkedArray, kind: Kind) -> list[object]:
    if kind is Kind.TIMESTAMPTZ:
        # built from the integer microseconds: exact, and always tzinfo=UTC
        values: list[int | None] = column.cast(pa.int64()).to_pylist()
        return [None if v is None else _EPOCH + timedelta(microseconds=v) for v in values]
    result: list[object] = column.to_pylist()
    return result


def parquet_to_rows(table_name: str, data: bytes) -> list[Row]:
    """The rows of a Parquet file written by ``rows_to_parquet`` for ``table_name``, in order,
    each of the table's columns (an earlier archive's missing last columns read as NULL).

    ``VerificationError`` when the bytes are not Parquet or their schema is not the table's.
    """
    width, rows = read_parquet(table_name, data)
    return padded(table_name, width, rows)


def padded(table_name: str, width: int, rows: list[Row]) -> list[Row]:
    """Rows of ``width`` columns (an earlier archive's) with NULL for the columns after."""
    missing = len(table(table_name).columns) - width
    return rows if not missing else [row + (None,) * missing for row in rows]


def read_parquet(table_name: str, data: bytes) -> tuple[int, list[Row]]:
    """The column count of a Parquet file of ``table_name`` and its rows as written: the
    table's columns, or the first of them an earlier release archived (``EARLIER_WIDTHS``).

    ``VerificationError`` when the bytes are not Parquet or their schema is neither.
    """
    t = table(table_name)
    try:
        arrow_table = pq.read_table(io.BytesIO(data))
    except (pa.ArrowException, OSError) as error:
        raise VerificationError(f"not a readable Parquet file of {t.name}: {error}") from error
    found = arrow_table.schema.remove_metadata()
    for width in (len(t.columns), *EARLIER_WIDTHS.get(t.name, ())):
        if found.equals(
            SCHEMAS[t.name] if width == len(t.columns) else arrow_schema(earlier(t, width))
        ):
            break
    else:
        raise VerificationError(f"the file's schema is not {t.name}'s: {found}")
    columns = [
        _column_values(arrow_table.column(i), c.kind) for i, c in enumerate(t.columns[:width])
    ]
    return width, list(zip(*columns, strict=True)) if columns and arrow_table.num_rows else []
