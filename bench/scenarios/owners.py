"""12. Partitions per instance: what an owner of many partitions costs, against release 0.1.0.

Layouts: one instance owning 1, 4, 16 and 64 input partitions, then 2 and 4 instances of one
group on 16, each at ``LOAD`` events/s in total. Each layout runs with the code of another
tree (``--owners-before DIR``: release 0.1.0's, its global relay) and with this checkout's,
alternating (before, after, then after, before, ...), both interpreted from their sources, each
on fresh topics and a fresh database its own code migrated. A run: its instances, a warm-up, a
steady phase (every verdict timed from its cause's production to its reading,
``read_committed``; the CPU of the broker, of PostgreSQL and of the referees per 1,000 events
of that phase), then a burst of ``BURST`` events produced at once, timed to its last verdict:
the layout's events/s ceiling. The transaction markers and aborted records on the output
topics (their end offsets less the records committed) say how many transactions touched how
many partitions.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer

from bench.context import ROOT, Context, say
from bench.cpu import per_thousand, reading
from bench.process import Served, imported_from, start_serve, stop_process, tail
from bench.readers import high_watermarks
from bench.scenarios.latency import (
    Line,
    VerdictWatcher,
    paced_produce,
    percentile,
    phase_lines,
    verdicts_of,
)
from bench.services import fresh_database, fresh_topics, make_topics

LOAD = 4000
"""Events a second, in total."""
WARMUP_SECONDS = 5.0
STEADY_SECONDS = 20.0
BURST = 60_000
LAYOUTS = ((1, 1), (1, 4), (1, 16), (1, 64), (2, 16), (4, 16))
"""(instances, partitions)."""
QUICK_LAYOUTS = ((1, 4), (1, 16))


def tree_commit(tree: Path) -> str:
    """The commit a tree is checked out at (its short hash; its name when not a checkout):
    the report names the code compared, never a path of this machine."""
    found = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return found.stdout.strip() if found.returncode == 0 else tree.name


async def settle(served: list[Served], seconds: float = 3.0) -> None:
    """Gives the group time to hand every partition out (each instance is ready already)."""
    await asyncio.sleep(seconds)
    for s in served:
        if s.process.poll() is not None:
            raise RuntimeError(f"referee serve exited:\n{tail(s.log)}")


async def layout_run(
    ctx: Context,
    label: str,
    env: dict[str, str],
    instances: int,
    partitions: int,
    lines: list[Line],
    burst: list[Line],
    expected_burst: int,
) -> dict[str, Any]:
    """One layout with one tree's code: its steady phase and its burst."""
    topics = fresh_topics()
    await make_topics(ctx, [topics.input, topics.verdicts, topics.dlq], partitions=partitions)
    url = await fresh_database(ctx, f"owners{instances}x{partitions}", migrate=True, env=env)
    group = f"bench-owners-{uuid.uuid4().hex[:6]}"
    served = [
        await start_serve(ctx, url, topics, name=f"{group}-{i}", group=group, extra_env=env)
        for i in range(instances)
    ]
    await settle(served)
    watcher = VerdictWatcher(ctx, topics.verdicts)
    await watcher.start()
    producer = AIOKafkaProducer(
        bootstrap_servers=ctx.bootstrap, enable_idempotence=True, linger_ms=0
    )
    await producer.start()
    sent_at: dict[tuple[str, int], float] = {}
    warm = int(LOAD * WARMUP_SECONDS)
    pids = [s.process.pid for s in served]
    result: dict[str, Any] = {
        "code": label,
        "instances": instances,
        "partitions": partitions,
        "load": LOAD,
    }
    try:
        await paced_produce(producer, topics.input, lines[:warm], LOAD, sent_at)
        await asyncio.sleep(1.0)
        since = len(watcher.arrivals)
        before = reading(pids)
        achieved = await paced_produce(producer, topics.input, lines[warm:], LOAD, sent_at)
        await asyncio.sleep(2.0)
        after = reading(pids)
        steady = [
            (t - sent_at[g, s]) * 1000 for g, s, t in watcher.arrivals[since:] if (g, s) in sent_at
        ]
        result |= {
            "achieved": achieved,
            "verdicts": len(steady),
            "p50": percentile(steady, 0.50),
            "p99": percentile(steady, 0.99),
            "max": max(steady, default=float("nan")),
            "cpu_per_1000": per_thousand(before, after, len(lines) - warm),
        }
        result |= await burst_run(producer, watcher, topics.input, burst, expected_burst)
        await asyncio.sleep(1.0)
        published = len(watcher.arrivals)
        ends = await high_watermarks(ctx, topics.verdicts)
        result["verdict_topic_markers"] = ends - published
        result["verdicts_published"] = published
        say(
            f"   {label}: {instances} x {partitions} partitions: p50 {result['p50']:.0f} ms, "
            f"p99 {result['p99']:.0f} ms; burst {result['burst_eps']:,.0f} events/s; CPU per "
            f"1,000 events: broker {result['cpu_per_1000']['broker'] * 1000:.0f} ms, "
            f"PostgreSQL {result['cpu_per_1000']['postgres'] * 1000:.0f} ms, referees "
            f"{result['cpu_per_1000']['referee'] * 1000:.0f} ms; "
            f"{result['verdict_topic_markers']} markers"
        )
    finally:
        await producer.stop()
        await watcher.stop()
        for s in served:
            stop_process(s.process)
    return result


async def burst_run(
    producer: AIOKafkaProducer,
    watcher: VerdictWatcher,
    topic: str,
    burst: list[Line],
    expected: int,
) -> dict[str, Any]:
    """Produces the burst as fast as it goes; the events/s to its last verdict."""
    games = {g for _, _, g, _ in burst}
    since = len(watcher.arrivals)
    started = time.monotonic()
    futures = [await producer.send(topic, value, key=key) for key, value, _, _ in burst]
    await asyncio.gather(*futures)
    produced = time.monotonic() - started
    deadline = time.monotonic() + 180
    last = started
    while time.monotonic() < deadline:
        got = [t for g, _, t in watcher.arrivals[since:] if g in games]
        if len(got) >= expected:
            last = max(got)
            break
        await asyncio.sleep(0.05)
    else:
        raise RuntimeError(f"the burst's verdicts did not all come ({expected} expected)")
    return {
        "burst_events": len(burst),
        "burst_produced_s": produced,
        "burst_s": last - started,
        "burst_eps": len(burst) / (last - started),
    }


def trees(ctx: Context) -> dict[str, dict[str, str]]:
    """The codes compared: another tree's (``--owners-before``) and this checkout's, each
    interpreted from its sources."""
    found: dict[str, Path] = {}
    if ctx.options.owners_before is not None:
        found["before"] = ctx.options.owners_before.resolve()
    found["after"] = ROOT
    envs = {k: {"PYTHONPATH": str(v), "PYTHONSAFEPATH": "1"} for k, v in found.items()}
    for label, env in envs.items():
        imported = imported_from(env)
        if not imported.startswith(str(found[label])):
            raise SystemExit(f"{label}: referee imported from {imported}, not {found[label]}")
    return envs


async def run(ctx: Context) -> None:
    """Every layout with each code, alternating, ``Sizes.repeats`` rounds."""
    say(f"12. partitions per instance: {LOAD}/s in total")
    envs = trees(ctx)
    layouts = QUICK_LAYOUTS if ctx.options.quick else LAYOUTS
    lines = phase_lines(LOAD, WARMUP_SECONDS + STEADY_SECONDS, 1212)
    burst = phase_lines(BURST, 1.0, 1213)
    expected = verdicts_of(burst)
    runs = []
    labels = list(envs)
    for round_number in range(ctx.sizes.repeats if len(labels) > 1 else 1):
        for n, (instances, partitions) in enumerate(layouts):
            order = labels if (round_number + n) % 2 == 0 else labels[::-1]
            runs.extend(
                [
                    await layout_run(
                        ctx, label, envs[label], instances, partitions, lines, burst, expected
                    )
                    for label in order
                ]
            )
    ctx.results["owners"] = {
        "before": tree_commit(ctx.options.owners_before) if ctx.options.owners_before else None,
        "runs": runs,
    }
    ctx.note(
        "uv run python bench/run.py --only owners --owners-before DIR"
        "   # DIR: release 0.1.0's tree; see bench/scenarios/owners.py"
    )
