"""One manifest per archive run: ``manifests/<run id>.json``, written last and atomically.

It lists every file the run wrote (docs/archive.md, "The manifest"). A file no manifest lists is
not archived: a run that stopped before its manifest left only files that the next run rewrites
(with the same bytes) or ``check_archive`` reports as extra.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

import msgspec

from referee.archive.errors import ArchiveError, ManifestError, SegmentAlreadyArchivedError
from referee.archive.layout import MANIFESTS, Segment, check_run_id, manifest_path, segment_path
from referee.archive.storage import Archive

FORMAT = "referee-archive-manifest/1"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class ManifestEntry(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename={"start": "from", "end": "to"}
):
    """One archived file: a whole time partition of one table."""

    table: str
    path: str
    """``<table>/day=YYYY-MM-DD/<segment>.parquet``."""
    segment: str
    """The name of the time partition it came from."""
    start: datetime
    """The partition's lower bound on ``recorded_at`` (inclusive; ``from`` in JSON)."""
    end: datetime
    """Its upper bound (exclusive; ``to`` in JSON)."""
    rows: int
    first_journal_id: int | None
    """The smallest journal id of its rows (journal: ``id``; the others: ``journal_id``)."""
    last_journal_id: int | None
    """The largest; both null for a partition without rows."""
    size: int
    """The file's length in bytes."""
    sha256: str
    """SHA-256 of the file's bytes, hex."""
    rows_digest: str
    """SHA-256 of the rows' canonical encoding (``referee.archive.digest``), hex."""

    def __post_init__(self) -> None:
        try:
            segment = Segment(self.segment, self.start, self.end)
            expected = segment_path(self.table, segment)
        except ArchiveError as error:
            raise ManifestError(f"entry {self.path}: {error}") from None
        problems = []
        if self.path != expected:
            problems.append(f"its path should be {expected}")
        if self.rows < 0 or self.size < 0:
            problems.append("a negative count")
        if (self.first_journal_id is None) != (self.rows == 0) or (
            (self.first_journal_id is None) != (self.last_journal_id is None)
        ):
            problems.append("journal ids must be given exactly when there are rows")
        elif (
            self.first_journal_id is not None
            and self.last_journal_id is not None
            and self.first_journal_id > self.last_journal_id
        ):
            problems.append("its first journal id is after its last")
        if not _SHA256.match(self.sha256) or not _SHA256.match(self.rows_digest):
            problems.append("a digest that is not 64 lowercase hex digits")
        if problems:
            raise ManifestError(f"entry {self.path}: {'; '.join(problems)}")

    @property
    def segment_bounds(self) -> Segment:
        return Segment(self.segment, self.start, self.end)


class Manifest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What one archive run wrote."""

    run_id: str
    files: list[ManifestEntry]
    format: str = FORMAT

    def __post_init__(self) -> None:
        if self.format != FORMAT:
            raise ManifestError(f"manifest {self.run_id}: format {self.format!r}, not {FORMAT}")
        try:
            check_run_id(self.run_id)
        except ArchiveError as error:
            raise ManifestError(str(error)) from None


def encode_manifest(manifest: Manifest) -> bytes:
    """The manifest's JSON: indented, keys in a fixed order, times in UTC (``...Z``)."""
    normalized = msgspec.structs.replace(
        manifest,
        files=[
            msgspec.structs.replace(e, start=e.start.astimezone(UTC), end=e.end.astimezone(UTC))
            for e in manifest.files
        ],
    )
    return msgspec.json.format(msgspec.json.encode(normalized), indent=2) + b"\n"


def decode_manifest(data: bytes, path: str) -> Manifest:
    """The manifest in ``data`` (read from ``path``); ``ManifestError`` naming what is wrong."""
    try:
        manifest = msgspec.json.decode(data, type=Manifest)
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise ManifestError(f"{path}: not a manifest: {error}") from None
    except ManifestError as error:
        raise ManifestError(f"{path}: {error}") from None
    if manifest_path(manifest.run_id) != path:
        raise ManifestError(f"{path}: it says run {manifest.run_id}")
    return manifest


def manifest_files(archive: Archive) -> list[str]:
    """The paths of the manifests (``manifests/*.json``), sorted: by run id."""
    return [
        p
        for p in archive.list_files(MANIFESTS)
        if p.endswith(".json")
        and "/" not in p.removeprefix(MANIFESTS + "/")
        and not p.removeprefix(MANIFESTS + "/").startswith(".")
    ]


def read_manifests(archive: Archive) -> list[Manifest]:
    """Every manifest of the archive, by run id; ``ManifestError`` at the first unreadable one."""
    return [decode_manifest(archive.read_bytes(p), p) for p in manifest_files(archive)]


def archived_segments(archive: Archive) -> dict[tuple[str, str], tuple[str, ManifestEntry]]:
    """(table, segment) -> (run id, entry) for every segment a manifest lists (the first run's, if
    a segment is listed twice, which ``check_archive`` reports). The store's side asks it which
    partitions are already archived, to verify and drop them rather than archive them again."""
    found: dict[tuple[str, str], tuple[str, ManifestEntry]] = {}
    for manifest in read_manifests(archive):
        for entry in manifest.files:
            found.setdefault((entry.table, entry.segment), (manifest.run_id, entry))
    return found


def write_manifest(archive: Archive, run_id: str, entries: Sequence[ManifestEntry]) -> Manifest:
    """Write ``manifests/<run_id>.json`` listing ``entries``, atomically, and return it.

    Call it last, once every file is written and verified. Refused (nothing written): a run id
    already taken (``ManifestError``), no entry, a (table, segment) twice in ``entries`` or
    already in another manifest (``SegmentAlreadyArchivedError``), a file that is not there.
    """
    path = manifest_path(run_id)
    if not entries:
        raise ManifestError(f"run {run_id}: a manifest lists at least one file")
    if archive.exists(path):
        raise ManifestError(f"run {run_id}: {path} already exists in {archive.url}")
    seen: set[tuple[str, str]] = set()
    for entry in entries:
        key = (entry.table, entry.segment)
        if key in seen:
            raise SegmentAlreadyArchivedError(
                f"run {run_id}: {entry.table} segment {entry.segment} is listed twice"
            )
        seen.add(key)
    archived = archived_segments(archive)
    for key in sorted(seen & set(archived)):
        other, _ = archived[key]
        raise SegmentAlreadyArchivedError(
            f"run {run_id}: {key[0]} segment {key[1]} is already archived by run {other}"
        )
    for entry in entries:
        if not archive.exists(entry.path):
            raise ManifestError(f"run {run_id}: {entry.path} is not in {archive.url}")
    manifest = Manifest(run_id=run_id, files=list(entries))
    archive.write_bytes(path, encode_manifest(manifest))
    return manifest
