"""How long ``referee explain`` takes on the 303,584-event log (issue 36: well under a minute).

    uv run python bench/explain.py                 # this checkout's sources (interpreted)
    uv run python bench/explain.py --compiled      # the compiled build, as the image ships
    uv run python bench/explain.py --runs 3 --workdir /tmp/referee-bench

It writes the log once (``referee simulate --games 1900 --seed 7``, the edition-2 log of
docs/benchmarks.md), then times, best of ``--runs``, the whole command as a person runs it
(start-up included, output to /dev/null): the text for people, ``--json``, a player's view,
and ``replay`` of the same log beside them for scale. Not part of ``bench/run.py``'s full run:
its figures go by hand into bench/explain.md, which ``bench/run.py`` puts in
docs/benchmarks.md as section 8.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `tools`, run as a script from anywhere

SIMULATE = ["simulate", "--games", "1900", "--seed", "7"]
EVENTS = 303_584


def timed(args: list[str], env: dict[str, str]) -> float:
    """Runs ``referee ARGS``; returns its wall-clock seconds."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "referee", *args], env=env, capture_output=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"referee {' '.join(args)} failed: {done.stderr.decode()[-2000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="best of this many")
    parser.add_argument("--compiled", action="store_true", help="the mypyc build (tools/native)")
    parser.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "referee-bench"
    )
    options = parser.parse_args()
    work = options.workdir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    build = "interpreted (this checkout's sources)"
    if options.compiled:
        from tools.native import copy

        tree = copy(work / "native-explain")
        env |= {"PYTHONPATH": str(tree), "PYTHONSAFEPATH": "1"}
        build = f"compiled ({tree})"
    log = work / "explain-303584.jsonl"
    if not log.exists() or sum(1 for _ in log.open("rb")) != EVENTS:
        subprocess.run(
            [sys.executable, "-m", "referee", *SIMULATE, "--output", str(log)], env=env, check=True
        )
    player = log.open("rb").readline().split(b'"players":["', 1)[1].split(b'"', 1)[0].decode()
    cases = {
        "explain LOG (text)": ["explain", str(log), "--output", os.devnull],
        "explain LOG --json": ["explain", str(log), "--json", "--output", os.devnull],
        f"explain LOG --as {player}": ["explain", str(log), "--as", player, "--output", os.devnull],
        "replay LOG --workers 1 (for scale)": [
            "replay", str(log), "--workers", "1", "--output", os.devnull,
        ],
    }  # fmt: skip
    print(f"log: referee {' '.join(SIMULATE)} = {EVENTS:,} events; build: {build}")
    print(f"{'command':<42} {'best s':>7} {'events/s':>10}   runs")
    for name, args in cases.items():
        runs = [timed(args, env) for _ in range(options.runs)]
        best = min(runs)
        shown = ", ".join(f"{r:.2f}" for r in runs)
        print(f"{name:<42} {best:7.2f} {EVENTS / best:10,.0f}   {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
