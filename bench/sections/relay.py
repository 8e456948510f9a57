"""Section 7: one owner's publishing rate (``bench.scenarios.relay``)."""

from __future__ import annotations

import msgspec

from bench.sections.base import Page, Results, Section, typed


class Publishing(msgspec.Struct, frozen=True):
    """A stored outbox over some input partitions, published by one ``referee serve``."""

    partitions: int
    verdicts: int
    events: int
    seconds: float
    verdicts_per_second: float


class Relay(msgspec.Struct, frozen=True):
    """Each partition count's run."""

    runs: list[Publishing]


def read(results: Results) -> Relay | None:
    """Returns the runs (a result of before they were listed is its one run)."""
    found = results.get("relay")
    if not found:
        return None
    if "runs" not in found:
        return Relay([msgspec.convert(found, Publishing)])
    return typed(results, "relay", Relay)


def section(rl: Relay, page: Page) -> list[str]:  # noqa: ARG001 - every section's signature
    """Section 7: a row per partition count."""
    rows = [
        (
            "| input partitions (publishers in one instance) | verdicts | seconds |"
            " verdicts/s | events/s of the mix it keeps up with |"
        ),
        "|---|---|---|---|---|",
    ]
    for run in rl.runs:
        per_event = run.verdicts / max(run.events, 1)
        rate = run.verdicts_per_second
        rows.append(
            f"| {run.partitions} | {run.verdicts:,} | {run.seconds:.2f} |"
            f" {rate:,.0f} | {rate / per_event:,.0f} ({per_event:.3f} verdicts an event) |"
        )
    return [
        "## 7. One owner's publishing rate and the scale ceiling",
        "",
        (
            "The mix's verdicts judged into a fresh store as records of 1 and of 4 input"
            " partitions (nothing published), then `referee serve` started on that empty"
            " input topic: each partition's publisher fences its predecessor, reads its"
            " output partition's tail and publishes the partition's outbox from the store."
            " Timed between the first and the last verdict's producer timestamp. No lock"
            " and no leader is shared between partitions: the cluster's ceiling is one"
            " owner's rate times the owners, until PostgreSQL or the broker saturates"
            ' (docs/design.md, "Scale ceiling").'
        ),
        "",
        *rows,
        "",
    ]


SECTION = Section(read, section)
