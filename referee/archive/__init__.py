"""The Parquet archive of the store's time-partitioned tables (issue 35).

A standalone library: it knows the column sets of the five append-only tables, writes a
partition's rows as one Parquet file, keeps a manifest per archive run, verifies what it wrote
and reads the archive back for the audit. It imports no other layer of the referee and never
talks to PostgreSQL: the store's side fetches the rows and calls these functions
(docs/archive.md).
"""

from __future__ import annotations

from referee.archive.digest import RowsDigest, rows_digest
from referee.archive.errors import (
    AlteredFileError,
    ArchiveError,
    ArchiveMismatchError,
    ArchiveRowError,
    ManifestError,
    SegmentAlreadyArchivedError,
    VerificationError,
)
from referee.archive.layout import Segment, make_run_id, manifest_path, segment_name, segment_path
from referee.archive.manifest import (
    Manifest,
    ManifestEntry,
    archived_segments,
    read_manifests,
    write_manifest,
)
from referee.archive.parquet import SCHEMAS, parquet_to_rows, rows_to_parquet
from referee.archive.read import iter_rows
from referee.archive.storage import Archive, open_archive
from referee.archive.tables import TABLES, Row
from referee.archive.verify import Problem, Report, check_archive, verify_written
from referee.archive.write import write_segment

__all__ = [
    "SCHEMAS",
    "TABLES",
    "AlteredFileError",
    "Archive",
    "ArchiveError",
    "ArchiveMismatchError",
    "ArchiveRowError",
    "Manifest",
    "ManifestEntry",
    "ManifestError",
    "Problem",
    "Report",
    "Row",
    "RowsDigest",
    "Segment",
    "SegmentAlreadyArchivedError",
    "VerificationError",
    "archived_segments",
    "check_archive",
    "iter_rows",
    "make_run_id",
    "manifest_path",
    "open_archive",
    "parquet_to_rows",
    "read_manifests",
    "rows_digest",
    "rows_to_parquet",
    "segment_name",
    "segment_path",
    "verify_written",
    "write_manifest",
    "write_segment",
]
