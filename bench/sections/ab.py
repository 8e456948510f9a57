"""The ``--ab-before`` page (bench/one-owner-ab.md, section 6b of the report): another
tree's code against this one's, end to end (``bench.scenarios.ab``)."""

from __future__ import annotations

import statistics

import msgspec

from bench.sections.base import Results, typed


class Run(msgspec.Struct, frozen=True):
    """One ``referee serve`` run of the end-to-end scenario."""

    eps: float
    steady_eps: float
    seconds: float
    markers: float
    """Commit markers on the verdict topic."""


class Compared(msgspec.Struct, frozen=True):
    """One log's runs of each code, in the order run."""

    log: str
    events: int
    verdicts: int
    runs: dict[str, list[Run]]
    """``before`` and ``after``."""


class AB(msgspec.Struct, frozen=True):
    """Edition 1's log and the mix."""

    logs: list[Compared]


def read(results: Results) -> AB | None:
    """Returns the A/B's results (None: it did not run)."""
    return typed(results, "ab", AB)


def lines(ab: AB, rounds: int, nproc: str, measured_at: str, load_end: str) -> list[str]:
    """Returns the page: a paragraph, then a table per log."""
    out = [
        (
            f"Measured {measured_at} by `uv run python bench/run.py --ab-before DIR --rounds "
            f"{rounds}` (DIR: a checkout of the release to compare with, both trees"
            f" interpreted), {nproc} CPUs, load average at the end {load_end}. The"
            " end-to-end scenario of section 3 on edition 1's log and on the default mix: a"
            " 4-partition input topic, one `referee serve` (REFEREE_BATCH_SIZE=2000) on a fresh"
            " database and fresh output topics, timed from spawning it until a read_committed"
            " consumer has read every verdict; the two codes alternate (before, after, then"
            " after, before, ...)."
        ),
    ]
    for log in ab.logs:
        runs = log.runs
        med = {k: statistics.median(r.eps for r in v) for k, v in runs.items()}
        steady = {k: statistics.median(r.steady_eps for r in v) for k, v in runs.items()}
        markers = {k: statistics.median(r.markers for r in v) for k, v in runs.items()}
        out += [
            "",
            f"**{log.log}**: {log.events:,} events, {log.verdicts:,} verdicts.",
            "",
            "| run | before: events/s | after: events/s |",
            "|---|---|---|",
        ]
        out += [
            f"| {i + 1} | {b.eps:,.0f} ({b.seconds:.1f} s) | {a.eps:,.0f} ({a.seconds:.1f} s) |"
            for i, (b, a) in enumerate(zip(runs["before"], runs["after"], strict=True))
        ]
        out += [
            f"| **median** | **{med['before']:,.0f}** | **{med['after']:,.0f}** |",
            (
                f"| median after start-up (from /readyz) | {steady['before']:,.0f} |"
                f" {steady['after']:,.0f} |"
            ),
            "",
            (
                f"**after/before = {med['after'] / med['before']:.2f}** (medians; after start-up"
                f" {steady['after'] / steady['before']:.2f}). Commit markers on the verdict"
                f" topic: before {markers['before']:.0f}, after {markers['after']:.0f} (median;"
                " one per partition a transaction wrote to)."
            ),
        ]
    return out
