"""``referee replay LOG``: a log refereed in memory (sharded by game over worker processes),
or through the processing step into a store (``--database [URL]``, ``--embedded``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from referee.cli.args import (
    WORKERS_CAP,
    Commands,
    close_output,
    distinct_outputs,
    integer,
    log_size,
    open_log,
    open_output,
    rules_revision,
    utf8_name,
)
from referee.cli.errors import EXIT_OK, UsageError
from referee.contracts.parse import DEFAULT_MAX_EVENT_BYTES
from referee.service.limits import BATCH_SIZE_CAP, MAX_EVENT_BYTES_CAP

if TYPE_CHECKING:
    from referee.usecases.replay import ReplayReport


def add(commands: Commands) -> None:
    """Adds ``referee replay``."""
    replay = commands.add("replay", "referee an event log (JSON Lines)", run)
    replay.add_argument(
        "log", nargs="?", metavar="LOG", help="the event log, one input event per line; - for stdin"
    )
    replay.add_argument("--output", type=Path, help="verdicts as JSON Lines (default: stdout)")
    replay.add_argument("--rejected", type=Path, help="EventRejected lines go here")
    replay.add_argument(
        "--max-event-bytes",
        type=integer(1, MAX_EVENT_BYTES_CAP, "64 MiB"),
        default=DEFAULT_MAX_EVENT_BYTES,
        help="size limit per event",
    )
    replay.add_argument(
        "--workers",
        type=integer(1, WORKERS_CAP, "each is a process; past the cores they only cost memory"),
        help="processes, each refereeing a shard of the games (default: one per core, at most "
        f"8, for a log file of 4 MiB or more, else 1; at most {WORKERS_CAP})",
    )
    store = replay.add_mutually_exclusive_group()
    store.add_argument(
        "--database",
        nargs="?",
        const="",
        metavar="URL",
        help="store everything in PostgreSQL through the processing step (resumable); "
        "without a URL: $REFEREE_DATABASE_URL. The log comes first: replay LOG --database",
    )
    store.add_argument(
        "--embedded",
        action="store_true",
        help="store everything in the embedded PostgreSQL under $REFEREE_DATA_DIR",
    )
    replay.add_argument(
        "--source-name",
        metavar="NAME",
        help="the log's name in rejections and, with --database/--embedded, the key of its "
        "stored positions (default: the path; needed for - with a store)",
    )
    replay.add_argument(
        "--rules-revision",
        type=rules_revision,
        metavar="N",
        help="the rules revision every game of the log starts under (default: the newest; "
        "with a store, $REFEREE_RULES_REVISION; a game resumed from the store keeps its own)",
    )
    replay.add_argument(
        "--batch-size",
        type=integer(1, BATCH_SIZE_CAP),
        default=2000,
        help="records per transaction (with a store)",
    )


def run(args: argparse.Namespace) -> int:
    """Referees the log in memory, or into the store with ``--database``/``--embedded``."""
    if (
        args.database
        and "://" not in args.database
        and (Path(args.database).exists() or args.database.endswith(".jsonl"))
    ):
        raise UsageError(
            f"--database {args.database} is a log, not a URL: the log comes first, "
            f"referee replay {args.database} --database [URL]"
        )
    if args.log is None:
        raise UsageError("the log is missing: referee replay LOG (- for standard input)")
    log = open_log(args.log)
    distinct_outputs(args.output, args.rejected)
    if args.source_name is not None:
        utf8_name(args.source_name, "--source-name", "give a name in UTF-8")
    if args.database is not None or args.embedded:
        return _into_store(args, log)
    return _in_memory(args, log)


def _in_memory(args: argparse.Namespace, log: Path | BinaryIO) -> int:
    from referee.cli.progress import ProgressBar, format_summary
    from referee.domain.revisions import NEWEST
    from referee.usecases.replay import default_workers, replay

    if args.rejected and args.source_name is None and isinstance(log, Path):
        utf8_name(
            str(log),
            "the log's path",
            "it names the log in the rejections: give --source-name NAME",
        )
    bar = ProgressBar(log_size(log)) if sys.stderr.isatty() else None
    out = open_output(args.output, "--output", log=log)
    rejected = open_output(args.rejected, "--rejected", log=log) if args.rejected else None
    try:
        report = replay(
            log,
            out,
            rejected,
            name=args.source_name,
            max_event_bytes=args.max_event_bytes,
            workers=args.workers or default_workers(log),
            progress=bar,
            rules_revision=args.rules_revision or NEWEST,
        )
    finally:
        close_output(out)
        if rejected is not None:
            close_output(rejected)
        if bar is not None:
            bar.close()
    print(format_summary(report), file=sys.stderr)
    return EXIT_OK


def _into_store(args: argparse.Namespace, log: Path | BinaryIO) -> int:
    """``referee replay LOG --database [URL]`` or ``--embedded``."""
    import asyncio

    from referee.cli.collector import tune
    from referee.cli.database import (
        choose_database,
        engine_of,
        migrate_to_newest,
        reaching,
        settings_or_exit,
    )
    from referee.cli.progress import ProgressBar, format_summary
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
        migrate_to_newest(db, settings)
        bar = ProgressBar(log_size(log)) if sys.stderr.isatty() else None
        tune()

        async def work() -> tuple[ReplayReport, int]:
            engine = engine_of(db, settings)
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
            report, skipped = asyncio.run(work())
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
