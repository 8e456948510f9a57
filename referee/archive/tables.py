"""The column sets of the five archived tables, exactly as PostgreSQL has them.

A row is a tuple in the column order below, as asyncpg returns it (a ``Record`` turned into a
tuple): ``int`` for int4/int8, ``str`` for text, ``bytes`` for bytea, ``bool`` for bool, an aware
``datetime`` for timestamptz, ``None`` for NULL.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Final

from referee.archive.errors import ArchiveError, ArchiveRowError


class Kind(Enum):
    """A PostgreSQL column type the archive holds."""

    INT4 = "int4"
    INT8 = "int8"
    TEXT = "text"
    BYTEA = "bytea"
    BOOL = "bool"
    TIMESTAMPTZ = "timestamptz"


Row = tuple[object, ...]
"""One row of a table, in its column order."""


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: Kind
    nullable: bool = False


@dataclass(frozen=True, slots=True)
class Table:
    """A table's columns, the column that orders it by journal row, and its natural order."""

    name: str
    columns: tuple[Column, ...]
    journal_id: str
    """``id`` for the journal, ``journal_id`` for the others."""
    order: tuple[str, ...]
    """The reading order: the journal id first, then the table's natural order."""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def index(self, column: str) -> int:
        return self.names.index(column)


def _c(name: str, kind: Kind) -> Column:
    return Column(name, kind)


def _n(name: str, kind: Kind) -> Column:
    """A nullable column."""
    return Column(name, kind, nullable=True)


I4, I8, T, B, BO, TS = Kind.INT4, Kind.INT8, Kind.TEXT, Kind.BYTEA, Kind.BOOL, Kind.TIMESTAMPTZ

JOURNAL = Table(
    "journal",
    (
        _c("id", I8),
        _c("source_topic", T),
        _c("source_partition", I4),
        _c("source_offset", I8),
        _n("game_id", T),
        _n("seq", I8),
        _n("event_id", T),
        _n("event_type", T),
        _c("outcome", T),
        _n("reason", T),
        _c("took_place", BO),
        _c("fingerprint", B),
        _c("raw", B),
        _c("recorded_at", TS),
        _n("max_event_bytes", I8),
    ),
    journal_id="id",
    order=("id",),
)

GAME_VERSIONS = Table(
    "game_versions",
    (
        _c("game_id", T),
        _c("version", I8),
        _c("state", T),
        _c("journal_id", I8),
        _c("recorded_at", TS),
    ),
    journal_id="journal_id",
    order=("journal_id", "game_id", "version"),
)

VERDICTS = Table(
    "verdicts",
    (
        _c("position", I8),
        _c("verdict_id", T),
        _c("game_id", T),
        _c("type", T),
        _c("cause_seq", I8),
        _c("journal_id", I8),
        _c("body", T),
        _c("recorded_at", TS),
        _n("source_topic", T),
        _n("source_partition", I4),
    ),
    journal_id="journal_id",
    order=("journal_id", "position"),
)

DEAD_LETTERS = Table(
    "dead_letters",
    (
        _c("position", I8),
        _c("journal_id", I8),
        _n("key", B),
        _c("reason", T),
        _c("body", T),
        _c("recorded_at", TS),
        _n("source_topic", T),
        _n("source_partition", I4),
    ),
    journal_id="journal_id",
    order=("journal_id", "position"),
)

CONSUMER_POSITIONS = Table(
    "consumer_positions",
    (
        _c("group_id", T),
        _c("topic", T),
        _c("partition", I4),
        _c("offset", I8),
        _c("journal_id", I8),
        _c("recorded_at", TS),
    ),
    journal_id="journal_id",
    order=("journal_id", "group_id", "topic", "partition", "offset"),
)

TABLES: Final[dict[str, Table]] = {
    t.name: t for t in (JOURNAL, GAME_VERSIONS, VERDICTS, DEAD_LETTERS, CONSUMER_POSITIONS)
}
"""The archived tables by name."""

TIME_COLUMN: Final = "recorded_at"
"""The column every archived table is partitioned by."""


def table(name: str) -> Table:
    """The table of that name, or ``ArchiveError`` naming the ones there are."""
    try:
        return TABLES[name]
    except KeyError:
        raise ArchiveError(f"no archived table {name!r} (there are: {', '.join(TABLES)})") from None


_INT_BOUNDS: Final = {Kind.INT4: (-(2**31), 2**31 - 1), Kind.INT8: (-(2**63), 2**63 - 1)}


def check_value(table: Table, column: Column, value: object, row_number: int) -> None:
    """Refuse a value its column cannot hold, naming the table, row (0-based) and column."""

    def bad(why: str) -> ArchiveRowError:
        return ArchiveRowError(f"{table.name} row {row_number}, column {column.name}: {why}")

    if value is None:
        if not column.nullable:
            raise bad("NULL in a NOT NULL column")
        return
    kind = column.kind
    if kind in _INT_BOUNDS:
        if not isinstance(value, int) or isinstance(value, bool):
            raise bad(f"{kind.value} needs an int, got {type(value).__name__}")
        low, high = _INT_BOUNDS[kind]
        if not low <= value <= high:
            raise bad(f"{value} is outside {kind.value}")
    elif kind is Kind.TEXT:
        if not isinstance(value, str):
            raise bad(f"text needs a str, got {type(value).__name__}")
        try:
            value.encode()
        except UnicodeEncodeError:
            raise bad("text that is not valid Unicode (a lone surrogate)") from None
    elif kind is Kind.BYTEA:
        if not isinstance(value, bytes):
            raise bad(f"bytea needs bytes, got {type(value).__name__}")
    elif kind is Kind.BOOL:
        if not isinstance(value, bool):
            raise bad(f"bool needs a bool, got {type(value).__name__}")
    elif kind is Kind.TIMESTAMPTZ:
        if not isinstance(value, datetime):
            raise bad(f"timestamptz needs a datetime, got {type(value).__name__}")
        if value.tzinfo is None or value.utcoffset() is None:
            raise bad("a naive datetime: timestamptz needs an aware one")


def check_row(table: Table, row: Row, row_number: int) -> None:
    """Refuse a row that is not a tuple of the table's arity with values its columns hold."""
    if not isinstance(row, tuple):
        raise ArchiveRowError(
            f"{table.name} row {row_number}: a row is a tuple, got {type(row).__name__}"
        )
    if len(row) != len(table.columns):
        raise ArchiveRowError(
            f"{table.name} row {row_number}: {len(row)} values for {len(table.columns)} columns"
        )
    for column, value in zip(table.columns, row, strict=True):
        check_value(table, column, value, row_number)
