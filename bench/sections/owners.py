"""Section 12: partitions per instance, 0.1.0 against this release (``bench.scenarios.owners``)."""

from __future__ import annotations

import math
import statistics

import msgspec

from bench.sections.base import Page, Section, typed


class Cpu(msgspec.Struct, frozen=True):
    """CPU seconds per 1,000 events of the steady phase."""

    broker: float
    postgres: float
    referee: float


class Run(msgspec.Struct, frozen=True):
    """One layout with one code."""

    code: str
    """``before`` (the other tree) or ``after`` (this checkout)."""
    instances: int
    partitions: int
    load: int
    achieved: float
    verdicts: int
    p50: float
    p99: float
    max: float
    cpu_per_1000: Cpu
    burst_events: int
    burst_s: float
    burst_eps: float
    verdict_topic_markers: int
    verdicts_published: int


class Owners(msgspec.Struct, frozen=True):
    """Every run, in the order run."""

    runs: list[Run]
    before: str | None = None


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def _of(owners: Owners, code: str, instances: int, partitions: int) -> list[Run]:
    return [
        r
        for r in owners.runs
        if (r.code, r.instances, r.partitions) == (code, instances, partitions)
    ]


def _p99(owners: Owners, code: str, instances: int, partitions: int) -> float:
    return _median([r.p99 for r in _of(owners, code, instances, partitions)])


def rows(owners: Owners) -> list[str]:
    """Its summary rows: one instance on 16 partitions against release 0.1.0 and against
    itself on 4; four instances against one."""
    out = []
    sixteen = _p99(owners, "after", 1, 16)
    four = _p99(owners, "after", 1, 4)
    before = _p99(owners, "before", 1, 16)
    if not math.isnan(sixteen) and not math.isnan(before):
        met = sixteen <= before
        out.append(
            f"| 12. one instance, 16 partitions, {owners.runs[0].load:,}/s | p99 <= release "
            f"0.1.0's | p99 {sixteen:.0f} ms | 0.1.0: {before:.0f} ms | {sixteen / before:.2f} |"
            f" {'**met**' if met else '**not met**'} |"
        )
    if not math.isnan(sixteen) and not math.isnan(four):
        out.append(
            f"| 12. the same, 16 partitions against 4 | <= 1.2 | p99 {sixteen:.0f} ms | "
            f"4 partitions: {four:.0f} ms | {sixteen / four:.2f} |"
            f" {'**met**' if sixteen <= 1.2 * four else '**not met**'} |"
        )
    many = _p99(owners, "after", 4, 16)
    if not math.isnan(many) and not math.isnan(sixteen):
        out.append(
            f"| 12. four instances, 16 partitions | p99 <= one instance's | p99 {many:.0f} ms |"
            f" one: {sixteen:.0f} ms | {many / sixteen:.2f} |"
            f" {'**met**' if many <= sixteen else '**not met**'} |"
        )
    return out


def _shown(r: Run, value: str) -> str:
    if value == "p50":
        return f"{r.p50:.0f}"
    if value == "p99":
        return f"{r.p99:.0f}"
    if value == "burst":
        return f"{r.burst_eps:,.0f}"
    if value == "markers":
        return f"{r.verdict_topic_markers * 1000 / max(r.verdicts_published, 1):.0f}"
    cpu: float = getattr(r.cpu_per_1000, value)
    return f"{cpu * 1000:.0f}"


def _cell(runs: list[Run], value: str) -> str:
    if not runs:
        return "-"
    return ", ".join(_shown(r, value) for r in runs)


def section(owners: Owners, page: Page) -> list[str]:  # noqa: ARG001 - every section's signature
    """Section 12: every layout, each code's runs side by side."""
    layouts = sorted({(r.instances, r.partitions) for r in owners.runs})
    codes = [c for c in ("before", "after") if any(r.code == c for r in owners.runs)]
    names = {"before": "0.1.0", "after": "this release"}
    out = [
        "## 12. Partitions per instance: what an owner of many partitions costs",
        "",
        (
            f"Each layout at {owners.runs[0].load:,} events/s in total, on fresh topics and a"
            " fresh database its code migrated; the codes alternate (before, after, then after,"
            " before, ...), both interpreted from their sources"
            + (f" (before: release 0.1.0, commit `{owners.before}`)" if owners.before else "")
            + ". p50/p99: every verdict of the 20 s steady phase, from its cause's production to"
            " its reading (`read_committed`). CPU: milliseconds of the broker, of PostgreSQL (all"
            " its processes) and of the referees (their children included) per 1,000 events of"
            " that phase. Burst: 60,000 events produced at once, to their last verdict (the"
            " layout's events/s ceiling). Markers: the verdict topic's end offsets less its"
            " committed records (one commit marker per partition a transaction touched, and"
            " aborted records) per 1,000 verdicts. Each cell lists the runs in order."
        ),
        "",
        (
            "| instances x partitions | code | p50 ms | p99 ms | burst events/s | broker CPU ms | "
            "PostgreSQL CPU ms | referees CPU ms | markers per 1,000 verdicts |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for instances, partitions in layouts:
        for code in codes:
            runs = _of(owners, code, instances, partitions)
            out.append(
                f"| {instances} x {partitions} | {names[code]} | {_cell(runs, 'p50')} |"
                f" {_cell(runs, 'p99')} | {_cell(runs, 'burst')} | {_cell(runs, 'broker')} |"
                f" {_cell(runs, 'postgres')} | {_cell(runs, 'referee')} |"
                f" {_cell(runs, 'markers')} |"
            )
    out.append("")
    return out


SECTION: Section[Owners] = Section(lambda r: typed(r, "owners", Owners), section, rows)
