"""Section 3: end to end on Kafka, ``referee serve`` against a consume-and-COPY ceiling
(``bench.scenarios.e2e``), and 3b, where a batch's time goes."""

from __future__ import annotations

import msgspec

from bench.context import E2E_BATCH
from bench.sections.base import Page, Section, typed
from bench.sections.cells import Stages, breakdown_table, listed, throughput_row


class Ceiling(msgspec.Struct, frozen=True):
    """One aiokafka consumer COPYing raw batches into ``journal``."""

    eps: float
    steady_eps: float
    """From the first record."""
    seconds: float


class Serve(msgspec.Struct, frozen=True):
    """``referee serve`` until the verdict topic holds every verdict."""

    eps: float
    steady_eps: float
    """From ``/readyz``."""
    seconds: float
    startup: float
    stages: Stages = msgspec.field(default_factory=dict)


class Log(msgspec.Struct, frozen=True):
    """One log's figures: the ceiling and ``serve`` alternating, the best of each."""

    log: str
    events: int
    verdicts: int
    produce_eps: float
    ceiling: Ceiling
    serve: Serve
    same_verdicts: bool
    """The published verdicts are the in-memory replay's."""
    all_serve_eps: list[float] | None = None
    """Every run's figure (None: a run before they were kept, one run)."""
    all_ceiling_eps: list[float] | None = None
    partitions: int = 4
    warmups: int = 0
    serial: Serve | None = None
    """The same with ``REFEREE_PIPELINE=false`` (edition 1's log only)."""


class EndToEnd(Log, frozen=True):
    """Edition 1's log, and the mix of every family."""

    mix: Log | None = None


def rows(e2e: EndToEnd) -> list[str]:
    """Its summary rows: 20,000 events/s and 0.6 of the ceiling, each log."""
    out = [throughput_row("3. end to end on Kafka, edition 1", e2e.serve.eps, e2e.ceiling.eps)]
    if e2e.mix is not None:
        out.append(
            throughput_row(
                "3. end to end on Kafka, the mix of every family",
                e2e.mix.serve.eps,
                e2e.mix.ceiling.eps,
            )
        )
    return out


def section(e2e: EndToEnd, page: Page) -> list[str]:  # noqa: ARG001 - every section's signature
    """Section 3, and 3b when the serial run was measured."""
    sv, ce = e2e.serve, e2e.ceiling
    out = [
        "## 3. End to end on Kafka",
        "",
        (
            f"The same {e2e.events:,} events produced (keyed by game id, idempotent"
            f" producer, {e2e.produce_eps:,.0f}/s) to a {e2e.partitions}-partition"
            " input topic"
            " before either consumer starts."
        ),
        "",
        (
            "- (a) ceiling: one aiokafka consumer in a consumer group, batches of up to"
            f" {E2E_BATCH},"
            " each COPYed raw into `journal` of a fresh migrated database in one transaction,"
            " then the Kafka offsets committed; timed from creating the consumer to the last"
            " commit."
        ),
        f"- (b) `referee serve` (REFEREE_BATCH_SIZE={E2E_BATCH}, the default; fresh database"
        " migrated beforehand,"
        " fresh verdict topic), timed from spawning the process until the verdict topic"
        f" holds the {e2e.verdicts:,} verdicts the in-memory replay of the same log"
        " gives. The published verdicts were then read back and compared with the"
        " in-memory replay's output: "
        + ("**identical**." if e2e.same_verdicts else "**they differ** (investigate).")
        + f" (a) and (b) alternate, best of {_runs(e2e)} runs each,"
        f" after {e2e.warmups} unmeasured rounds of both: the broker is a JVM"
        " started for this run, and its JIT compiler takes 0.5-1.2 s of CPU in each of"
        " the first rounds that use transactions (bench/notes.md).",
        "",
        "| | events/s (best) | all runs | seconds | events/s after start-up |",
        "|---|---|---|---|---|",
        (
            f"| (a) ceiling: consume + COPY raw | {ce.eps:,.0f} |"
            f" {listed(e2e.all_ceiling_eps or [])} | {ce.seconds:.1f} |"
            f" {ce.steady_eps:,.0f} (from first record) |"
        ),
        (
            f"| (b) `referee serve` to last verdict | {sv.eps:,.0f} |"
            f" {listed(e2e.all_serve_eps or [])} | {sv.seconds:.1f} |"
            f" {sv.steady_eps:,.0f} (from /readyz, start-up {sv.startup:.1f} s) |"
        ),
        (f"| **(b)/(a)** | **{sv.eps / ce.eps:.2f}** | | | {sv.steady_eps / ce.steady_eps:.2f} |"),
    ]
    if e2e.mix is not None:
        out += _mix(e2e.mix)
    out.append("")
    if e2e.serial is not None:
        out += breakdown_table(
            "3b. Where a batch's time goes: serial (before) and pipelined (after)",
            (
                "From `referee_stage_seconds{stage}` of the same two runs (scraped before"
                " and after), mean milliseconds per occurrence. The step's stages are per"
                " batch; the publishers' per Kafka transaction. Serial is"
                " `REFEREE_PIPELINE=false`: each batch judged and written before the next"
                f" is fetched ({e2e.serial.eps:,.0f} events/s); pipelined: the next batch"
                f" judged while the last commits ({sv.eps:,.0f} events/s). The first"
                " and last rows are the records' age (the log was produced before the"
                " run), not latencies: section 4b has those."
            ),
            {"serial (before)": e2e.serial.stages, "pipelined (after)": sv.stages},
        )
    return out


def _runs(log: Log) -> int:
    return 1 if log.all_serve_eps is None else len(log.all_serve_eps)


def _mix(mix: Log) -> list[str]:
    msv, mce = mix.serve, mix.ceiling
    return [
        (
            f"| (c) ceiling on the mix ({mix.events:,} events of every family) |"
            f" {mce.eps:,.0f} | {listed(mix.all_ceiling_eps or [])} |"
            f" {mce.seconds:.1f} | {mce.steady_eps:,.0f} (from first record) |"
        ),
        (
            f"| (d) `referee serve` on the mix ({mix.verdicts:,} verdicts) |"
            f" {msv.eps:,.0f} | {listed(mix.all_serve_eps or [])} | {msv.seconds:.1f} |"
            f" {msv.steady_eps:,.0f} (from /readyz, start-up {msv.startup:.1f} s) |"
        ),
        (
            f"| **(d)/(c)** | **{msv.eps / mce.eps:.2f}** | | |"
            f" {msv.steady_eps / mce.steady_eps:.2f} |"
        ),
        "",
        (
            f"(c) and (d) are (a) and (b) on `{mix.log}` (`referee simulate`'s default"
            " mix: every family, scoring during play, more verdicts an event), measured"
            " after them in the same way; the published verdicts against the in-memory"
            " replay's: " + ("**identical**." if mix.same_verdicts else "**they differ**.")
        ),
    ]


SECTION = Section(lambda results: typed(results, "e2e", EndToEnd), section, rows)
