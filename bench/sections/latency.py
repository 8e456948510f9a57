"""Section 4: latency against the offered load (``bench.scenarios.latency``) and throughput
against the batch size (``bench.scenarios.sweep``), with their plots."""

from __future__ import annotations

from pathlib import Path

import msgspec

from bench.sections.base import Page, Results, Section, typed
from bench.sections.cells import Stages, breakdown_table
from bench.sections.e2e import Serve


class Split(msgspec.Struct, frozen=True):
    """The sampled latencies split at the publisher's send (ms)."""

    p50_before: float
    p50_after: float
    p99_before: float
    p99_after: float
    slowest_before: float
    slowest_after: float
    """Means of the slowest 1%."""


class Load(msgspec.Struct, frozen=True):
    """One offered load: each sampled verdict timed from its cause's send (ms)."""

    load: int
    achieved: float
    events: int
    verdicts: int
    expected: int
    p50: float
    p99: float
    max: float
    stages: Stages | None = None
    split: Split | None = None
    log: str = "edition1"
    """``edition1`` (edition 1's games) or ``mix`` (the simulator's default mix)."""


class Sweep(msgspec.Struct, frozen=True):
    """The sweep log through ``referee serve`` at each batch size."""

    events: int
    rows: list[tuple[int, Serve]]


class LatencyAndSweep(msgspec.Struct, frozen=True):
    """Section 4's two scenarios (either may not have run)."""

    latency: list[Load] | None
    sweep: Sweep | None


def read(results: Results) -> LatencyAndSweep | None:
    """Returns the two scenarios' results (None when neither ran)."""
    latency = typed(results, "latency", list[Load])
    sweep = typed(results, "sweep", Sweep)
    if latency is None and sweep is None:
        return None
    return LatencyAndSweep(latency, sweep)


def rows(both: LatencyAndSweep) -> list[str]:
    """Its summary rows: p50 and p99 against their targets at 1,000 and 4,000 events/s."""
    out = []
    for at in both.latency or []:
        mix = at.log == "mix"
        p50_most = 15 if at.load == 1000 and not mix else None
        p99_most = ({1000: 30} if mix else {1000: 50, 4000: 100}).get(at.load)
        wanted = [f"p50 <= {p50_most} ms"] if p50_most else []
        wanted += [f"p99 <= {p99_most} ms"] if p99_most else []
        met = (p50_most is None or at.p50 <= p50_most) and (p99_most is None or at.p99 <= p99_most)
        status = ("**met**" if met else "**not met**") if wanted else ""
        out.append(
            f"| 4. latency at {at.load:,} events/s{' on the mix' if mix else ''} |"
            f" {', '.join(wanted) or '(reported)'} | p50 {at.p50:.0f} ms,"
            f" p99 {at.p99:.0f} ms | | | {status} |"
        )
    return out


def section(both: LatencyAndSweep, page: Page) -> list[str]:
    """Section 4: the latency table, its tail split and breakdown, then the sweep."""
    out = ["## 4. Latency and batch size", ""]
    if both.latency:
        out += _latency(both.latency, page)
    if both.sweep:
        out += _sweep(both.sweep, page)
    return out


_LOGS = {"edition1": "edition 1", "mix": "mix"}


def _label(x: Load, unit: str = "") -> str:
    return f"{x.load:,}{unit}" + (" (mix)" if x.log == "mix" else "")


def _latency(lat: list[Load], page: Page) -> list[str]:
    out = [
        (
            "One `referee serve` (batch 500, linger 50 ms) on fresh topics; a load generator"
            " in the benchmark process produces freshly simulated games paced at each offered"
            " load (idempotent producer, linger 0) and records the time each (game_id, seq) was"
            " sent; a consumer in the same process assigned to the verdict topic records each"
            " verdict's arrival; latency = arrival - send time of the verdict's cause"
            f" (game_id, cause_seq). A {page.sizes.warmup_seconds:.0f} s warm-up at 500 events/s"
            " is discarded first. Only events that cause a verdict are sampled (~5% of events)."
            " At 10 events/s (a few games played through, so that rounds end) every record"
            " is alone in its batch and the consumer idles between records: what a quiet"
            " table waits."
            + (
                " The loads marked mix are on the simulator's default mix of every family"
                " (`referee simulate`'s default), the heavier log users run."
                if any(x.log == "mix" for x in lat)
                else ""
            )
        ),
        "",
        (
            "| offered events/s | log | achieved | duration | verdicts sampled | p50 ms |"
            " p99 ms | max ms |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    out += [
        f"| {x.load:,} | {_LOGS[x.log]} | {x.achieved:,.0f} | {x.events / x.load:.0f} s |"
        f" {x.verdicts:,} of {x.expected:,} | {x.p50:.0f} | {x.p99:.0f} | {x.max:.0f} |"
        for x in lat
    ]
    out += ["", f"![latency vs offered load]({page.img}/latency_vs_load.png)", ""]
    splits = [x.split for x in lat if x.split is not None]
    if len(splits) == len(lat):
        out += [
            "### 4a'. The tail, split at the publisher's send",
            "",
            (
                "Each sampled verdict's latency in two parts, at the publisher's send call (the"
                " verdict record's timestamp, which the publisher's producer stamps when it"
                " sends): before it, the referee's path (broker, fetch, judge, write, commit,"
                " the publisher's wake-up); after it, the publisher's Kafka transaction and"
                " the benchmark consumer's read_committed fetch. Both parts are read on the"
                " one clock of this machine, the timestamp in whole milliseconds."
            ),
            "",
            (
                "| offered events/s | before the send: p50 / p99 ms | after it: p50 / p99 ms |"
                " slowest 1%: mean before / after, ms |"
            ),
            "|---|---|---|---|",
        ]
        out += [
            f"| {_label(x)} | {t.p50_before:.0f} / {t.p99_before:.0f} |"
            f" {t.p50_after:.0f} / {t.p99_after:.0f} |"
            f" {t.slowest_before:.0f} / {t.slowest_after:.0f} |"
            for x, t in zip(lat, splits, strict=True)
        ]
        out.append("")
    if all(x.stages is not None for x in lat):
        out += breakdown_table(
            "4b. Where a verdict's time goes, at each offered load",
            (
                "From `referee_stage_seconds{stage}` and the latency histograms of the same"
                " runs (scraped before and after each load), mean milliseconds."
            ),
            {_label(x, "/s"): x.stages or {} for x in lat},
        )
    return out


def _sweep(sw: Sweep, page: Page) -> list[str]:
    return [
        (
            f"Throughput vs batch size: a {sw.events:,}-event log (`--games"
            f" {page.sizes.sweep_games} --seed 11`) pre-produced once; for each batch size a"
            " fresh database, fresh verdict topic and fresh consumer group, timed as in 3(b)."
        ),
        "",
        "| REFEREE_BATCH_SIZE | events/s from process start | events/s from /readyz | seconds |",
        "|---|---|---|---|",
        *(
            f"| {size} | {x.eps:,.0f} | {x.steady_eps:,.0f} | {x.seconds:.1f} |"
            for size, x in sw.rows
        ),
        "",
        f"![throughput vs batch size]({page.img}/throughput_vs_batch.png)",
        "",
    ]


def plot(both: LatencyAndSweep, img: Path) -> list[str]:
    """Draws throughput against batch size and latency against load; returns the files."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    sweep = both.sweep
    if sweep:
        sizes = [s for s, _ in sweep.rows]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(sizes, [r.eps for _, r in sweep.rows], "o-", label="from process start")
        ax.plot(sizes, [r.steady_eps for _, r in sweep.rows], "s--", label="from /readyz")
        ax.axhline(15_000, color="grey", linestyle=":", label="target 15,000/s")
        ax.set_xscale("log")
        ax.minorticks_off()
        ax.set_xticks(sizes, [str(s) for s in sizes])
        ax.set_xlabel("REFEREE_BATCH_SIZE (records)")
        ax.set_ylabel("events/s end to end")
        ax.set_title(f"referee serve throughput vs batch size ({sweep.events:,} events)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(img / "throughput_vs_batch.png", dpi=110)
        plt.close(fig)
        made.append("throughput_vs_batch.png")
    rows = [r for r in both.latency or [] if r.log == "edition1"]
    if rows:
        loads = [r.load for r in rows]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(loads, [r.p50 for r in rows], "o-", label="p50")
        ax.plot(loads, [r.p99 for r in rows], "s-", label="p99")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xticks(loads, [str(x) for x in loads])
        ax.set_xlabel("offered load (events/s)")
        ax.set_ylabel("production -> verdict arrival (ms)")
        ax.set_title("referee serve latency vs offered load (batch 500)")
        ax.grid(alpha=0.3, which="both")
        ax.legend()
        fig.tight_layout()
        fig.savefig(img / "latency_vs_load.png", dpi=110)
        plt.close(fig)
        made.append("latency_vs_load.png")
    return made


SECTION = Section(read, section, rows, plot)
