"""The report: the machine, the plots, docs/benchmarks.md assembled from the sections of
``bench.sections`` (one a scenario), and the ``--ab-before`` page.

The page is its header (the run, the machine), the summary table (``SUMMARY``: each
section's rows), the commands, then the sections in the order of ``SECTIONS``.
"""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.context import AB_SECTION, EDITION2_AB, EXPLAIN_SECTION, OWNER_AB
from bench.sections import (
    ab,
    cluster,
    e2e,
    latency,
    memory,
    owners,
    relay,
    replay,
    seasons,
    store,
)
from bench.sections.base import Kept, Page, Part, Results, Section


class _Notes:
    """The observations kept in bench/notes.md, as the run found them (``notes``)."""

    def lines(self, results: Results, page: Page) -> list[str]:  # noqa: ARG002 - a Part
        notes: list[str] = list(results.get("notes") or [])
        return ["## Observations", "", *notes, ""] if notes else []


SUMMARY: tuple[Section[Any], ...] = (
    replay.FIRST,
    replay.EDITION2,
    store.SECTION,
    e2e.SECTION,
    latency.SECTION,
    cluster.SECTION,
    owners.SECTION,
    memory.SECTION,
    seasons.SECTION,
)
"""The sections whose rows the summary table holds, in its order."""

SECTIONS: tuple[Part, ...] = (
    replay.FIRST,
    replay.EDITION2,
    Kept(
        "## 1c. Edition 2 against edition 1: the edition-1 figure before and after",
        EDITION2_AB.name,
        after="replay2",
    ),
    store.SECTION,
    e2e.SECTION,
    latency.SECTION,
    memory.SECTION,
    Kept("## 6. What the relay's Kafka transactions cost (release 0.1)", AB_SECTION.name),
    Kept("## 6b. One partition, one owner against release 0.1 (A/B, end to end)", OWNER_AB.name),
    relay.SECTION,
    Kept("## 8. `referee explain`", EXPLAIN_SECTION.name, full_only=False),
    cluster.SECTION,
    seasons.SECTION,
    Kept("## 11. The page of a game and the dispute desk", "desk.md"),
    owners.SECTION,
    _Notes(),
)
"""The page's sections, in its order."""

PLOTS: tuple[Section[Any], ...] = (latency.SECTION,)
"""The sections that draw plots."""


@dataclass(frozen=True)
class Run:
    """What the page says of the run besides its results."""

    machine: dict[str, str]
    load_end: str
    minutes: float
    """The whole run's wall clock."""
    measured_at: str
    """When, as ``2026-12-07 04:30 UTC``."""
    commands: list[str]
    page: Page


def machine() -> dict[str, str]:
    """Returns what the page says of the machine (and its load average now)."""
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = "unknown"
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal"):
            mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    pg = subprocess.run(
        "ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1",
        shell=True,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "mem": mem,
        "python": platform.python_version(),
        "kernel": platform.release(),
        "postgres": pg.split("/")[-2] if pg else "?",
        "load": " ".join(Path("/proc/loadavg").read_text().split()[0:3]),
    }


def plots(results: Results, img: Path) -> list[str]:
    """Draws every section's plots into ``img``; returns their file names."""
    img.mkdir(parents=True, exist_ok=True)
    return [name for section in PLOTS for name in section.plots(results, img)]


def _header(run: Run) -> list[str]:
    info = run.machine
    quick = " --quick" if run.page.quick else ""
    return [
        "# Benchmarks",
        "",
        (
            f"Measured {run.measured_at} by `uv run --group native python bench/run.py{quick}`"
            f" (whole run: {run.minutes:.1f} min). Regenerate with the same command; it starts"
            " PostgreSQL and Kafka through `scripts/postgres.sh` and `scripts/kafka.sh` on their"
            " own ports (`REFEREE_STATE_DIR=/tmp/bench-services KAFKA_PORT=29092 PG_PORT=25432`"
            " unless"
            " set) and rewrites this file and the plots in `docs/img/`."
        ),
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
        f"| CPUs (`nproc`) | {info['nproc']} |",
        f"| CPU model | {info['cpu']} |",
        f"| memory | {info['mem']} |",
        f"| Python | {info['python']} |",
        f"| referee build | {info.get('build', 'interpreted')} |",
        f"| kernel | {info['kernel']} |",
        f"| PostgreSQL | {info['postgres']} (local, default settings of `scripts/postgres.sh`) |",
        "| Kafka | single KRaft node of `scripts/kafka.sh`, loopback |",
        f"| load average at start / end | {info['load']} / {run.load_end} |",
        "",
        (
            "**Noise caveat.** This is a small *shared* virtual machine: two noisy cores shared by"
            " the referee, PostgreSQL, the Kafka JVM, the load generator and other tenants."
            " Absolute"
            " figures move by tens of percent between runs; the ratio of each figure to a raw"
            " ceiling measured in the same run, on the same data and at the same moment, is the"
            " number to compare over time. Everything ran on loopback."
        ),
        "",
    ]


def _commands(run: Run) -> list[str]:
    return [
        "",
        "## Commands",
        "",
        "```sh",
        "uv run --group native python bench/run.py",
        *(c if c.startswith("#") else f"# {c}" for c in run.commands),
        "```",
        "",
    ]


def render(results: Results, run: Run) -> str:
    """Returns docs/benchmarks.md for a run's results."""
    out = _header(run)
    out += [
        "## Summary",
        "",
        "| benchmark | target | measured | ceiling | ratio | status |",
        "|---|---|---|---|---|---|",
    ]
    for section in SUMMARY:
        out += section.rows(results)
    out += _commands(run)
    for part in SECTIONS:
        out += part.lines(results, run.page)
    return "\n".join(out)


def render_ab(results: Results, run: Run, rounds: int) -> str:
    """Returns the ``--ab-before`` page (bench/one-owner-ab.md): a table per log."""
    found = ab.read(results)
    if found is None:
        raise ValueError("no A/B results to render")
    return "\n".join(ab.lines(found, rounds, run.machine["nproc"], run.measured_at, run.load_end))
