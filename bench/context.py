"""What a benchmark run is given (options, sizes) and what it keeps (services, results)."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PY = sys.executable
E2E_BATCH = 2000  # the service's default REFEREE_BATCH_SIZE

# Sections measured by hand or by --ab-before, not by the full run: kept as last written.
AB_SECTION = BENCH / "relay-transactions.md"
"""Section 6: the A/B of release 0.1's relay transactions (kept as measured then)."""
OWNER_AB = BENCH / "one-owner-ab.md"
"""Section 6b: ``--ab-before`` of this release against 0.1 (written by the A/B run)."""
EXPLAIN_SECTION = BENCH / "explain.md"
"""Section 8, written by hand from ``bench/explain.py``'s output."""
EDITION2_AB = BENCH / "edition2-ab.md"
NOTES = BENCH / "notes.md"


@dataclass(frozen=True)
class Options:
    """The command line of ``bench/run.py``."""

    quick: bool = False
    workdir: Path = Path("/tmp/referee-bench")
    output: Path | None = None
    only: str | None = None
    keep_services: bool = False
    ab_before: Path | None = None  # absolute: the tree ``before`` imports referee from
    rounds: int = 3
    interpreted: bool = False  # measure this checkout's sources, not the compiled build
    seasons_before: Path | None = None  # absolute: the tree before migration 0010 (seasons)
    seasons_bytes_only: bool = False  # the seasons scenario measures bytes an event only
    owners_before: Path | None = None  # absolute: the tree the owners scenario compares with


@dataclass(frozen=True)
class Sizes:
    """How big each benchmark is (full run or --quick)."""

    games: int  # the main log's games (docs/benchmarks.md gives its events)
    sweep_games: int  # the batch-size sweep log
    batch_sizes: tuple[int, ...]
    loads: tuple[tuple[int, float], ...]  # (events/s offered, seconds)
    mix_loads: tuple[tuple[int, float], ...]  # the same on the simulator's default mix
    warmup_seconds: float
    memory_games: int
    repeats: int
    e2e_warmups: int
    """Unmeasured end-to-end rounds (ceiling and ``serve``) before the measured ones."""


FULL = Sizes(
    games=1900,
    sweep_games=550,
    batch_sizes=(50, 200, 500, 2000),
    loads=((10, 60.0), (250, 30.0), (1000, 30.0), (4000, 15.0)),
    mix_loads=((1000, 30.0),),
    warmup_seconds=5.0,
    memory_games=100_000,
    repeats=3,
    e2e_warmups=2,
)
QUICK = Sizes(
    games=150,
    sweep_games=60,
    batch_sizes=(50, 500),
    loads=((250, 4.0), (1000, 4.0)),
    mix_loads=((1000, 4.0),),
    warmup_seconds=1.0,
    memory_games=5_000,
    repeats=1,
    e2e_warmups=1,
)


@dataclass(frozen=True)
class Logs:
    """The simulated logs the scenarios share, and the in-memory replay's verdicts of two."""

    main: Path  # edition 1's log of ``Sizes.games`` games, seed 7
    main_verdicts: Path
    edition2: Path  # the same games under edition 2's random rules: every family, the mix
    edition2_verdicts: Path
    sweep: Path  # ``Sizes.sweep_games`` games, seed 11
    sweep_verdicts: Path


@dataclass
class Context:
    """Where things are and what to clean up."""

    options: Options
    sizes: Sizes
    work: Path
    admin_url: str = ""
    bootstrap: str = ""
    logs: Logs | None = None
    started_services: list[str] = field(default_factory=list)
    databases: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)

    def note(self, command: str) -> None:
        """Remembers a command for the report."""
        if command not in self.commands:
            self.commands.append(command)

    def shared_logs(self) -> Logs:
        """The logs simulated at the start of the run (``bench.logs.simulate_logs``)."""
        if self.logs is None:
            raise RuntimeError("the shared logs are simulated before any scenario runs")
        return self.logs


def say(message: str) -> None:
    """Progress on standard error, with a timestamp."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
