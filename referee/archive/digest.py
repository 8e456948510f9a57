"""The content digest of a table's rows: SHA-256 over a canonical encoding, independent of Parquet.

The store's side computes the same digest from the rows it still holds and compares it with the
archived file's before it drops the partition. The encoding (docs/archive.md):

- a header: ``referee-archive-rows/1``, a zero byte, the table's name, a zero byte;
- then each row, in the order given, each value in column order: ``00`` for NULL, else ``01``
  followed by: int4 as 4 bytes and int8 as 8 bytes, big-endian two's complement; bool as one
  byte ``00``/``01``; text as its UTF-8 and bytea as its bytes, each after its length in 8 bytes
  big-endian; timestamptz as the int8 of microseconds since 1970-01-01 00:00:00 UTC.

A row is checked against its table as it is encoded (``ArchiveRowError``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from referee.archive.tables import Kind, Row, check_row, earlier, table

FORMAT = b"referee-archive-rows/1"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _int4(value: object, parts: list[bytes]) -> None:
    assert isinstance(value, int)
    parts.append(value.to_bytes(4, "big", signed=True))


def _int8(value: object, parts: list[bytes]) -> None:
    assert isinstance(value, int)
    parts.append(value.to_bytes(8, "big", signed=True))


def _bool(value: object, parts: list[bytes]) -> None:
    parts.append(b"\1" if value else b"\0")


def _timestamptz(value: object, parts: list[bytes]) -> None:
    assert isinstance(value, datetime)
    parts.append(micros(value).to_bytes(8, "big", signed=True))


def _sized(value: object, parts: list[bytes]) -> None:
    data = value.encode() if isinstance(value, str) else value
    assert isinstance(data, bytes)
    parts.append(len(data).to_bytes(8, "big"))
    parts.append(data)


_ENCODERS: dict[Kind, Callable[[object, list[bytes]], None]] = {
    Kind.INT4: _int4,
    Kind.INT8: _int8,
    Kind.BOOL: _bool,
    Kind.TIMESTAMPTZ: _timestamptz,
    Kind.TEXT: _sized,
    Kind.BYTEA: _sized,
}
"""How a non-NULL value of each kind is encoded (after its ``01``)."""


def micros(value: datetime) -> int:
    """Microseconds since the Unix epoch of an aware datetime (exact: no float)."""
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


class RowsDigest:
    """An incremental rows digest: feed rows as a cursor gives them, then ``hexdigest()``."""

    def __init__(self, table_name: str, width: int | None = None) -> None:
        found = table(table_name)
        self._table = found if width is None else earlier(found, width)
        self._hash = hashlib.sha256(FORMAT + b"\0" + self._table.name.encode() + b"\0")
        self.count = 0
        """How many rows were fed."""
        self._encoders = tuple(_ENCODERS[c.kind] for c in self._table.columns)

    def update(self, row: Row) -> None:
        check_row(self._table, row, self.count)
        parts: list[bytes] = []
        for encode, value in zip(self._encoders, row, strict=True):
            if value is None:
                parts.append(b"\0")
            else:
                parts.append(b"\1")
                encode(value, parts)
        self._hash.update(b"".join(parts))
        self.count += 1

    def update_all(self, rows: Iterable[Row]) -> None:
        for row in rows:
            self.update(row)

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def rows_digest(table_name: str, rows: Iterable[Row], width: int | None = None) -> str:
    """The hex SHA-256 rows digest of ``rows`` (in the order given) of table ``table_name``
    (of its first ``width`` columns: an earlier archive's, ``tables.EARLIER_WIDTHS``)."""
    digest = RowsDigest(table_name, width)
    digest.update_all(rows)
    return digest.hexdigest()
