"""Checking what was archived: one file against its entry, or the whole archive against its
manifests (docs/archive.md, "Verification")."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from referee.archive.digest import rows_digest
from referee.archive.errors import (
    AlteredFileError,
    ArchiveError,
    ArchiveRowError,
    ManifestError,
    VerificationError,
)
from referee.archive.layout import MANIFESTS
from referee.archive.manifest import Manifest, ManifestEntry, decode_manifest
from referee.archive.parquet import padded, read_parquet
from referee.archive.storage import Archive
from referee.archive.tables import TABLES, Row, table
from referee.archive.write import check_segment_rows, journal_id_bounds

ProblemKind = Literal[
    "missing", "extra", "altered", "inconsistent", "duplicated", "overlap", "bad-manifest"
]


def verify_bytes(entry: ManifestEntry, data: bytes) -> list[Row]:
    """The rows of ``data``, read as ``entry``'s file, once everything the entry says of it holds:
    size and SHA-256 of the bytes, then schema, row count, rows digest, journal id bounds, each
    row inside the segment's bounds and in reading order. ``VerificationError`` otherwise."""
    where = f"{entry.path}"
    if len(data) != entry.size or hashlib.sha256(data).hexdigest() != entry.sha256:
        raise AlteredFileError(
            f"{where}: altered: {len(data)} bytes of SHA-256 {hashlib.sha256(data).hexdigest()}, "
            f"the manifest says {entry.size} bytes of SHA-256 {entry.sha256}"
        )
    t = table(entry.table)
    width, written = read_parquet(t.name, data)
    if len(written) != entry.rows:
        raise VerificationError(f"{where}: {len(written)} rows, the manifest says {entry.rows}")
    # the digest is of the rows as written (an earlier archive's columns), then they are read
    # as this release's table has them
    rows = padded(t.name, width, written)
    try:
        digest = rows_digest(t.name, written, width)
        check_segment_rows(t, entry.segment_bounds, rows)
    except ArchiveRowError as error:
        raise VerificationError(f"{where}: {error}") from None
    if digest != entry.rows_digest:
        raise VerificationError(
            f"{where}: rows digest {digest}, the manifest says {entry.rows_digest}"
        )
    bounds = journal_id_bounds(t, rows)
    if bounds != (entry.first_journal_id, entry.last_journal_id):
        raise VerificationError(
            f"{where}: journal ids {bounds[0]}..{bounds[1]}, the manifest says "
            f"{entry.first_journal_id}..{entry.last_journal_id}"
        )
    return rows


def read_verified(archive: Archive, entry: ManifestEntry) -> list[Row]:
    """Read ``entry``'s file and return its rows once ``verify_bytes`` passed."""
    try:
        data = archive.read_bytes(entry.path)
    except ArchiveError as error:
        raise VerificationError(f"{entry.path}: missing or unreadable: {error}") from error
    return verify_bytes(entry, data)


def verify_written(archive: Archive, entry: ManifestEntry, expected_rows_digest: str) -> None:
    """Read back the file ``write_segment`` wrote and check it is whole and holds the rows the
    store still holds: ``expected_rows_digest`` is ``rows_digest`` of the partition's rows as
    the store gives them (in reading order), computed apart from the rows that were written.
    Returns when all holds; ``VerificationError`` naming the first difference otherwise."""
    read_verified(archive, entry)
    if entry.rows_digest != expected_rows_digest:
        raise VerificationError(
            f"{entry.path}: the archived rows' digest {entry.rows_digest} is not the store's "
            f"{expected_rows_digest}: the partition changed, or the rows were read apart"
        )


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with an archive."""

    kind: ProblemKind
    path: str
    """The file it concerns (a manifest for ``bad-manifest``)."""
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass(frozen=True, slots=True)
class Report:
    """What ``check_archive`` found."""

    url: str
    manifests: int
    files: int
    """The data files read and checked."""
    rows: dict[str, int] = field(default_factory=dict)
    """Rows archived per table (in the files that passed)."""
    problems: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    def __str__(self) -> str:
        head = f"archive {self.url}: {self.manifests} manifests, {self.files} files checked"
        if self.ok:
            return f"{head}, no problem"
        return "\n".join(
            [f"{head}, {len(self.problems)} problems:"] + [f"  {p}" for p in self.problems]
        )


def _overlap_candidates(
    entries: Iterable[ManifestEntry],
) -> list[tuple[ManifestEntry, ManifestEntry]]:
    """Pairs of files of one table whose journal id ranges intersect: only they can share an id."""
    pairs: list[tuple[ManifestEntry, ManifestEntry]] = []
    by_table: dict[str, list[ManifestEntry]] = {}
    for e in entries:
        if e.first_journal_id is not None:
            by_table.setdefault(e.table, []).append(e)
    for group in by_table.values():
        group.sort(key=lambda e: (e.first_journal_id, e.path))
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                assert a.last_journal_id is not None
                assert b.first_journal_id is not None
                if b.first_journal_id > a.last_journal_id:
                    break
                pairs.append((a, b))
    return pairs


def check_archive(archive: Archive) -> Report:
    """Read every manifest and every file under the table directories, and report each missing
    file, extra file (in no manifest), altered file (size or SHA-256), file whose content is not
    what its entry says (inconsistent), segment listed twice (duplicated), journal id in two
    files of one table (overlap) and unreadable manifest. Reads one file at a time; keeps the
    journal ids only of files whose id ranges intersect another's."""
    problems: list[Problem] = []
    manifests: list[Manifest] = []
    for path in archive.list_files(MANIFESTS):
        name = path.removeprefix(MANIFESTS + "/")
        if not name.endswith(".json") or "/" in name or name.startswith("."):
            problems.append(Problem("extra", path, f"{path}: not a manifest (a leftover?)"))
            continue
        try:
            manifests.append(decode_manifest(archive.read_bytes(path), path))
        except (ManifestError, ArchiveError) as error:
            problems.append(Problem("bad-manifest", path, str(error)))

    listed: dict[str, list[tuple[str, ManifestEntry]]] = {}
    by_segment: dict[tuple[str, str], list[tuple[str, ManifestEntry]]] = {}
    for manifest in manifests:
        for entry in manifest.files:
            listed.setdefault(entry.path, []).append((manifest.run_id, entry))
            by_segment.setdefault((entry.table, entry.segment), []).append((manifest.run_id, entry))
    for (table_name, segment), versions in sorted(by_segment.items()):
        if len(versions) > 1:
            runs = ", ".join(run for run, _ in versions)
            paths = ", ".join(sorted({e.path for _, e in versions}))
            problems.append(
                Problem(
                    "duplicated",
                    versions[0][1].path,
                    f"{table_name} segment {segment} is archived {len(versions)} times, by runs "
                    f"{runs} ({paths})",
                )
            )

    present = {p for name in TABLES for p in archive.list_files(name)}
    problems.extend(
        Problem("extra", path, f"{path}: in no manifest") for path in sorted(present - set(listed))
    )
    for path in sorted(set(listed) - present):
        runs = ", ".join(r for r, _ in listed[path])
        problems.append(
            Problem("missing", path, f"{path}: listed by run {runs}, not in the archive")
        )

    # one entry per file (a duplicated one is reported above); the first run's
    entries = [versions[0][1] for versions in listed.values()]
    candidates = _overlap_candidates(entries)
    keep = {e.path for pair in candidates for e in pair}
    ids: dict[str, set[int]] = {}
    rows: dict[str, int] = dict.fromkeys(TABLES, 0)
    checked = 0
    for entry in sorted(entries, key=lambda e: e.path):
        if entry.path not in present:
            continue
        checked += 1
        for run, other in listed[entry.path][1:]:
            if other != entry:
                problems.append(
                    Problem(
                        "inconsistent", entry.path, f"{entry.path}: run {run} says otherwise of it"
                    )
                )
        try:
            file_rows = read_verified(archive, entry)
        except AlteredFileError as error:
            problems.append(Problem("altered", entry.path, str(error)))
            continue
        except VerificationError as error:
            problems.append(Problem("inconsistent", entry.path, str(error)))
            continue
        rows[entry.table] += len(file_rows)
        if entry.path in keep:
            at = table(entry.table).index(table(entry.table).journal_id)
            ids[entry.path] = {r[at] for r in file_rows}  # type: ignore[misc]
    for a, b in candidates:
        if a.path == b.path or a.path not in ids or b.path not in ids:
            continue
        common = sorted(ids[a.path] & ids[b.path])
        if common:
            more = f" (and {len(common) - 1} more)" if len(common) > 1 else ""
            problems.append(
                Problem(
                    "overlap",
                    b.path,
                    f"{a.table}: journal id {common[0]}{more} archived twice, "
                    f"in {a.path} and {b.path}",
                )
            )
    return Report(archive.url, len(manifests), checked, rows, tuple(problems))
