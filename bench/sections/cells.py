"""Cells and tables more than one section writes: a target's status, a throughput row, the
stage breakdown."""

from __future__ import annotations

import math

Stages = dict[str, tuple[float, float]]
"""Stage -> (mean milliseconds per occurrence, occurrences), from ``bench.scrape.means``."""


def verdict(value: float, target: float) -> str:
    """Returns whether a figure met its target, in bold."""
    return "**met**" if value >= target else "**not met**"


def both(value: float, target: float, ratio: float, least: float) -> str:
    """Returns the status of a throughput target with a ratio target beside it."""
    if value >= target and ratio >= least:
        return "**met**"
    return (
        f"**not met** (throughput {verdict(value, target)[2:-2]},"
        f" ratio {ratio:.3f} {verdict(ratio, least)[2:-2]})"
    )


def throughput_row(
    label: str,
    eps: float,
    ceiling: float,
    unit: str = "events/s",
    least: int = 20_000,
    ratio_least: float = 0.6,
) -> str:
    """Returns a summary row of a throughput held to ``least`` events/s and to
    ``ratio_least`` of its ceiling (measured in ``unit``); the defaults are the end-to-end
    targets."""
    ratio = eps / ceiling
    return (
        f"| {label} | >= {least:,} events/s, ratio >= {ratio_least} |"
        f" {eps:,.0f} events/s | {ceiling:,.0f} {unit} | {ratio:.2f} |"
        f" {both(eps, least, ratio, ratio_least)} |"
    )


def listed(values: list[float], spec: str = ",.0f") -> str:
    """Returns figures as a comma list."""
    return ", ".join(f"{v:{spec}}" for v in values)


STAGES = (
    ("arrival", "an event's Kafka timestamp to its batch's receipt (produce, broker, fetch)"),
    ("fetch_wait", "waiting for the next batch (fetch; idle time included)"),
    ("decode", "decode at the edge"),
    ("load", "load games and prints, reserve journal ids"),
    ("judge", "judge"),
    ("rows", "build the rows"),
    ("wait", "wait for the batch before to commit"),
    ("copy", "fence and COPY"),
    ("commit", "commit"),
    ("offset_commit", "Kafka offset commit (off the batch path)"),
    ("relay_wake", "publisher: the commit to its chunk taken (in memory, no store read)"),
    ("relay_read", "publisher: read outbox rows from the store (catch-up only)"),
    ("relay_send", "publisher: send and wait for every ack"),
    ("relay_commit", "publisher: commit the Kafka transaction"),
    ("referee_batch_seconds", "a batch, received to committed"),
    ("referee_event_to_verdict_seconds", "an event's Kafka timestamp to its verdicts' commit"),
)


def breakdown_table(title: str, text: str, columns: dict[str, Stages]) -> list[str]:
    """Returns a table of stage means (ms) for several runs side by side."""
    names = list(columns)
    out = [f"### {title}", "", text, "", "| stage | " + " | ".join(names) + " |"]
    out.append("|---|" + "---|" * len(names))
    for stage, label in STAGES:
        cells = []
        for name in names:
            mean, count = columns[name].get(stage, (math.nan, 0.0))
            cells.append("-" if not count else f"{mean:.2f} ms (n={count:,.0f})")
        if any(c != "-" for c in cells):
            out.append(f"| {label} (`{stage}`) | " + " | ".join(cells) + " |")
    return [*out, ""]
