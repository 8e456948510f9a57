"""Commands of a store that lives for seasons: ``maintain`` (the time partitions ahead) and
``archive`` (old partitions to Parquet, verified, then dropped); docs/store.md, docs/archive.md.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime

from referee.cli.errors import (
    EXIT_DIFFERENCE,
    EXIT_OK,
    CommandError,
    UnavailableError,
    UsageError,
)
from referee.cli.store_commands import (
    _engine,
    _probe,
    choose_database,
    reaching,
    require_schema,
    settings_or_exit,
)
from referee.store.partitions import TimePartition, create_partitions, list_partitions


class ArchiveRefusedError(CommandError):
    """The archive does not hold what PostgreSQL holds (exit 1, as an audit's difference)."""

    code = EXIT_DIFFERENCE


def archive_failure(url: str, error: Exception) -> CommandError:
    """What an archive's failure means to the operator: the archive unreachable (exit 3), or
    not holding what it should (exit 1: nothing was dropped)."""
    from referee.archive import ManifestError, SegmentAlreadyArchivedError, VerificationError

    if isinstance(error, VerificationError | ManifestError | SegmentAlreadyArchivedError):
        return ArchiveRefusedError(f"the archive at {url} is refused, nothing dropped: {error}")
    return UnavailableError(f"the archive at {url} is unavailable: {error}")


def maintain(args: argparse.Namespace) -> int:
    """``referee maintain``: makes the time partitions ahead of the clock; says how far they
    reach and which is the oldest still in PostgreSQL."""
    settings = settings_or_exit()
    db = choose_database(args.database, embedded=args.embedded, settings=settings)
    _probe(db, settings)
    policy = settings.partition_policy

    async def run() -> tuple[datetime, list[TimePartition]]:
        engine = _engine(db, settings)
        try:
            await require_schema(engine, db, "maintains")
            async with engine.connect() as conn:
                raw = await conn.get_raw_connection()
                covered = await create_partitions(raw.driver_connection, policy)
                return covered, await list_partitions(raw.driver_connection)
        finally:
            await engine.dispose()

    with reaching(db):
        covered, partitions = asyncio.run(run())
    journal = [p for p in partitions if p.table == "journal"]
    oldest = journal[0].lower if journal and journal[0].lower is not None else None
    print(
        f"{db.shown}: {len(journal)} time partitions a table (interval {policy.interval}), "
        f"made up to {covered.isoformat()}; the oldest from "
        f"{oldest.isoformat() if oldest else 'the beginning (rows of before migration 0010)'}",
        file=sys.stderr,
    )
    return EXIT_OK


def archive(args: argparse.Namespace) -> int:
    """``referee archive --to URL [--before TIME]``: the partitions older than TIME (default:
    now less ``REFEREE_ARCHIVE_RETENTION``) to the archive, verified, then dropped."""
    from referee.archive import ArchiveError, open_archive
    from referee.usecases.archiver import ArchiveReport, archive_before

    settings = settings_or_exit()
    url = args.to or settings.archive_url
    if not url:
        raise UsageError("say where the archive is: --to URL or REFEREE_ARCHIVE_URL")
    started_at = datetime.now(UTC)
    before = args.before or started_at - settings.retention
    db = choose_database(args.database, embedded=args.embedded, settings=settings)
    _probe(db, settings)
    try:
        target = open_archive(url)
    except ArchiveError as error:
        raise UsageError(f"--to {url}: {error}") from None

    async def run() -> ArchiveReport:
        engine = _engine(db, settings)
        try:
            await require_schema(engine, db, "archives")
            async with engine.connect() as conn:
                raw = await conn.get_raw_connection()
                return await archive_before(
                    raw.driver_connection,
                    target,
                    before,
                    started_at,
                    keep_prints=settings.keep_prints,
                    partitions=settings.partition_policy,
                )
        finally:
            await engine.dispose()

    with reaching(db):
        try:
            report = asyncio.run(run())
        except ArchiveError as error:
            raise archive_failure(target.url, error) from None
    print(f"{db.shown} -> {target.url}, before {before.isoformat()}", file=sys.stderr)
    print(report.summary(), file=sys.stderr)
    return EXIT_OK


def moment(text: str) -> datetime:
    """argparse type: an ISO 8601 time; without a zone, UTC."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: write it as ISO 8601, e.g. 2026-12-01T00:00:00Z"
        ) from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
