"""Commands that use the store: ``replay --database``, ``migrate``, ``audit``, ``demo``."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from referee.processing.audit import AuditReport
from referee.processing.replay import ProgressBar, ReplayReport, format_summary
from referee.service.settings import Settings
from referee.store.database import EmbeddedPostgresMissingError, create_engine, embedded_url
from referee.store.database import migrate as run_migrations


def database_url(explicit: str | None, settings: Settings, *, embedded_default: bool) -> str:
    """Returns the URL to use: explicit, else configured, else the embedded PostgreSQL."""
    if explicit:
        return explicit
    if settings.database_url:
        return settings.database_url
    if not embedded_default:
        raise SystemExit("no database: pass --database URL or set REFEREE_DATABASE_URL")
    print(f"using the embedded PostgreSQL under {settings.data_dir}/pgdata", file=sys.stderr)
    try:
        return embedded_url(Path(settings.data_dir))
    except EmbeddedPostgresMissingError as missing:  # one line for the user, not a traceback
        raise SystemExit(str(missing)) from None


def _engine(url: str, settings: Settings) -> AsyncEngine:
    return create_engine(url, settings.db_pool_size, settings.db_max_overflow)


def migrate(args: argparse.Namespace) -> int:
    """``referee migrate``: Alembic upgrade to head."""
    settings = Settings()
    url = database_url(args.database, settings, embedded_default=True)
    run_migrations(url)
    print("database schema is at the newest revision", file=sys.stderr)
    return 0


def replay_store(args: argparse.Namespace) -> int:
    """``referee replay LOG --database [URL]``."""
    from referee.processing.replay_store import replay_into_store

    settings = Settings()
    log: Path = args.log.resolve()
    if not log.is_file():
        print(f"referee replay: no such log: {log}", file=sys.stderr)
        return 2
    url = database_url(args.database, settings, embedded_default=True)
    run_migrations(url)
    bar = None
    if sys.stderr.isatty():
        with log.open("rb") as f:
            bar = ProgressBar(sum(1 for _ in f))
    out = sys.stdout.buffer if args.output is None else args.output.open("wb")
    rejected = args.rejected.open("wb") if args.rejected else None

    async def run() -> tuple[ReplayReport, int]:
        engine = _engine(url, settings)
        try:
            return await replay_into_store(
                log,
                engine,
                out,
                rejected,
                batch_size=args.batch_size,
                max_event_bytes=args.max_event_bytes,
                cache_games=settings.cache_games,
                progress=bar,
            )
        finally:
            await engine.dispose()

    try:
        report, skipped = asyncio.run(run())
    finally:
        out.flush()
        if args.output is not None:
            out.close()
        if rejected is not None:
            rejected.close()
    if bar is not None:
        bar.close()
    print(format_summary(report), file=sys.stderr)
    if skipped:
        print(f"resumed: {skipped} lines were already in the store", file=sys.stderr)
    return 0


def audit(args: argparse.Namespace) -> int:
    """``referee audit``: exits 1 on any difference."""
    settings = Settings()
    url = database_url(args.database, settings, embedded_default=True)
    report = asyncio.run(_audit(url, settings))
    print(report.summary())
    return 0 if report.passed else 1


async def _audit(url: str, settings: Settings) -> AuditReport:
    from referee.processing.audit import audit as run_audit
    from referee.store.views import StoreViews

    engine = _engine(url, settings)
    try:
        return await run_audit(StoreViews(engine), settings.max_event_bytes)
    finally:
        await engine.dispose()


def demo(args: argparse.Namespace) -> int:
    """``referee demo``: the example log into the (embedded) store; verdicts, standings, audit."""
    from referee.processing.audit import audit as run_audit
    from referee.processing.replay_store import replay_into_store
    from referee.store.views import StoreViews

    settings = Settings()
    url = database_url(args.database, settings, embedded_default=True)
    run_migrations(url)
    log: Path = args.log.resolve()

    async def run() -> int:
        engine = _engine(url, settings)
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
            return 0 if checked.passed else 1
        finally:
            await engine.dispose()

    return asyncio.run(run())


async def _print_store(engine: AsyncEngine) -> None:
    from referee.store.views import StoreViews

    views = StoreViews(engine)
    bodies = await views.verdict_bodies()
    print(f"== verdicts ({len(bodies)}) ==")
    for _, body in bodies:
        print(body)
    print("\n== standings ==")
    print(f"{'game':<18} {'player':<12} {'score':>6} {'fouls':>6}  {'round':>5}  game won by")
    for s in await views.standings():
        won = s.game_winner or "-"
        print(f"{s.game_id:<18} {s.player:<12} {s.score:>6} {s.fouls:>6}  {s.round or 0:>5}  {won}")
