"""The ``referee`` command: thin entry points that parse arguments and call one handler."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from referee.contracts.parse import DEFAULT_MAX_EVENT_BYTES

_PACKAGE = Path(__file__).resolve().parents[1]
EXAMPLE_LOG = (
    _PACKAGE / "_data" / "examples" / "tournament.jsonl"  # an installed wheel carries it
    if (_PACKAGE / "_data" / "examples").is_dir()
    else _PACKAGE.parent / "examples" / "tournament.jsonl"  # the source tree
)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line."""
    parser = _parser()
    args = parser.parse_args(argv)
    handler = args.handler
    result: int = handler(args)
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="referee", description="An event-sourced referee for dominoes."
    )
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    replay = sub.add_parser("replay", help="referee an event log (JSON Lines)")
    replay.add_argument("log", type=Path, help="the event log, one input event per line")
    replay.add_argument("--output", type=Path, help="verdicts as JSON Lines (default: stdout)")
    replay.add_argument("--rejected", type=Path, help="EventRejected lines go here")
    replay.add_argument(
        "--max-event-bytes", type=int, default=DEFAULT_MAX_EVENT_BYTES, help="size limit per event"
    )
    replay.add_argument(
        "--workers",
        type=int,
        default=0,
        help="processes, each refereeing a shard of the games (default: one per core for a "
        "large log)",
    )
    replay.add_argument(
        "--database",
        nargs="?",
        const="",
        metavar="URL",
        help="store everything in PostgreSQL through the processing step; without a URL: "
        "$REFEREE_DATABASE_URL, else the embedded PostgreSQL",
    )
    replay.add_argument("--batch-size", type=int, default=2000, help="records per transaction")
    replay.set_defaults(handler=_replay)

    migrate = sub.add_parser("migrate", help="upgrade the database schema to the newest")
    migrate.add_argument("--database", metavar="URL", help="default: $REFEREE_DATABASE_URL")
    migrate.set_defaults(handler=_migrate)

    audit = sub.add_parser("audit", help="re-derive every stored verdict from the journal")
    audit.add_argument("--database", metavar="URL", help="default: $REFEREE_DATABASE_URL")
    audit.set_defaults(handler=_audit)

    demo = sub.add_parser("demo", help="referee the bundled example into the embedded store")
    demo.add_argument(
        "log", type=Path, nargs="?", default=EXAMPLE_LOG, help="default: the bundled example"
    )
    demo.add_argument("--database", metavar="URL", help="default: the embedded PostgreSQL")
    demo.set_defaults(handler=_demo)

    simulate = sub.add_parser("simulate", help="write a realistic event log of many games")
    simulate.add_argument("--games", type=int, default=100, help="number of games")
    simulate.add_argument("--seed", type=int, default=1, help="random seed")
    simulate.add_argument("--output", type=Path, help="the log (default: stdout)")
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
    simulate.add_argument("--foul-rate", type=float, default=0.02, help="fouls per turn")
    simulate.add_argument("--bad-rate", type=float, default=0.0, help="bad lines per event")
    simulate.add_argument(
        "--duplicate-rate", type=float, default=0.0, help="re-sent events per event"
    )
    simulate.add_argument("--concurrency", type=int, default=200, help="games in play at once")
    simulate.add_argument("--max-rounds", type=int, default=3, help="most rounds per game")
    simulate.add_argument(
        "--keyed", action="store_true", help="prefix each line with its game id and a tab"
    )
    simulate.set_defaults(handler=_simulate)
    serve = sub.add_parser("serve", help="run the live referee on Kafka (see README)")
    serve.add_argument(
        "--migrate", action="store_true", help="upgrade the database schema before starting"
    )
    serve.set_defaults(handler=_serve)

    schemas = sub.add_parser("schemas", help="write the JSON Schemas of every message")
    schemas.add_argument("--output", type=Path, default=Path("schemas"), help="directory")
    schemas.set_defaults(handler=_schemas)
    return parser


def _migrate(args: argparse.Namespace) -> int:
    from referee.cli.store_commands import migrate

    return migrate(args)


def _audit(args: argparse.Namespace) -> int:
    from referee.cli.store_commands import audit

    return audit(args)


def _demo(args: argparse.Namespace) -> int:
    from referee.cli.store_commands import demo

    return demo(args)


def _schemas(args: argparse.Namespace) -> int:
    from referee.contracts.schemas import write_schemas
    from referee.service.asyncapi import render_asyncapi

    for path in write_schemas(args.output):
        print(path, file=sys.stderr)
    asyncapi = args.output / "asyncapi.json"
    asyncapi.write_text(render_asyncapi(), encoding="utf-8")
    print(asyncapi, file=sys.stderr)
    return 0


def _serve(args: argparse.Namespace) -> int:
    from referee.cli.serve import serve

    return serve(migrate_first=args.migrate)


def _open_out(path: Path | None) -> BinaryIO:
    if path is None:
        return sys.stdout.buffer
    return path.open("wb")


def _replay(args: argparse.Namespace) -> int:
    from referee.processing.replay import ProgressBar, default_workers, format_summary, replay

    log: Path = args.log
    if args.database is not None:
        from referee.cli.store_commands import replay_store

        return replay_store(args)
    if not log.is_file():
        print(f"referee replay: no such log: {log}", file=sys.stderr)
        return 2
    bar = None
    if sys.stderr.isatty():
        with log.open("rb") as f:
            bar = ProgressBar(sum(1 for _ in f))
    out = _open_out(args.output)
    rejected = args.rejected.open("wb") if args.rejected else None
    try:
        report = replay(
            log,
            out,
            rejected,
            max_event_bytes=args.max_event_bytes,
            workers=args.workers or default_workers(log),
            progress=bar,
        )
    finally:
        out.flush()
        if args.output is not None:
            out.close()
        if rejected is not None:
            rejected.close()
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
        print(f"referee simulate: {problem}", file=sys.stderr)
        return 2
    out = _open_out(args.output)
    try:
        count = 0
        for game_id, line in simulate(options):
            out.write(game_id.encode() + b"\t" + line + b"\n" if args.keyed else line + b"\n")
            count += 1
    finally:
        out.flush()
        if args.output is not None:
            out.close()
    print(f"simulate: wrote {count} lines for {args.games} games", file=sys.stderr)
    return 0
