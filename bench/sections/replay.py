"""Sections 1 and 1b: the in-memory replay of edition 1's log and of the mix
(``bench.scenarios.replay``, ``replay2``)."""

from __future__ import annotations

import msgspec

from bench.sections.base import Page, Section, typed
from bench.sections.cells import listed, verdict


class Workers(msgspec.Struct, frozen=True):
    """``referee replay --workers N``: the best of the runs."""

    internal_eps: float
    """The command's own ``speed:`` line (interpreter start-up excluded)."""
    wall_eps: float
    seconds: float
    wall: float
    all: list[float]


class Replay(msgspec.Struct, frozen=True):
    """A log replayed in memory with one and two workers, against its typed-decode ceiling."""

    workers1: Workers
    workers2: Workers
    ceiling_eps: float
    events: int
    stages: list[tuple[str, float]]
    """Cumulative stages of the referee in one process: (label, seconds an event)."""

    def by_workers(self) -> list[tuple[int, Workers]]:
        """Returns the runs by worker count."""
        return [(1, self.workers1), (2, self.workers2)]


def _runs(r: Replay) -> list[str]:
    out = [
        "| run | events/s (best) | all runs | wall clock incl. start-up | ratio to ceiling |",
        "|---|---|---|---|---|",
    ]
    out += [
        f"| `--workers {w}` | {x.internal_eps:,.0f} | {listed(x.all)} |"
        f" {x.wall:.2f} s = {x.wall_eps:,.0f} events/s | {x.internal_eps / r.ceiling_eps:.2f} |"
        for w, x in r.by_workers()
    ]
    out.append(f"| ceiling (typed decode) | {r.ceiling_eps:,.0f} | | | 1.00 |")
    return out


def _stages(r: Replay) -> list[str]:
    return ["| stage | µs/event | events/s |", "|---|---|---|"] + [
        f"| {label} | {sec * 1e6:.2f} | {1 / sec:,.0f} |" for label, sec in r.stages
    ]


def first_rows(r: Replay) -> list[str]:
    """Section 1's summary rows: each worker count against 100,000 events/s."""
    return [
        f"| 1. in-memory replay, `--workers {w}` | >= 100,000 events/s |"
        f" {x.internal_eps:,.0f} events/s | {r.ceiling_eps:,.0f} lines/s |"
        f" {x.internal_eps / r.ceiling_eps:.2f} | {verdict(x.internal_eps, 100_000)} |"
        for w, x in r.by_workers()
    ]


def first_section(r: Replay, page: Page) -> list[str]:
    """Section 1: edition 1's log."""
    s = page.sizes
    return [
        "## 1. In-memory replay",
        "",
        (
            f"Log: `referee simulate --games {s.games} --seed 7 --rules edition1` ="
            f" {r.events:,} events (edition 1's random rules and log, byte for byte;"
            " 2% fouls, no storage). Figure: the command's own `speed:` line"
            f" (its timer excludes interpreter start-up), best of {s.repeats} runs; wall clock"
            " of the whole command (start-up included) beside it. Ceiling: the same log's lines"
            " decoded and validated by msgspec into the typed wire events (`InputEvent`), in"
            f" one process, best of {s.repeats}: the least work any validating referee must do."
        ),
        "",
        *_runs(r),
        "",
        (
            "Where the time goes (one process, cumulative stages over the same lines, best of"
            f" {s.repeats} passes each, microseconds per event):"
        ),
        "",
        *_stages(r),
        "",
    ]


def edition2_rows(r: Replay) -> list[str]:
    """Section 1b's summary rows: one worker reported, two against 80,000 events/s."""
    rows = []
    for w, x in r.by_workers():
        target = "(reported)" if w == 1 else ">= 80,000 events/s"
        rows.append(
            f"| 1b. in-memory replay, edition 2 log, `--workers {w}` | {target} |"
            f" {x.internal_eps:,.0f} events/s | {r.ceiling_eps:,.0f} lines/s |"
            f" {x.internal_eps / r.ceiling_eps:.2f} |"
            f" {'' if w == 1 else verdict(x.internal_eps, 80_000)} |"
        )
    return rows


def edition2_section(r: Replay, page: Page) -> list[str]:
    """Section 1b: the mix of every family."""
    return [
        "## 1b. In-memory replay of an edition-2 log",
        "",
        (
            f"Log: `referee simulate --games {page.sizes.games} --seed 7 --rules random` ="
            f" {r.events:,} events: every family (line, spinner, trains; partnerships,"
            " scoring during play, penalty scoring), 2% fouls of every kind. Measured as"
            " above, with its own ceiling."
        ),
        "",
        *_runs(r),
        "",
        *_stages(r),
        "",
    ]


FIRST = Section(lambda results: typed(results, "replay", Replay), first_section, first_rows)
EDITION2 = Section(
    lambda results: typed(results, "replay2", Replay), edition2_section, edition2_rows
)
