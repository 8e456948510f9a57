"""Reading a table's archived rows for the audit, in journal order, verified as they are read."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any

from referee.archive.errors import ArchiveError, ArchiveMismatchError, VerificationError
from referee.archive.manifest import ManifestEntry, read_manifests
from referee.archive.storage import Archive
from referee.archive.tables import Row, table
from referee.archive.verify import read_verified


def iter_rows(archive: Archive, table_name: str) -> Iterator[Row]:
    """Every archived row of ``table_name``, across all manifests, in reading order: the journal
    by ``id``; the others by ``journal_id``, then their natural order (``Table.order``).

    Each file is read whole and verified against its manifest entry (``verify_bytes``) before
    any of its rows is yielded; files are opened one after another, and a file is opened early
    only when its journal ids interleave with the one being read (partitions cut between
    concurrent batches), so memory holds one file, or the few that interleave. Raises
    ``ArchiveMismatchError``: a manifest unreadable, a segment in two manifests, a file missing
    or not what its entry says, a journal id in two files.
    """
    t = table(table_name)
    entries: list[ManifestEntry] = []
    runs: dict[str, str] = {}
    try:
        manifests = read_manifests(archive)
    except ArchiveError as error:
        raise ArchiveMismatchError(f"the manifests of {archive.url}: {error}") from error
    for manifest in manifests:
        for entry in manifest.files:
            if entry.table != t.name:
                continue
            if entry.segment in runs:
                raise ArchiveMismatchError(
                    f"{t.name} segment {entry.segment} is archived twice, by runs "
                    f"{runs[entry.segment]} and {manifest.run_id}"
                )
            runs[entry.segment] = manifest.run_id
            entries.append(entry)

    def load(entry: ManifestEntry) -> list[Row]:
        try:
            return read_verified(archive, entry)
        except VerificationError as error:
            raise ArchiveMismatchError(f"run {runs[entry.segment]}: {error}") from error

    for entry in entries:
        if entry.rows == 0:  # nothing to merge, but it must be there and empty
            load(entry)
    pending = sorted(
        (e for e in entries if e.first_journal_id is not None),
        key=lambda e: (e.first_journal_id, e.path),
    )
    pending.reverse()  # popped from the end: smallest first
    keys = [t.index(c) for c in t.order]
    at = t.index(t.journal_id)
    files: list[list[Row]] = []
    names: list[str] = []
    heap: list[tuple[tuple[Any, ...], int, int]] = []

    def open_next() -> None:
        entry = pending.pop()
        rows = load(entry)
        files.append(rows)
        names.append(entry.path)
        heap_push(len(files) - 1, 0)

    def heap_push(file_no: int, row_no: int) -> None:
        rows = files[file_no]
        if row_no < len(rows):
            heapq.heappush(heap, (tuple(rows[row_no][i] for i in keys), file_no, row_no))
        else:
            files[file_no] = []  # done: let it go

    last: tuple[object, int] | None = None
    while pending or heap:
        while pending and (not heap or pending[-1].first_journal_id <= heap[0][0][0]):
            open_next()
        _, file_no, row_no = heapq.heappop(heap)
        row = files[file_no][row_no]
        journal_id = row[at]
        if last is not None and last[0] == journal_id and last[1] != file_no:
            raise ArchiveMismatchError(
                f"{t.name}: journal id {journal_id} archived twice, in {names[last[1]]} and "
                f"{names[file_no]}"
            )
        last = (journal_id, file_no)
        heap_push(file_no, row_no + 1)
        yield row
