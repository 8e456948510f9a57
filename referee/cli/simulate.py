"""``referee simulate``: a realistic, seeded log of many interleaved games, honest play with
fouls of every kind (``referee.simulate``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from referee.cli.args import Commands, close_output, integer, open_output, rate
from referee.cli.errors import EXIT_OK, UsageError


def add(commands: Commands) -> None:
    """Adds ``referee simulate``."""
    simulate = commands.add("simulate", "write a realistic event log of many games", run)
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


def run(args: argparse.Namespace) -> int:
    """Writes the log, one event a line."""
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
    return EXIT_OK
