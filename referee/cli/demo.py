"""``referee demo [LOG]``: the README's first command: the example log refereed into the
embedded PostgreSQL (or ``--database URL``), then its verdicts, standings and audit."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from referee.cli.args import Commands, open_log
from referee.cli.database import (
    choose_database,
    engine_of,
    migrate_to_newest,
    reaching,
    settings_or_exit,
)
from referee.cli.errors import EXIT_DIFFERENCE, EXIT_OK, UsageError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

_PACKAGE = Path(__file__).resolve().parents[1]
EXAMPLE_LOG = (
    _PACKAGE / "_data" / "examples" / "tournament.jsonl"  # an installed wheel carries it
    if (_PACKAGE / "_data" / "examples").is_dir()
    else _PACKAGE.parent / "examples" / "tournament.jsonl"  # the source tree
)


def add(commands: Commands) -> None:
    """Adds ``referee demo``."""
    demo = commands.add("demo", "referee the bundled example into the embedded store", run)
    demo.add_argument(
        "log", nargs="?", default=str(EXAMPLE_LOG), metavar="LOG", help="the event log"
    )
    demo.add_argument(
        "--database",
        metavar="URL",
        help="default: the embedded PostgreSQL (never $REFEREE_DATABASE_URL)",
    )


def run(args: argparse.Namespace) -> int:
    """Referees the log into the store, prints its verdicts and standings, then audits."""
    import asyncio

    from referee.cli.progress import format_summary
    from referee.store.views import StoreViews
    from referee.usecases.audit import audit
    from referee.usecases.replay_store import replay_into_store

    log = open_log(args.log)
    if not isinstance(log, Path):
        raise UsageError("demo reads a log file, not standard input (try referee replay -)")
    log = log.resolve()
    settings = settings_or_exit()
    db = choose_database(args.database, embedded=not args.database, settings=settings)
    migrate_to_newest(db, settings)

    async def work() -> int:
        engine = engine_of(db, settings)
        try:
            report, skipped = await replay_into_store(
                log, engine, None, max_event_bytes=settings.max_event_bytes
            )
            print(f"refereed {log.name} into PostgreSQL", file=sys.stderr)
            print(format_summary(report), file=sys.stderr)
            if skipped:
                print(f"({skipped} lines were already in the store)", file=sys.stderr)
            await _print_store(engine)
            checked = await audit(StoreViews(engine), settings.max_event_bytes)
            print("\n== audit ==")
            print(checked.summary())
            return EXIT_OK if checked.passed else EXIT_DIFFERENCE
        finally:
            await engine.dispose()

    with reaching(db):
        return asyncio.run(work())


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
