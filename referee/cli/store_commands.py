"""Commands that use the store: ``replay --database``, ``migrate``, ``audit``, ``demo``.

The database is the one named: ``--database URL``, else ``$REFEREE_DATABASE_URL``. The
embedded PostgreSQL is used only when asked for (``--embedded``, or ``demo`` and ``replay
--embedded``, which say so on standard error), never as a silent fallback.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from sqlalchemy.ext.asyncio import AsyncEngine

from referee.cli.args import close_output, log_size, open_log, open_output, utf8_name
from referee.cli.errors import (
    EXIT_DIFFERENCE,
    EXIT_OK,
    CommandError,
    UnavailableError,
    UsageError,
)
from referee.cli.progress import ProgressBar, format_summary
from referee.domain.revisions import UnknownRevisionError
from referee.service.settings import Settings, SettingsError, load_settings
from referee.store.database import (
    DatabaseUrlError,
    EmbeddedPostgresMissingError,
    check_reachable,
    create_engine,
    embedded_url,
    known_revisions,
    newest_revision,
    parse_database_url,
    schema_revision,
)
from referee.store.database import downgrade as run_downgrade
from referee.store.database import migrate as run_migrations
from referee.store.errors import describe_failure, is_outage, sqlstate

if TYPE_CHECKING:  # the audit's and the replay's modules load when those commands run,
    # not on ``serve``'s start-up
    from referee.usecases.audit import AuditReport
    from referee.usecases.replay import ReplayReport

UNDEFINED_TABLE = "42P01"


@dataclass(frozen=True, slots=True)
class Database:
    """The database a command uses: its URL (secret) and how it may be printed."""

    url: str
    shown: str


def settings_or_exit() -> Settings:
    """Returns the settings; a bad one is a usage error naming its variable."""
    try:
        return load_settings()
    except SettingsError as bad:
        raise UsageError(f"bad configuration: {bad}") from None


def choose_database(explicit: str | None, *, embedded: bool, settings: Settings) -> Database:
    """Returns the database to use: ``--database``, else the configured one, else (only if
    asked for) the embedded PostgreSQL."""
    if embedded:
        pgdata = Path(settings.data_dir) / "pgdata"
        print(f"using the embedded PostgreSQL under {pgdata}", file=sys.stderr)
        try:
            url = embedded_url(Path(settings.data_dir))
        except EmbeddedPostgresMissingError as missing:
            raise UnavailableError(str(missing)) from None
        return Database(url, f"the embedded PostgreSQL under {pgdata}")
    url, where = explicit or "", "--database"
    if not url:
        url, where = settings.database_url.get_secret_value(), "REFEREE_DATABASE_URL"
    if not url:
        raise UsageError(
            "no database: pass --database URL or set REFEREE_DATABASE_URL "
            f"(or --embedded for the embedded PostgreSQL under {settings.data_dir}/pgdata)"
        )
    try:
        target = parse_database_url(url)
    except DatabaseUrlError as bad:
        raise UsageError(f"{where}: {bad}") from None
    return Database(url, target.shown)


@contextmanager
def reaching(db: Database) -> Iterator[None]:
    """Turns a failure to use the database into one line and exit status 3."""
    try:
        yield
    except CommandError:
        raise
    except UnknownRevisionError as newer:
        raise UnavailableError(f"PostgreSQL at {db.shown}: {newer}") from newer
    except Exception as failed:
        if not is_outage(failed):
            raise
        if sqlstate(failed) == UNDEFINED_TABLE:
            hint = "the schema is missing: run referee migrate"
        else:
            hint = "is the server up, and the URL (--database, REFEREE_DATABASE_URL) right?"
        raise UnavailableError(
            f"PostgreSQL at {db.shown}: {describe_failure(failed)} ({hint})"
        ) from failed


def _engine(db: Database, settings: Settings) -> AsyncEngine:
    return create_engine(db.url, settings.db_pool_size, settings.db_max_overflow)


def _probe(
    db: Database,
    settings: Settings,
    check: Callable[[AsyncEngine], Awaitable[object]] | None = None,
) -> None:
    """Connects once (10 s at most) so that an unreachable server fails before any work,
    then runs ``check`` on the same engine (a schema revision check)."""

    async def run() -> None:
        engine = _engine(db, settings)
        try:
            await check_reachable(engine)
            if check is not None:
                await check(engine)
        finally:
            await engine.dispose()

    with reaching(db):
        asyncio.run(run())


async def require_schema(engine: AsyncEngine, db: Database, doing: str) -> str:
    """Returns the database's schema revision; fails (exit 3) unless it is this referee's."""
    revision = await schema_revision(engine)
    newest = newest_revision()
    if revision is None:
        raise UnavailableError(f"{db.shown} has no referee schema: run referee migrate first")
    if revision != newest:
        raise _other_revision(db, revision, doing)
    return revision


async def _refuse_newer(engine: AsyncEngine, db: Database) -> None:
    """Fails (exit 3) on a schema revision none of this referee's migrations knows: a newer
    referee's, which this one cannot downgrade."""
    revision = await schema_revision(engine)
    if revision is not None and revision not in known_revisions():
        raise _other_revision(db, revision, "migrates to")


def _other_revision(db: Database, revision: str, doing: str) -> UnavailableError:
    if revision in known_revisions():
        hint = "run referee migrate (or the referee that migrated it)"
    else:
        hint = "a newer referee migrated it: use that one (this one cannot downgrade it)"
    return UnavailableError(
        f"{db.shown} has schema revision {revision}, this referee {doing} {newest_revision()}: "
        f"{hint}"
    )


def probe_schema(db: Database, settings: Settings, doing: str) -> None:
    """Connects once and checks the schema revision before any work (``serve``)."""
    _probe(db, settings, lambda engine: require_schema(engine, db, doing))


def _migrate_to_newest(db: Database, settings: Settings) -> None:
    """Connects once, refuses a schema of a newer referee (exit 3, as ``serve`` and
    ``audit`` do), then migrates."""
    _probe(db, settings, lambda engine: _refuse_newer(engine, db))
    with reaching(db):
        run_migrations(db.url, partitions=settings.partition_policy)


def migrate(args: argparse.Namespace) -> int:
    """``referee migrate``: Alembic upgrade to head (``--down-to REVISION``: downgrade)."""
    settings = settings_or_exit()
    db = choose_database(args.database, embedded=args.embedded, settings=settings)
    if args.down_to is not None:
        return _migrate_down(db, settings, args.down_to)
    _migrate_to_newest(db, settings)
    print(f"{db.shown}: the schema is at the newest revision, {newest_revision()}", file=sys.stderr)
    return EXIT_OK


def _migrate_down(db: Database, settings: Settings, target: str) -> int:
    """Downgrades the schema to ``target``, an earlier revision this referee knows (a usage
    error, exit 2, for one it does not know or that is not below the store's)."""
    if target not in known_revisions():
        known = ", ".join(sorted(known_revisions()))
        raise UsageError(f"no schema revision {target!r} (this referee knows {known})")
    found: list[str | None] = []

    async def check(engine: AsyncEngine) -> None:
        await _refuse_newer(engine, db)
        found.append(await schema_revision(engine))

    _probe(db, settings, check)
    current = found[0]
    if current is None or current <= target:
        raise UsageError(
            f"{db.shown} is at schema revision {current}, not above {target}: nothing to downgrade"
        )
    with reaching(db):
        run_downgrade(db.url, target)
    print(f"{db.shown}: the schema is at revision {target} (was {current})", file=sys.stderr)
    return EXIT_OK


def replay_store(args: argparse.Namespace, log: Path | BinaryIO) -> int:
    """``referee replay LOG --database [URL]`` or ``--embedded``."""
    from referee.cli.collector import tune
    from referee.usecases.replay_store import replay_into_store

    if isinstance(log, Path):
        name: str = args.source_name or utf8_name(
            str(log.resolve()),
            "the log's path",
            "it keys the log's stored positions: give --source-name NAME",
        )
    elif args.source_name:
        name = args.source_name
    else:
        raise UsageError(
            "replaying standard input into a store needs --source-name NAME: the stream's "
            "positions are stored under that name, and a second run with the same name resumes"
        )
    settings = settings_or_exit()
    out = open_output(args.output, "--output", log=log)
    rejected = open_output(args.rejected, "--rejected", log=log) if args.rejected else None
    bar = None
    try:
        db = choose_database(args.database, embedded=args.embedded, settings=settings)
        _migrate_to_newest(db, settings)
        bar = ProgressBar(log_size(log)) if sys.stderr.isatty() else None
        tune()

        async def run() -> tuple[ReplayReport, int]:
            engine = _engine(db, settings)
            try:
                return await replay_into_store(
                    log,
                    engine,
                    out,
                    rejected,
                    name=name,
                    batch_size=args.batch_size,
                    max_event_bytes=args.max_event_bytes,
                    cache_games=settings.cache_games,
                    progress=bar,
                    rules_revision=args.rules_revision or settings.rules_revision,
                    partitions=settings.partition_policy,
                )
            finally:
                await engine.dispose()

        with reaching(db):
            report, skipped = asyncio.run(run())
    finally:
        close_output(out)
        if rejected is not None:
            close_output(rejected)
        if bar is not None:
            bar.close()
    print(format_summary(report), file=sys.stderr)
    if skipped:
        print(f"resumed: {skipped} lines were already in the store", file=sys.stderr)
    return EXIT_OK


def audit(args: argparse.Namespace) -> int:
    """``referee audit``: says which database and schema it checked; exits 1 on a difference."""
    settings = settings_or_exit()
    db = choose_database(args.database, embedded=args.embedded, settings=settings)
    _probe(db, settings)
    archive = getattr(args, "archive", None)
    if archive == "":
        archive = settings.archive_url
        if not archive:
            raise UsageError("--archive needs a URL, or REFEREE_ARCHIVE_URL set")
    with reaching(db):
        revision, report = asyncio.run(_audit(db, settings, args.revision, archive))
    if args.json:
        document = {
            "database": db.shown,
            "schema_revision": revision,
            **dataclasses.asdict(report),
            "passed": report.passed,
        }
        print(json.dumps(document, indent=2))
    else:
        print(f"database: {db.shown}\nschema revision: {revision}\n{report.summary()}")
    return EXIT_OK if report.passed else EXIT_DIFFERENCE


async def _audit(
    db: Database, settings: Settings, candidate: int | None = None, archive: str | None = None
) -> tuple[str, AuditReport]:
    from referee.store.views import StoreViews
    from referee.usecases.audit import AuditReport
    from referee.usecases.audit import audit as run_audit

    engine = _engine(db, settings)
    try:
        revision = await require_schema(engine, db, "audits")
        views = StoreViews(engine)
        if archive is None:
            return revision, await run_audit(views, settings.max_event_bytes, candidate)
        from referee.archive import ArchiveError, VerificationError, open_archive
        from referee.archive.storage import LocalArchive
        from referee.cli.seasons import archive_failure
        from referee.usecases.archived_views import ArchivedViews

        try:
            opened = open_archive(archive)
        except ArchiveError as error:
            raise UsageError(f"--archive {archive}: {error}") from None
        if isinstance(opened, LocalArchive) and not opened.root.is_dir():
            raise UsageError(f"--archive {archive}: no such directory")
        both = ArchivedViews(views, opened)
        try:
            both.check()
            report = await run_audit(both, settings.max_event_bytes, candidate)
        except VerificationError as error:  # a file unlike its manifest: said, not judged
            report = AuditReport(candidate=candidate)
            report.differences.append(f"archive: {error}")
        except ArchiveError as error:
            raise archive_failure(archive, error) from None
        report.differences[:0] = both.problems
        report.archived_rows = both.archived_rows
        return revision, report
    finally:
        await engine.dispose()


def demo(args: argparse.Namespace) -> int:
    """``referee demo``: the example log into the (embedded) store; verdicts, standings, audit."""
    from referee.store.views import StoreViews
    from referee.usecases.audit import audit as run_audit
    from referee.usecases.replay_store import replay_into_store

    log = open_log(args.log)
    if not isinstance(log, Path):
        raise UsageError("demo reads a log file, not standard input (try referee replay -)")
    log = log.resolve()
    settings = settings_or_exit()
    db = choose_database(args.database, embedded=not args.database, settings=settings)
    _migrate_to_newest(db, settings)

    async def run() -> int:
        engine = _engine(db, settings)
        try:
            report, skipped = await replay_into_store(
                log, engine, None, max_event_bytes=settings.max_event_bytes
            )
            print(f"refereed {log.name} into PostgreSQL", file=sys.stderr)
            print(format_summary(report), file=sys.stderr)
            if skipped:
                print(f"({skipped} lines were already in the store)", file=sys.stderr)
            await _print_store(engine)
            checked = await run_audit(StoreViews(engine), settings.max_event_bytes)
            print("\n== audit ==")
            print(checked.summary())
            return EXIT_OK if checked.passed else EXIT_DIFFERENCE
        finally:
            await engine.dispose()

    with reaching(db):
        return asyncio.run(run())


async def _print_store(engine: AsyncEngine) -> None:
    from referee.store.views import StoreViews

    views = StoreViews(engine)
    bodies = await views.verdict_bodies()
    print(f"== verdicts ({len(bodies)}) ==")
    for _, body, _ in bodies:
        print(body)
    print("\n== standings ==")
    print(f"{'game':<18} {'player':<12} {'score':>6} {'fouls':>6}  {'round':>5}  game won by")
    for s in await views.standings():
        won = s.game_winner or "-"
        print(f"{s.game_id:<18} {s.player:<12} {s.score:>6} {s.fouls:>6}  {s.round or 0:>5}  {won}")
