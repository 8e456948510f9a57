"""Reading a running referee's /metrics: the live path's stage timings, for the breakdowns."""

from __future__ import annotations

import asyncio
import re
import urllib.request

STAGE = re.compile(r'^referee_stage_seconds_(sum|count)\{stage="([a-z_]+)"\} (\S+)$', re.MULTILINE)
HISTOGRAM = re.compile(r"^(referee_[a-z_]+)_(sum|count) (\S+)$", re.MULTILINE)

Snapshot = dict[str, tuple[float, float]]
"""Stage (or histogram) name -> (sum of seconds, count)."""


def _get(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return str(r.read().decode())


async def snapshot(port: int) -> Snapshot:
    """The stage sums and counts of ``referee_stage_seconds``, and of the latency histograms."""
    text = await asyncio.to_thread(_get, port)
    sums: dict[str, float] = {}
    counts: dict[str, float] = {}
    for kind, stage, value in STAGE.findall(text):
        (sums if kind == "sum" else counts)[stage] = float(value)
    for name, kind, value in HISTOGRAM.findall(text):
        if name in ("referee_event_to_verdict_seconds", "referee_batch_seconds"):
            (sums if kind == "sum" else counts)[name] = float(value)
    return {k: (sums[k], counts.get(k, 0.0)) for k in sums}


def means(before: Snapshot, after: Snapshot) -> dict[str, tuple[float, float]]:
    """Stage -> (mean milliseconds per occurrence, occurrences) between two snapshots."""
    out: dict[str, tuple[float, float]] = {}
    for name, (total, count) in after.items():
        was_total, was_count = before.get(name, (0.0, 0.0))
        n = count - was_count
        if n > 0:
            out[name] = ((total - was_total) / n * 1000, n)
    return out
