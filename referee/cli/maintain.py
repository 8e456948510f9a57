"""``referee maintain``: the store's time partitions made ahead of the clock (the chart's
hourly CronJob; docs/store.md)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
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
from referee.cli.errors import EXIT_OK

if TYPE_CHECKING:
    from referee.store.partitions import TimePartition


def add(commands: Commands) -> None:
    """Adds ``referee maintain``."""
    maintain = commands.add(
        "maintain", "make the store's time partitions ahead of the clock (a CronJob runs it)", run
    )
    database_flags(maintain)


def run(args: argparse.Namespace) -> int:
    """Makes the time partitions ahead of the clock; says how far they reach and which is
    the oldest still in PostgreSQL."""
    import asyncio

    from referee.store.partitions import create_partitions, list_partitions

    settings = settings_or_exit()
    db = choose_database(args.database, embedded=args.embedded, settings=settings)
    probe(db, settings)
    policy = settings.partition_policy

    async def work() -> tuple[datetime, list[TimePartition]]:
        engine = engine_of(db, settings)
        try:
            await require_schema(engine, db, "maintains")
            async with engine.connect() as conn:
                raw = await conn.get_raw_connection()
                covered = await create_partitions(raw.driver_connection, policy)
                return covered, await list_partitions(raw.driver_connection)
        finally:
            await engine.dispose()

    with reaching(db):
        covered, partitions = asyncio.run(work())
    journal = [p for p in partitions if p.table == "journal"]
    oldest = journal[0].lower if journal and journal[0].lower is not None else None
    print(
        f"{db.shown}: {len(journal)} time partitions a table (interval {policy.interval}), "
        f"made up to {covered.isoformat()}; the oldest from "
        f"{oldest.isoformat() if oldest else 'the beginning (rows of before migration 0010)'}",
        file=sys.stderr,
    )
    return EXIT_OK
