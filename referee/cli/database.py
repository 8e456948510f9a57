"""The database a command uses, and the checks before it does: shared by every command of
the store (``replay --database``, ``migrate``, ``audit``, ``maintain``, ``archive``,
``explain --database``, ``partitions``, ``demo``, ``serve``).

The database is the one named: ``--database URL``, else ``$REFEREE_DATABASE_URL``. The
embedded PostgreSQL is used only when asked for (``--embedded``, or ``demo`` and ``replay
--embedded``, which say so on standard error), never as a silent fallback. The store's and
the settings' modules are imported when a command runs, not when the parser is built.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from referee.cli.errors import CommandError, UnavailableError, UsageError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from referee.service.settings import Settings
    from referee.store.database import SessionLimits

UNDEFINED_TABLE = "42P01"
LOCK_NOT_AVAILABLE = "55P03"


@dataclass(frozen=True, slots=True)
class Database:
    """The database a command uses: its URL (secret) and how it may be printed."""

    url: str
    shown: str


def database_flags(parser: argparse.ArgumentParser) -> None:
    """Adds ``--database URL`` and ``--embedded``, one or the other, to a command."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--database",
        metavar="URL",
        help="PostgreSQL URL, libpq style (default: $REFEREE_DATABASE_URL)",
    )
    where.add_argument(
        "--embedded",
        action="store_true",
        help="use the embedded PostgreSQL under $REFEREE_DATA_DIR (the 'embedded' extra; "
        "for trying things out)",
    )


def settings_or_exit() -> Settings:
    """Returns the settings; a bad one is a usage error naming its variable."""
    from referee.service.settings import SettingsError, load_settings

    try:
        return load_settings()
    except SettingsError as bad:
        raise UsageError(f"bad configuration: {bad}") from None


def choose_database(explicit: str | None, *, embedded: bool, settings: Settings) -> Database:
    """Returns the database to use: ``--database``, else the configured one, else (only if
    asked for) the embedded PostgreSQL."""
    from referee.store.database import (
        DatabaseUrlError,
        EmbeddedPostgresMissingError,
        embedded_url,
        parse_database_url,
    )

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
    from referee.domain.revisions import UnknownRevisionError
    from referee.store.errors import describe_failure, is_outage, sqlstate

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
        elif sqlstate(failed) == LOCK_NOT_AVAILABLE:
            hint = "another session held a lock it needs: docs/runbook.md, who holds the lock"
        else:
            hint = "is the server up, and the URL (--database, REFEREE_DATABASE_URL) right?"
        raise UnavailableError(
            f"PostgreSQL at {db.shown}: {describe_failure(failed)} ({hint})"
        ) from failed


def engine_of(db: Database, settings: Settings, limits: SessionLimits | None = None) -> AsyncEngine:
    """Returns an engine of the database, pooled as the settings say, its sessions under
    ``limits`` (``referee serve``'s; the other commands set none)."""
    from referee.store.database import create_engine

    return create_engine(db.url, settings.db_pool_size, settings.db_max_overflow, limits)


def probe(
    db: Database,
    settings: Settings,
    check: Callable[[AsyncEngine], Awaitable[object]] | None = None,
) -> None:
    """Connects once (10 s at most) so that an unreachable server fails before any work,
    then runs ``check`` on the same engine (a schema revision check)."""
    import asyncio

    from referee.store.database import check_reachable

    async def run() -> None:
        made = engine_of(db, settings)
        try:
            await check_reachable(made)
            if check is not None:
                await check(made)
        finally:
            await made.dispose()

    with reaching(db):
        asyncio.run(run())


async def require_schema(engine: AsyncEngine, db: Database, doing: str) -> str:
    """Returns the database's schema revision; fails (exit 3) unless it is this referee's."""
    from referee.store.database import newest_revision, schema_revision

    revision = await schema_revision(engine)
    if revision is None:
        raise UnavailableError(f"{db.shown} has no referee schema: run referee migrate first")
    if revision != newest_revision():
        raise _other_revision(db, revision, doing)
    return revision


async def refuse_newer(engine: AsyncEngine, db: Database) -> None:
    """Fails (exit 3) on a schema revision none of this referee's migrations knows: a newer
    referee's, which this one cannot downgrade."""
    from referee.store.database import known_revisions, schema_revision

    revision = await schema_revision(engine)
    if revision is not None and revision not in known_revisions():
        raise _other_revision(db, revision, "migrates to")


def _other_revision(db: Database, revision: str, doing: str) -> UnavailableError:
    from referee.store.database import known_revisions, newest_revision

    if revision in known_revisions():
        hint = "run referee migrate (or the referee that migrated it)"
    else:
        hint = "a newer referee migrated it: use that one (this one cannot downgrade it)"
    return UnavailableError(
        f"{db.shown} has schema revision {revision}, this referee {doing} {newest_revision()}: "
        f"{hint}"
    )


def probe_schema(db: Database, settings: Settings, doing: str) -> None:
    """Connects once and checks the schema revision before any work."""
    probe(db, settings, lambda made: require_schema(made, db, doing))


def migrate_to_newest(db: Database, settings: Settings) -> None:
    """Connects once, refuses a schema of a newer referee (exit 3, as ``serve`` and
    ``audit`` do), then migrates."""
    from referee.store.database import migrate

    probe(db, settings, lambda made: refuse_newer(made, db))
    with reaching(db):
        migrate(db.url, partitions=settings.partition_policy)
