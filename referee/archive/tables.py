"""The column sets of the five archived tables, exactly as PostgreSQL has them.

A row is a tuple in the column order below, as asyncpg returns it (a ``Record`` turned into a
tuple): ``int`` for int4/int8, ``str`` for text, ``bytes`` for bytea, ``bool`` for bool, an aware
``datetime`` for timestamptz, ``None`` for NULL.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
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
        _n("referee_version", T),
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

EARLIER_WIDTHS: Final[dict[str, tuple[int, ...]]] = {"journal": (15,)}
"""The column counts of each table's earlier archives, which this release still reads: the
journal had 15 columns up to release 0.3.0 (migration 0011 added ``referee_version``). A
column added later is always nullable and last, and reads as NULL from an earlier file."""


def earlier(t: Table, width: int) -> Table:
    """The table as its archives of ``width`` columns have it (its first ``width``)."""
    return replace(t, columns=t.columns[:width])


TIME_COLUMN: Final = "recorded_at"
"""The column every archived table is partitioned by."""


def table(name: str) -> Table:
    """The table of that name, or ``ArchiveError`` naming the ones there are."""
    try:
        return TABLES[name]
    except KeyError:
        raise ArchiveError(f"no archived table {name!r} (there are: {', '.join(TABLES)})") from None


_INT_BOUNDS: Final = {Kind.INT4: (-(2**31), 2**31 - 1), Kind.INT8: (-(2**63), 2**63 - 1)}


def _int_problem(kind: Kind) -> Callable[[object], str | None]:
    low, high = _INT_BOUNDS[kind]

    def problem(value: object) -> str | None:
        if not isinstance(value, int) or isinstance(value, bool):
            return f"{kind.value} needs an int, got {type(value).__name__}"
        if not low <= value <= high:
            return f"{value} is outside {kind.value}"
        return None

    return problem


def _text_problem(value: object) -> str | None:
    if not isinstance(value, str):
        return f"text needs a str, got {type(value).__name__}"
    try:
        value.encode()
    except UnicodeEncodeError:
        return "text that is not valid Unicode (a lone surrogate)"
    return None


def _bytea_problem(value: object) -> str | None:
    if not isinstance(value, bytes):
        return f"bytea needs bytes, got {type(value).__name__}"
    return None


def _bool_problem(value: object) -> str | None:
    if not isinstance(value, bool):
        return f"bool needs a bool, got {type(value).__name__}"
    return None


def _timestamptz_problem(value: object) -> str | None:
    if not isinstance(value, datetime):
        return f"timestamptz needs a datetime, got {type(value).__name__}"
    if value.tzinfo is None or value.utcoffset() is None:
        return "a naive datetime: timestamptz needs an aware one"
    return None


_PROBLEMS: Final[dict[Kind, Callable[[object], str | None]]] = {
    Kind.INT4: _int_problem(Kind.INT4),
    Kind.INT8: _int_problem(Kind.INT8),
    Kind.TEXT: _text_problem,
    Kind.BYTEA: _bytea_problem,
    Kind.BOOL: _bool_problem,
    Kind.TIMESTAMPTZ: _timestamptz_problem,
}
"""What is wrong with a non-NULL value for a column of each kind (None: nothing)."""


def check_value(table: Table, column: Column, value: object, row_number: int) -> None:
    """Refuse a value its column cannot hold, naming the table, row (0-based) and column."""
    if value is None:
        why: str | None = None if column.nullable else "NULL in a NOT NULL column"
    else:
        why = _PROBLEMS[column.kind](value)
    if why is not None:
        raise ArchiveRowError(f"{table.name} row {row_number}, column {column.name}: {why}")


_CHECKS: dict[tuple[str, int], tuple[tuple[Column, Callable[[object], str | None]], ...]] = {}


def _checks(table: Table) -> tuple[tuple[Column, Callable[[object], str | None]], ...]:
    """Each column of ``table`` with the check of its kind (looked up once per table: a row's
    values are checked without hashing an enum per value); by name and width, an earlier
    archive's columns being the first of its table's."""
    key = (table.name, len(table.columns))
    found = _CHECKS.get(key)
    if found is None:
        found = _CHECKS[key] = tuple((c, _PROBLEMS[c.kind]) for c in table.columns)
    return found


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
    for (column, problem), value in zip(_checks(table), row, strict=True):
        if value is None:
            if not column.nullable:
                check_value(table, column, value, row_number)  # raises, naming the column
        elif problem(value) is not None:
            check_value(table, column, value, row_number)
