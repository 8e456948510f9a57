"""``referee migrate``: the schema to the newest revision (Alembic), or ``--down-to`` an
earlier one for a rollback (docs/releases.md, "Rolling back")."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from referee.cli.args import Commands
from referee.cli.database import (
    Database,
    choose_database,
    database_flags,
    migrate_to_newest,
    probe,
    reaching,
    refuse_newer,
    settings_or_exit,
)
from referee.cli.errors import EXIT_OK, UsageError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from referee.service.settings import Settings


def add(commands: Commands) -> None:
    """Adds ``referee migrate``."""
    migrate = commands.add("migrate", "upgrade the database schema to the newest", run)
    database_flags(migrate)
    migrate.add_argument(
        "--down-to",
        metavar="REVISION",
        help="downgrade the schema to this earlier revision instead, for a rollback to the "
        "release at it (docs/releases.md, 'Rolling back': what each downgrade loses)",
    )


def run(args: argparse.Namespace) -> int:
    """Upgrades the schema to the newest revision (``--down-to REVISION``: downgrades it)."""
    from referee.store.database import newest_revision

    settings = settings_or_exit()
    db = choose_database(args.database, embedded=args.embedded, settings=settings)
    if args.down_to is not None:
        return _down(db, settings, args.down_to)
    migrate_to_newest(db, settings)
    print(f"{db.shown}: the schema is at the newest revision, {newest_revision()}", file=sys.stderr)
    return EXIT_OK


def _down(db: Database, settings: Settings, target: str) -> int:
    """Downgrades the schema to ``target``, an earlier revision this referee knows (a usage
    error, exit 2, for one it does not know or that is not below the store's)."""
    from referee.store.database import downgrade, known_revisions, schema_revision

    if target not in known_revisions():
        known = ", ".join(sorted(known_revisions()))
        raise UsageError(f"no schema revision {target!r} (this referee knows {known})")
    found: list[str | None] = []

    async def check(engine: AsyncEngine) -> None:
        await refuse_newer(engine, db)
        found.append(await schema_revision(engine))

    probe(db, settings, check)
    current = found[0]
    if current is None or current <= target:
        raise UsageError(
            f"{db.shown} is at schema revision {current}, not above {target}: nothing to downgrade"
        )
    with reaching(db):
        downgrade(db.url, target)
    print(f"{db.shown}: the schema is at revision {target} (was {current})", file=sys.stderr)
    return EXIT_OK
