"""Commands of a store that lives for seasons: ``maintain`` (the time partitions ahead) and
``archive`` (old partitions to Parquet, verified, then dropped); docs/store.md, docs/archive.md.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import datetime

from referee.cli.errors import EXIT_OK
from referee.cli.store_commands import (
    _engine,
    _probe,
    choose_database,
    reaching,
    require_schema,
    settings_or_exit,
)
from referee.store.partitions import TimePartition, create_partitions, list_partitions


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
