"""``referee archive``: the time partitions older than a moment moved to the Parquet archive,
verified, what judging still needs carried forward, then dropped (the chart's daily CronJob;
docs/archive.md)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from referee.cli.args import Commands
from referee.cli.database import (
    choose_database,
    database_flags,
    engine_of,
    probe,
    reaching,
    require_schema,
    settings_or_exit,
)
from referee.cli.errors import (
    EXIT_DIFFERENCE,
    EXIT_OK,
    CommandError,
    UnavailableError,
    UsageError,
)

if TYPE_CHECKING:
    from referee.usecases.archiver import ArchiveReport


class ArchiveRefusedError(CommandError):
    """The archive does not hold what PostgreSQL holds (exit 1, as an audit's difference)."""

    code = EXIT_DIFFERENCE


def add(commands: Commands) -> None:
    """Adds ``referee archive``."""
    archive = commands.add(
        "archive", "move old time partitions to the Parquet archive, verified, then drop them", run
    )
    database_flags(archive)
    archive.add_argument(
        "--to",
        metavar="URL",
        help="a directory or s3://bucket/prefix (default: $REFEREE_ARCHIVE_URL)",
    )
    archive.add_argument(
        "--before",
        type=moment,
        metavar="TIME",
        help="archive what was recorded before this ISO 8601 time (default: now less "
        "$REFEREE_ARCHIVE_RETENTION)",
    )


def moment(text: str) -> datetime:
    """An argument type: an ISO 8601 time; without a zone, UTC."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: write it as ISO 8601, e.g. 2026-12-01T00:00:00Z"
        ) from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def archive_failure(url: str, error: Exception) -> CommandError:
    """What an archive's failure means to the operator: the archive unreachable (exit 3), or
    not holding what it should (exit 1: nothing was dropped)."""
    from referee.archive import ManifestError, SegmentAlreadyArchivedError, VerificationError

    if isinstance(error, VerificationError | ManifestError | SegmentAlreadyArchivedError):
        return ArchiveRefusedError(f"the archive at {url} is refused, nothing dropped: {error}")
    return UnavailableError(f"the archive at {url} is unavailable: {error}")


def run(args: argparse.Namespace) -> int:
    """Moves the partitions older than ``--before`` (default: now less
    ``REFEREE_ARCHIVE_RETENTION``) to the archive, verified, then drops them."""
    import asyncio

    from referee.archive import ArchiveError, open_archive
    from referee.usecases.archiver import archive_before

    settings = settings_or_exit()
    url = args.to or settings.archive_url
    if not url:
        raise UsageError("say where the archive is: --to URL or REFEREE_ARCHIVE_URL")
    started_at = datetime.now(UTC)
    before = args.before or started_at - settings.retention
    db = choose_database(args.database, embedded=args.embedded, settings=settings)
    probe(db, settings)
    try:
        target = open_archive(url)
    except ArchiveError as error:
        raise UsageError(f"--to {url}: {error}") from None

    async def work() -> ArchiveReport:
        engine = engine_of(db, settings)
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
            report = asyncio.run(work())
        except ArchiveError as error:
            raise archive_failure(target.url, error) from None
    print(f"{db.shown} -> {target.url}, before {before.isoformat()}", file=sys.stderr)
    print(report.summary(), file=sys.stderr)
    return EXIT_OK
