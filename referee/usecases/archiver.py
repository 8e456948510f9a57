"""``referee archive``: old time partitions to the Parquet archive, verified, then dropped.

A run goes segment by segment, oldest first, through four steps, each safe to stop after:

1. **written**: each of the segment's five partitions is written as one Parquet file
   (``referee.archive.write_segment``; a file a stopped run left without a manifest is
   written again, the same bytes);
2. **verified**: each file is read back and checked against the rows the partition holds,
   read again from PostgreSQL; then one manifest lists the run's files (written last);
3. **detached**: in one transaction the newest state of every game, the newest position of
   every input partition and the prints of the games still going on are carried into the
   live partitions, and the five partitions are detached;
4. **dropped**: the detached partitions are dropped, once their files are verified again.

A run that finds a segment already in a manifest verifies it against the store and goes on
from step 3; one that finds partitions detached and not dropped verifies them and drops them.
A partition is archived only when it ended before ``before``, before the database's clock and
before the start of every transaction still open (a batch that began earlier could still
write it), and never the partition the clock is in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from referee.archive import (
    TABLES,
    Archive,
    ManifestEntry,
    Segment,
    VerificationError,
    archived_segments,
    make_run_id,
    rows_digest,
    verify_written,
    write_manifest,
    write_segment,
)
from referee.store.partitions import (
    DEFAULT_POLICY,
    PARTITIONED,
    PartitionPolicy,
    create_partitions,
)
from referee.store.seasons_store import (
    StoreSegment,
    TablesBusy,
    attached_segments,
    carry_and_detach,
    database_now,
    detached_leftovers,
    drop_detached,
    first_recorded,
    lock_archiving,
    oldest_transaction,
    partition_rows,
    unlock_archiving,
)

Step = Callable[[str, str], None]
"""Called after each step of each segment: (step, segment name); tests stop a run there."""


@dataclass(slots=True)
class ArchiveReport:
    """What one run of ``referee archive`` did."""

    archived: list[str] = field(default_factory=list)
    """Segments archived, detached and dropped by this run (resumed ones included)."""
    rows: dict[str, int] = field(default_factory=dict)
    """Rows archived by this run, by table."""
    bytes_written: int = 0
    files_written: int = 0
    carried: dict[str, int] = field(
        default_factory=lambda: {"states": 0, "positions": 0, "prints": 0}
    )
    leftovers_dropped: list[str] = field(default_factory=list)
    """Segments a stopped run had detached, verified and dropped by this one."""
    waiting: str | None = None
    """Why the next segment was left alone, if one older than ``before`` was."""
    manifest: str | None = None
    """The manifest this run wrote (None: no new file)."""

    def summary(self) -> str:
        rows = sum(self.rows.values())
        lines = [
            (
                f"archived {len(self.archived)} segment(s) ({', '.join(self.archived) or 'none'})"
                f": {rows} rows, {self.files_written} files, {self.bytes_written} bytes written"
            ),
            "carried into the live partitions: "
            + ", ".join(f"{v} {k}" for k, v in self.carried.items()),
        ]
        if self.leftovers_dropped:
            lines.append(f"dropped the detached partitions of {', '.join(self.leftovers_dropped)}")
        if self.manifest:
            lines.append(f"manifest: {self.manifest}")
        if self.waiting:
            lines.append(self.waiting)
        return "\n".join(lines)


def _ignore(step: str, segment: str) -> None:  # noqa: ARG001 - the Step signature
    return None


async def archive_before(
    driver: Any,
    archive: Archive,
    before: datetime,
    started_at: datetime,
    *,
    keep_prints: timedelta = timedelta(days=7),
    partitions: PartitionPolicy = DEFAULT_POLICY,
    after: Step = _ignore,
) -> ArchiveReport:
    """Archives every segment that ended before ``before`` (and may be), verified, then
    drops it; ``started_at`` names the run's manifest. The prints of games active within
    ``keep_prints`` of ``started_at`` (or not finished) are carried into the live store."""
    report = ArchiveReport()
    # what is carried goes into the live partitions: they must exist, writers or not
    await create_partitions(driver, partitions)
    if not await lock_archiving(driver):
        report.waiting = "another referee archive runs on this database: nothing done"
        return report
    try:
        return await _archive_before(
            driver, archive, before, started_at, keep_prints, after, report
        )
    finally:
        await unlock_archiving(driver)


async def _archive_before(
    driver: Any,
    archive: Archive,
    before: datetime,
    started_at: datetime,
    keep_prints: timedelta,
    after: Step,
    report: ArchiveReport,
) -> ArchiveReport:
    known = archived_segments(archive)
    for name, tables in (await detached_leftovers(driver)).items():
        await _verify_detached(driver, archive, known, name, tables)
        try:
            await drop_detached(driver, name, tables)
        except TablesBusy as busy:
            report.waiting = str(busy)
            return report
        report.leftovers_dropped.append(name)
        after("dropped", name)
    chosen, report.waiting = await _archivable(driver, before)
    planned: list[tuple[StoreSegment, Segment, list[ManifestEntry]]] = []
    for store_segment in chosen:
        start = store_segment.start or await first_recorded(driver, store_segment, PARTITIONED)
        segment = Segment(store_segment.name, start, store_segment.end)
        entries: list[ManifestEntry] = []
        fresh: list[ManifestEntry] = []
        for table in PARTITIONED:
            if (table, segment.name) in known:
                entries.append(known[(table, segment.name)][1])
                continue
            rows = await _rows(driver, store_segment.partition(table), table)
            entry = write_segment(archive, table, segment, rows)
            entries.append(entry)
            fresh.append(entry)
            report.rows[table] = report.rows.get(table, 0) + entry.rows
            report.bytes_written += entry.size
            report.files_written += 1
        after("written", segment.name)
        for table, entry in zip(PARTITIONED, entries, strict=True):
            rows = await _rows(driver, store_segment.partition(table), table)
            verify_written(archive, entry, rows_digest(table, rows))
        after("verified", segment.name)
        planned.append((store_segment, segment, fresh))
    fresh_entries = [e for _, _, fresh in planned for e in fresh]
    if fresh_entries:
        run_id = make_run_id(started_at, [s for _, s, fresh in planned if fresh])
        write_manifest(archive, run_id, fresh_entries)
        report.manifest = run_id
    known = archived_segments(archive)
    for store_segment, segment, _ in planned:
        try:
            carried = await carry_and_detach(driver, store_segment, started_at - keep_prints)
        except TablesBusy as busy:
            report.waiting = str(busy)  # archived and listed: the next run detaches it
            break
        report.carried["states"] += carried.states
        report.carried["positions"] += carried.positions
        report.carried["prints"] += carried.prints
        after("detached", segment.name)
        await _verify_detached(driver, archive, known, segment.name, PARTITIONED)
        try:
            await drop_detached(driver, segment.name, PARTITIONED)
        except TablesBusy as busy:
            report.waiting = str(busy)  # detached and listed: the next run drops it
            break
        report.archived.append(segment.name)
        after("dropped", segment.name)
    return report


async def _archivable(driver: Any, before: datetime) -> tuple[list[StoreSegment], str | None]:
    """The oldest segments that may be archived now, and why the next one may not."""
    now = await database_now(driver)
    oldest = await oldest_transaction(driver)
    segments = await attached_segments(driver)
    chosen: list[StoreSegment] = []
    for s in segments[:-1]:  # never the newest: the clock may be in it
        if s.end > before or s.end > now:
            return chosen, None
        if oldest is not None and s.end > oldest:
            return chosen, (
                f"segment {s.name} waits: a transaction open since {oldest.isoformat()} could "
                "still write it (run again later)"
            )
        chosen.append(s)
    return chosen, None


async def _rows(driver: Any, partition: str, table: str) -> list[tuple[object, ...]]:
    t = TABLES[table]
    return await partition_rows(driver, partition, t.names, t.order)


async def _verify_detached(
    driver: Any,
    archive: Archive,
    known: dict[tuple[str, str], tuple[str, ManifestEntry]],
    name: str,
    tables: Any,
) -> None:
    """Checks that every detached partition of a segment is in a manifest and that its file
    holds exactly its rows; raises VerificationError otherwise (nothing is dropped)."""
    for table in tables:
        if (table, name) not in known:
            raise VerificationError(
                f"partition {table}_{name} is detached but no manifest lists it: it is kept "
                "(attach it again, or archive it by hand; docs/runbook.md)"
            )
        rows = await _rows(driver, f"{table}_{name}", table)
        verify_written(archive, known[(table, name)][1], rows_digest(table, rows))
