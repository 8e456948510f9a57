"""Writing one time partition of one table as one Parquet file."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime

from referee.archive.digest import rows_digest
from referee.archive.errors import ArchiveRowError, SegmentAlreadyArchivedError
from referee.archive.layout import Segment, segment_path
from referee.archive.manifest import ManifestEntry, archived_segments
from referee.archive.parquet import rows_to_parquet
from referee.archive.storage import Archive
from referee.archive.tables import TIME_COLUMN, Row, Table, table


def check_segment_rows(t: Table, segment: Segment, rows: Sequence[Row]) -> None:
    """Refuse rows outside ``segment``'s bounds or out of the table's reading order
    (``Table.order``: the journal id, then the natural order; journal ids strictly increasing in
    the journal). Values are checked before (``check_row``)."""
    time_at = t.index(TIME_COLUMN)
    keys = [t.index(c) for c in t.order]
    previous: tuple[object, ...] | None = None
    for number, row in enumerate(rows):
        moment = row[time_at]
        assert isinstance(moment, datetime)
        if not segment.holds(moment):
            raise ArchiveRowError(
                f"{t.name} row {number}: recorded_at {moment.isoformat()} is outside segment "
                f"{segment.name} [{segment.start.isoformat()}, {segment.end.isoformat()})"
            )
        key = tuple(row[i] for i in keys)
        if previous is not None and (key < previous or (t.name == "journal" and key == previous)):
            raise ArchiveRowError(
                f"{t.name} row {number}: out of order: {dict(zip(t.order, key, strict=True))} "
                f"after {dict(zip(t.order, previous, strict=True))} (order by {', '.join(t.order)}"
                ', text in code point order: COLLATE "C")'
            )
        previous = key


def journal_id_bounds(t: Table, rows: Sequence[Row]) -> tuple[int | None, int | None]:
    """The smallest and largest journal id of ``rows`` (None, None without rows)."""
    at = t.index(t.journal_id)
    ids = [row[at] for row in rows]
    if not ids:
        return None, None
    low, high = min(ids), max(ids)  # type: ignore[type-var]
    assert isinstance(low, int)
    assert isinstance(high, int)
    return low, high


def write_segment(
    archive: Archive, table_name: str, segment: Segment, rows: Sequence[Row]
) -> ManifestEntry:
    """Write every row of one time partition of ``table_name`` as one Parquet file, atomically,
    at ``segment_path(table_name, segment)``, and return its manifest entry (not yet in any
    manifest: ``write_manifest`` lists the run's entries last).

    ``rows`` are the partition's whole content, in the table's reading order (``Table.order``),
    each ``recorded_at`` inside ``[segment.start, segment.end)``; a partition without rows is
    written too (an empty file), so that every dropped partition is accounted for. Refused: a bad
    row (``ArchiveRowError``), a segment that a manifest already lists
    (``SegmentAlreadyArchivedError``). A file left by a run that stopped before its manifest is
    replaced. Then call ``verify_written`` with the digest of the rows the store still holds.
    """
    t = table(table_name)
    data = rows_to_parquet(t.name, rows)  # checks every value first
    check_segment_rows(t, segment, rows)
    path = segment_path(t.name, segment)
    if archive.exists(path):
        listed = archived_segments(archive).get((t.name, segment.name))
        if listed is not None:
            raise SegmentAlreadyArchivedError(
                f"{t.name} segment {segment.name} is already archived by run {listed[0]} ({path})"
            )
    first, last = journal_id_bounds(t, rows)
    entry = ManifestEntry(
        table=t.name,
        path=path,
        segment=segment.name,
        start=segment.start,
        end=segment.end,
        rows=len(rows),
        first_journal_id=first,
        last_journal_id=last,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        rows_digest=rows_digest(t.name, rows),
    )
    archive.write_bytes(path, data)
    return entry
