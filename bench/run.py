"""Every benchmark of the referee in one go; writes docs/benchmarks.md (and its plots).

    uv run --group native python bench/run.py   # the full run (writes docs/benchmarks.md)
    uv run python bench/run.py --quick    # a smoke run (writes under --workdir only)
    uv run python bench/run.py --ab-before DIR   # end to end only: DIR's code against this one
    uv run python bench/run.py --quick --only replay,store   # some scenarios (names: --help)
    uv run python bench/run.py --only seasons --seasons-before DIR   # DIR: 1b2a141's tree
    uv run python bench/run.py --only owners --owners-before DIR   # DIR: release 0.1.0's tree
    uv run python -m bench.run ...        # the same

The full run times the compiled build, as the image ships it: mypyc and setuptools come with
the ``native`` dependency group (``--group native``, or ``uv sync --all-groups`` once);
``--interpreted`` does without.

The services are started through scripts/postgres.sh and scripts/kafka.sh on their own ports
and state directory (REFEREE_STATE_DIR=/tmp/bench-services, KAFKA_PORT=29092, PG_PORT=25432
unless set), so a test suite on the default ports is not disturbed. Services this command
started are stopped at the end (unless --keep-services); everything else it starts (referee
processes, databases, topics) is stopped or dropped when it ends. Loopback only.

Each figure is set against a raw ceiling measured in the same run on the same machine: the
ratio is the number to watch on a noisy, shared machine.

This file only reads the command line: the run is ``bench.suite.main``, each scenario a module
of ``bench.scenarios``, the report ``bench.report``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Run as a script, Python puts bench/ first on sys.path, where its modules would shadow any
# top-level module of the same name; the repository root is what ``bench`` and ``tools`` need.
if sys.path and Path(sys.path[0] or ".").resolve() == ROOT / "bench":
    sys.path[0] = str(ROOT)
elif str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.context import Options  # noqa: E402
from bench.scenarios import SCENARIOS  # noqa: E402
from bench.suite import main  # noqa: E402


def parse(argv: list[str] | None = None) -> Options:
    """The command line as :class:`bench.context.Options`."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/referee-bench"))
    parser.add_argument(
        "--output",
        type=Path,
        help="the report (default: docs/benchmarks.md; with --quick: WORKDIR/benchmarks.md)",
    )
    parser.add_argument("--only", help=f"comma list: {','.join(SCENARIOS)}")
    parser.add_argument("--keep-services", action="store_true", help="leave started services up")
    parser.add_argument(
        "--ab-before",
        type=Path,
        help="run only the end-to-end scenario, the code of this source tree (before) against"
        " this checkout (after), alternating; writes bench/one-owner-ab.md",
    )
    parser.add_argument("--rounds", type=int, default=3, help="runs of each code with --ab-before")
    parser.add_argument(
        "--interpreted",
        action="store_true",
        help="run the referee from this checkout's sources; by default the referee processes"
        " run the compiled build (tools/native.py), which the image ships",
    )
    parser.add_argument(
        "--seasons-before",
        type=Path,
        help="the seasons scenario also times the store replay of edition 1's log and of the"
        " mix with the code of this source tree (the commit before migration 0010) against"
        " this checkout's, both interpreted, alternating",
    )
    parser.add_argument(
        "--seasons-bytes-only",
        action="store_true",
        help="the seasons scenario measures only the bytes an event (live, archived, after)",
    )
    parser.add_argument(
        "--owners-before",
        type=Path,
        help="the partitions-per-instance scenario (owners) also runs the code of this source "
        "tree (release 0.1.0's, say), alternating with this checkout's, both interpreted",
    )
    args = parser.parse_args(argv)
    return Options(
        quick=args.quick,
        workdir=args.workdir,
        output=args.output,
        only=args.only,
        keep_services=args.keep_services,
        ab_before=args.ab_before.resolve() if args.ab_before is not None else None,
        rounds=args.rounds,
        interpreted=args.interpreted,
        seasons_before=args.seasons_before.resolve() if args.seasons_before else None,
        seasons_bytes_only=args.seasons_bytes_only,
        owners_before=args.owners_before.resolve() if args.owners_before else None,
    )


if __name__ == "__main__":
    raise SystemExit(main(parse()))
