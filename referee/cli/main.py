"""The ``referee`` command: thin entry points that parse arguments and call one handler.

Every failure is one line on standard error (``--debug`` adds the traceback) and an exit
status that says what kind of failure it was (``referee/cli/errors.py``, the README).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from referee.cli.args import (
    WORKERS_CAP,
    HelpFormatter,
    Parser,
    close_output,
    distinct_outputs,
    integer,
    log_size,
    open_log,
    open_output,
    rate,
    rules_revision,
    utf8_name,
)
from referee.cli.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    CommandError,
    UsageError,
)
from referee.contracts.parse import DEFAULT_MAX_EVENT_BYTES
from referee.service.limits import BATCH_SIZE_CAP, MAX_EVENT_BYTES_CAP

_PACKAGE = Path(__file__).resolve().parents[1]
EXAMPLE_LOG = (
    _PACKAGE / "_data" / "examples" / "tournament.jsonl"  # an installed wheel carries it
    if (_PACKAGE / "_data" / "examples").is_dir()
    else _PACKAGE.parent / "examples" / "tournament.jsonl"  # the source tree
)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    debug: bool = args.debug
    try:
        result: int = args.handler(args)
    except BrokenPipeError:
        # the reader of our output left (`| head`): quiet, as a program killed by SIGPIPE;
        # stdout goes to /dev/null so that the interpreter's final flush cannot fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        _report(args, "interrupted")
        return EXIT_INTERRUPTED
    except CommandError as failed:
        if debug:
            traceback.print_exception(failed)
        if failed.message:
            _report(args, failed.message, failed.code)
        return failed.code
    except Exception as bug:  # noqa: BLE001 - the last resort: one line, not a traceback
        if debug:
            traceback.print_exception(bug)
        text = str(bug).splitlines()[0] if str(bug) else ""
        _report(
            args,
            f"internal error: {type(bug).__name__}{': ' + text if text else ''} "
            "(a defect of the referee; --debug shows the traceback)",
            EXIT_INTERNAL,
        )
        return EXIT_INTERNAL
    return result


def _report(args: argparse.Namespace, message: str, code: int | None = None) -> None:
    """Prints a failure: one plain line, or for ``serve`` one JSON log line like its logs."""
    if getattr(args, "json_errors", False):
        from referee.service.logs import failure_line

        print(failure_line("referee.serve", message, code), file=sys.stderr)
    else:
        print(f"referee {args.command}: {message}", file=sys.stderr)


def _version() -> str:
    # imported here: importlib.metadata (and the email package it imports) costs every
    # command ~50 ms of start-up, and only --version needs it
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("referee")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


class _VersionAction(argparse.Action):
    """``--version``: the installed version and the rules revisions it judges under, looked up
    only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="show the version and the rules revision, and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,  # noqa: ARG002 - argparse's signature
        values: object,  # noqa: ARG002
        option_string: str | None = None,  # noqa: ARG002
    ) -> None:
        from referee.domain.revisions import NEWEST, REVISIONS

        known = ", ".join(str(n) for n in sorted(REVISIONS))
        print(f"referee {_version()} (rules revision {NEWEST}; judges revisions {known})")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    common = Parser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the traceback of a failure",
    )
    parser = Parser(
        prog="referee",
        description="An event-sourced referee for dominoes.",
        epilog="exit status: 0 done, 1 the audit found a difference, 2 bad usage or "
        "configuration, 3 PostgreSQL/Kafka/a port/the embedded extra unavailable, "
        "4 a defect of the referee",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction)
    parser.add_argument("--debug", action="store_true", help="show the traceback of a failure")
    sub = parser.add_subparsers(required=True, metavar="COMMAND", dest="command")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        made: argparse.ArgumentParser = sub.add_parser(
            name, help=help_text, description=help_text, parents=[common],
            formatter_class=HelpFormatter,
        )  # fmt: skip
        return made

    replay = command("replay", "referee an event log (JSON Lines)")
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
    replay.set_defaults(handler=_replay)

    migrate = command("migrate", "upgrade the database schema to the newest")
    _database_flags(migrate)
    migrate.add_argument(
        "--down-to",
        metavar="REVISION",
        help="downgrade the schema to this earlier revision instead, for a rollback to the "
        "release at it (docs/releases.md, 'Rolling back': what each downgrade loses)",
    )
    migrate.set_defaults(handler=_migrate)

    audit = command("audit", "re-derive every stored verdict from the journal")
    _database_flags(audit)
    audit.add_argument("--json", action="store_true", help="print the report as JSON")
    audit.add_argument(
        "--revision",
        type=rules_revision,
        metavar="N",
        help="a differential audit: judge every game under candidate rules revision N (not "
        "its own) and list the games whose verdicts it would change, with the first "
        "differing verdict of each (exit 1 if any)",
    )
    audit.add_argument(
        "--archive",
        nargs="?",
        const="",
        metavar="URL",
        help="read the archive (a directory or s3://bucket/prefix; without a URL: "
        "$REFEREE_ARCHIVE_URL) and the store as one journal; check every archived file "
        "against its manifest",
    )
    audit.set_defaults(handler=_audit)

    maintain = command(
        "maintain", "make the store's time partitions ahead of the clock (a CronJob runs it)"
    )
    _database_flags(maintain)
    maintain.set_defaults(handler=_maintain)

    archive = command(
        "archive", "move old time partitions to the Parquet archive, verified, then drop them"
    )
    _database_flags(archive)
    archive.add_argument(
        "--to",
        metavar="URL",
        help="a directory or s3://bucket/prefix (default: $REFEREE_ARCHIVE_URL)",
    )
    archive.add_argument(
        "--before",
        type=_moment,
        metavar="TIME",
        help="archive what was recorded before this ISO 8601 time (default: now less "
        "$REFEREE_ARCHIVE_RETENTION)",
    )
    archive.set_defaults(handler=_archive)

    partitions = command(
        "partitions",
        "the input topic's partitions in Kafka and in the store; --accept records a new count",
    )
    _database_flags(partitions)
    partitions.add_argument(
        "--accept",
        action="store_true",
        help="record the input topic's partition count (after partitions were added), once "
        "every record of the old partitions is processed (docs/runbook.md)",
    )
    partitions.set_defaults(handler=_partitions)

    explain = command("explain", "the evidence behind every verdict, with the rule it applies")
    _explain_flags(explain)
    explain.set_defaults(handler=_explain)

    demo = command("demo", "referee the bundled example into the embedded store")
    demo.add_argument(
        "log", nargs="?", default=str(EXAMPLE_LOG), metavar="LOG", help="the event log"
    )
    demo.add_argument(
        "--database",
        metavar="URL",
        help="default: the embedded PostgreSQL (never $REFEREE_DATABASE_URL)",
    )
    demo.set_defaults(handler=_demo)

    simulate = command("simulate", "write a realistic event log of many games")
    simulate.add_argument("--games", type=integer(1), default=100, help="number of games")
    simulate.add_argument("--seed", type=integer(), default=1, help="random seed")
    simulate.add_argument("--output", type=Path, help="the log (default: stdout, also -)")
    simulate.add_argument(
        "--rules",
        choices=("default", "random", "edition1"),
        default="random",
        help="rule options: all defaults; drawn across every family; drawn as edition 1 did "
        "(the same seed gives edition 1's log)",
    )
    simulate.add_argument(
        "--layout", choices=("line", "spinner", "trains"), help="every game on this layout"
    )
    simulate.add_argument(
        "--teams", action="store_true", help="every game in partnerships (4 or 6 players)"
    )
    simulate.add_argument(
        "--play-scoring",
        choices=("none", "fives", "threes", "fives_and_threes"),
        help="every game scores during play so (line or spinner)",
    )
    simulate.add_argument("--scoring", choices=("award", "penalty"), help="every game scored so")
    simulate.add_argument("--foul-rate", type=rate, default=0.02, help="fouls per turn")
    simulate.add_argument("--bad-rate", type=rate, default=0.0, help="bad lines per event")
    simulate.add_argument(
        "--duplicate-rate", type=rate, default=0.0, help="re-sent events per event"
    )
    simulate.add_argument(
        "--concurrency", type=integer(1), default=200, help="games in play at once"
    )
    simulate.add_argument("--max-rounds", type=integer(1), default=3, help="most rounds per game")
    simulate.add_argument(
        "--keyed", action="store_true", help="prefix each line with its game id and a tab"
    )
    simulate.set_defaults(handler=_simulate)
    serve = command("serve", "run the live referee on Kafka (see README)")
    serve.add_argument(
        "--migrate", action="store_true", help="upgrade the database schema before starting"
    )
    _database_flags(serve)
    serve.set_defaults(handler=_serve, json_errors=True)

    schemas = command("schemas", "write the JSON Schemas of every message")
    schemas.add_argument("--output", type=Path, default=Path("schemas"), help="directory")
    schemas.set_defaults(handler=_schemas)
    return parser


def _database_flags(parser: argparse.ArgumentParser) -> None:
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


def _explain_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "log", nargs="?", metavar="LOG", help="the event log (- for stdin); or --database"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--database",
        nargs="?",
        const="",
        metavar="URL",
        help="explain the store's journal, read as audit reads it (without a URL: "
        "$REFEREE_DATABASE_URL)",
    )
    where.add_argument("--embedded", action="store_true", help="the embedded PostgreSQL's journal")
    parser.add_argument("--game", metavar="ID", help="only this game")
    parser.add_argument(
        "--seq", type=integer(1), metavar="N", help="only the verdicts of this event (with --game)"
    )
    parser.add_argument(
        "--as",
        dest="reader",
        metavar="WHO",
        help="a player's view (their own hand; every hand once a round is over) or "
        "'spectator' (no hand before its round ends); default: the auditor's, every hand",
    )
    parser.add_argument(
        "--json", action="store_true", help="one JSON object a verdict (schemas/Explanation)"
    )
    parser.add_argument("--output", type=Path, help="default: stdout")
    parser.add_argument(
        "--max-event-bytes",
        type=integer(1, MAX_EVENT_BYTES_CAP, "64 MiB"),
        default=DEFAULT_MAX_EVENT_BYTES,
        help="size limit per event, as the log was replayed with",
    )
    parser.add_argument(
        "--rules-revision",
        type=rules_revision,
        metavar="N",
        help="the rules revision a LOG's games are judged under, as it was replayed with "
        "(default: the newest; from a store, each game's own)",
    )


def _explain(args: argparse.Namespace) -> int:
    from referee.cli.explain import explain

    return explain(args)


def _migrate(args: argparse.Namespace) -> int:
    from referee.cli.store_commands import migrate

    return migrate(args)


def _audit(args: argparse.Namespace) -> int:
    from referee.cli.store_commands import audit

    return audit(args)


def _archive(args: argparse.Namespace) -> int:
    from referee.cli.seasons import archive

    return archive(args)


def _moment(text: str) -> object:
    from referee.cli.seasons import moment

    return moment(text)


def _maintain(args: argparse.Namespace) -> int:
    from referee.cli.seasons import maintain

    return maintain(args)


def _partitions(args: argparse.Namespace) -> int:
    from referee.cli.partitions import partitions

    return partitions(args)


def _demo(args: argparse.Namespace) -> int:
    from referee.cli.store_commands import demo

    return demo(args)


def _schemas(args: argparse.Namespace) -> int:
    from referee.contracts.schemas import write_schemas
    from referee.service.asyncapi import render_asyncapi

    output: Path = args.output
    if output.exists() and not output.is_dir():
        raise UsageError(f"--output {output} is a file; schemas writes a directory of them")
    try:
        for path in write_schemas(output):
            print(path, file=sys.stderr)
        asyncapi = output / "asyncapi.json"
        asyncapi.write_text(render_asyncapi(), encoding="utf-8")
    except OSError as failed:
        raise UsageError(f"cannot write --output {output}: {failed.strerror or failed}") from None
    print(asyncapi, file=sys.stderr)
    return 0


def _serve(args: argparse.Namespace) -> int:
    from referee.cli.serve import serve

    return serve(args)


def _replay(args: argparse.Namespace) -> int:
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
        from referee.cli.store_commands import replay_store

        return replay_store(args, log)
    from referee.cli.progress import ProgressBar, format_summary
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
    from referee.domain.revisions import NEWEST

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
    return 0


def _simulate(args: argparse.Namespace) -> int:
    from referee.simulate import SimulationOptions, options_problem, simulate

    options = SimulationOptions(
        games=args.games,
        seed=args.seed,
        rules=args.rules,
        foul_rate=args.foul_rate,
        bad_rate=args.bad_rate,
        duplicate_rate=args.duplicate_rate,
        concurrency=args.concurrency,
        max_rounds=args.max_rounds,
        layout=args.layout,
        teams=args.teams,
        play_scoring=args.play_scoring,
        scoring=args.scoring,
    )
    problem = options_problem(options)
    if problem is not None:
        raise UsageError(problem)
    out = open_output(args.output, "--output")
    try:
        count = 0
        for game_id, line in simulate(options):
            out.write(game_id.encode() + b"\t" + line + b"\n" if args.keyed else line + b"\n")
            count += 1
    finally:
        close_output(out)
    print(f"simulate: wrote {count} lines for {args.games} games", file=sys.stderr)
    return 0
