"""9. One partition, one owner: four instances of one group on 16 partitions against one
instance, at the same offered load in the same run; then one of the four killed mid-run.

Each layout gets fresh topics (16 partitions each) and a fresh database, a warm-up, then a
steady phase at ``LOAD`` events/s in total; every verdict's arrival is timed from its cause's
production (``read_committed``, as in section 4a). With four instances the run goes on: one
instance is killed (SIGKILL) and the load continues. The verdicts of the other instances'
partitions give the p99 of the 10 s after the kill and of the 10 s after that (the group's
rebalance falls at the session timeout); the dead instance's partitions say how long they
waited (from the kill to their first verdict published again) and what set it.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
import uuid
from itertools import pairwise
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import murmur2

from bench.context import Context, say
from bench.process import Served, start_serve, stop_process, tail
from bench.scenarios.latency import Line, VerdictWatcher, paced_produce, percentile, phase_lines
from bench.scrape import Snapshot, snapshot
from bench.services import fresh_database, fresh_topics, make_topics

PARTITIONS = 16
LOAD = 4000
"""Events a second, in total."""
INSTANCES = 4
WARMUP_SECONDS = 5.0
STEADY_SECONDS = 20.0
KILL_AFTER_SECONDS = 5.0
"""Into the kill phase, when the instance is killed."""
AFTER_KILL_SECONDS = 25.0
"""How long the load goes on after the kill."""
WINDOW_SECONDS = 10.0
HEARTBEATS_MS = (250, 100)
"""The heartbeat intervals the four run with, each round (the one instance: the first)."""


SCRAPE_SECONDS = 0.25
"""How often the survivors' stage timings are read in the seconds after the kill."""
SCRAPED_AFTER_KILL = (5.0, 10.0)
"""The seconds after the kill whose stage timings are kept: the rebalance and the catch-up."""


async def stage_timeline(served: list[Served], until: float) -> list[list[tuple[float, Snapshot]]]:
    """Each instance's stage sums and counts (``/metrics``), every ``SCRAPE_SECONDS``."""
    out: list[list[tuple[float, Snapshot]]] = [[] for _ in served]
    while time.monotonic() < until:
        at = time.monotonic()
        got = await asyncio.gather(*(snapshot(s.port) for s in served), return_exceptions=True)
        for timeline, snap in zip(out, got, strict=True):
            if isinstance(snap, dict):
                timeline.append((at, snap))
        await asyncio.sleep(SCRAPE_SECONDS)
    return out


def stage_windows(timeline: list[tuple[float, Snapshot]], since: float) -> list[dict[str, Any]]:
    """Milliseconds spent in each stage between two readings, in the kept seconds after
    ``since`` (the kill): where a survivor's time went while the others' verdicts waited."""
    first, last = SCRAPED_AFTER_KILL
    windows = []
    for (was_at, was), (at, now) in pairwise(timeline):
        if not first <= was_at - since <= last:
            continue
        spent = {
            stage: round((total - was.get(stage, (0.0, 0.0))[0]) * 1000)
            for stage, (total, _) in now.items()
            if not stage.startswith("referee_")
        }
        windows.append(
            {
                "at_s": round(was_at - since, 2),
                "to_s": round(at - since, 2),
                "ms": {k: v for k, v in spent.items() if v >= 5},
            }
        )
    return windows


def partition_of(game: str) -> int:
    """The input partition of a game: Kafka's default partitioner on its key."""
    return int((murmur2(game.encode()) & 0x7FFFFFFF) % PARTITIONS)


def owned(log_text: str) -> list[int]:
    """The partitions of an instance's last assignment, from its log."""
    found: list[int] = []
    for line in log_text.splitlines():
        if '"partitions assigned"' in line:
            found = list(json.loads(line).get("partitions", []))
    return found


async def settled(served: list[Served], limit: float = 60) -> None:
    """Waits until the instances' assignments cover every partition once."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        assigned = [owned(s.log.read_text(errors="replace")) for s in served]
        flat = sorted(p for a in assigned for p in a)
        if flat == list(range(PARTITIONS)):
            return
        await asyncio.sleep(0.2)
    raise RuntimeError(f"the group did not settle:\n{tail(served[0].log)}")


def latencies(
    watcher: VerdictWatcher,
    sent_at: dict[tuple[str, int], float],
    since: int,
    keep: Any = None,
) -> list[tuple[float, float, int]]:
    """(sent at, latency in ms, partition) of every verdict sampled since ``since``."""
    out = []
    for game, seq, arrived in watcher.arrivals[since:]:
        sent = sent_at.get((game, seq))
        if sent is None:
            continue
        partition = partition_of(game)
        if keep is None or partition in keep:
            out.append((sent, (arrived - sent) * 1000, partition))
    return out


async def layout_run(
    ctx: Context, instances: int, lines: list[Line], kill: bool, heartbeat_ms: int
) -> dict[str, Any]:
    """One layout: its instances, a warm-up, the steady phase and (``kill``) the kill phase;
    ``heartbeat_ms``: the instances' ``REFEREE_KAFKA_HEARTBEAT_INTERVAL_MS``."""
    topics = fresh_topics()
    await make_topics(ctx, [topics.input, topics.verdicts, topics.dlq], partitions=PARTITIONS)
    url = await fresh_database(ctx, f"cluster{instances}", migrate=True)
    group = f"bench-cluster{instances}-{uuid.uuid4().hex[:6]}"
    served = [
        await start_serve(
            ctx,
            url,
            topics,
            name=f"{group}-{i}",
            group=group,
            extra_env={"REFEREE_KAFKA_HEARTBEAT_INTERVAL_MS": str(heartbeat_ms)},
        )
        for i in range(instances)
    ]
    await settled(served)
    watcher = VerdictWatcher(ctx, topics.verdicts)
    await watcher.start()
    producer = AIOKafkaProducer(
        bootstrap_servers=ctx.bootstrap, enable_idempotence=True, linger_ms=0
    )
    await producer.start()
    sent_at: dict[tuple[str, int], float] = {}
    warm = int(LOAD * WARMUP_SECONDS)
    steady = warm + int(LOAD * STEADY_SECONDS)
    result: dict[str, Any] = {
        "instances": instances,
        "partitions": PARTITIONS,
        "load": LOAD,
        "heartbeat_ms": heartbeat_ms,
    }
    try:
        await paced_produce(producer, topics.input, lines[:warm], LOAD, sent_at)
        await asyncio.sleep(1.0)
        since = len(watcher.arrivals)
        achieved = await paced_produce(producer, topics.input, lines[warm:steady], LOAD, sent_at)
        await asyncio.sleep(2.0)
        steady_ms = [ms for _, ms, _ in latencies(watcher, sent_at, since)]
        result |= {
            "achieved": achieved,
            "verdicts": len(steady_ms),
            "p50": percentile(steady_ms, 0.50),
            "p99": percentile(steady_ms, 0.99),
            "max": max(steady_ms, default=float("nan")),
        }
        say(
            f"   {instances} instance(s), {LOAD}/s on {PARTITIONS} partitions, heartbeat "
            f"{heartbeat_ms} ms: p50 "
            f"{result['p50']:.0f} ms, p99 {result['p99']:.0f} ms ({len(steady_ms)} verdicts)"
        )
        if kill:
            result["kill"] = await kill_phase(
                served, producer, topics.input, lines[steady:], watcher, sent_at
            )
    finally:
        await producer.stop()
        await watcher.stop()
        for s in served:
            stop_process(s.process)
    return result


async def kill_phase(
    served: list[Served],
    producer: AIOKafkaProducer,
    topic: str,
    lines: list[Line],
    watcher: VerdictWatcher,
    sent_at: dict[tuple[str, int], float],
) -> dict[str, Any]:
    """Kills one instance mid-run; the others' p99 after it, the dead partitions' wait."""
    victim = served[0]
    dead = set(owned(victim.log.read_text(errors="replace")))
    others = set(range(PARTITIONS)) - dead
    since = len(watcher.arrivals)
    started = time.monotonic()
    producing = asyncio.create_task(paced_produce(producer, topic, lines, LOAD, sent_at))
    await asyncio.sleep(KILL_AFTER_SECONDS)
    victim.process.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    survivors = served[1:]
    timeline = asyncio.create_task(
        stage_timeline(survivors, killed_at + SCRAPED_AFTER_KILL[1] + SCRAPE_SECONDS)
    )
    await producing
    timelines = await timeline
    await asyncio.sleep(3.0)
    sampled = latencies(watcher, sent_at, since)
    before = [ms for sent, ms, p in sampled if p in others and sent < killed_at]
    first = [
        ms
        for sent, ms, p in sampled
        if p in others and killed_at <= sent < killed_at + WINDOW_SECONDS
    ]
    second = [
        ms
        for sent, ms, p in sampled
        if p in others and killed_at + WINDOW_SECONDS <= sent < killed_at + 2 * WINDOW_SECONDS
    ]
    # the dead partitions: their first verdict published again, and the longest wait
    resumed = [
        arrived
        for game, seq, arrived in watcher.arrivals[since:]
        if partition_of(game) in dead
        and arrived > killed_at
        and sent_at.get((game, seq), 0) > killed_at
    ]
    waited = [ms for sent, ms, p in sampled if p in dead and sent >= killed_at]
    # their backlog drained: the last verdict of a record sent before they published again
    again = min(resumed, default=killed_at)
    drained = [
        arrived
        for game, seq, arrived in watcher.arrivals[since:]
        if partition_of(game) in dead and killed_at <= sent_at.get((game, seq), 0) < again
    ]
    # the others' slowest 1% in the first window: when (seconds after the kill) and where
    slowest = sorted(
        (
            (ms, sent - killed_at, p)
            for sent, ms, p in sampled
            if p in others and killed_at <= sent < killed_at + WINDOW_SECONDS
        ),
        reverse=True,
    )[: max(1, len(first) // 100)]
    say(
        f"   killed an instance owning {sorted(dead)}: the others' p99 "
        f"{percentile(first, 0.99):.0f} ms in the 10 s after, {percentile(second, 0.99):.0f} ms "
        f"in the 10 s after that; its partitions published again "
        f"{(min(resumed) - killed_at) if resumed else float('nan'):.1f} s after the kill "
        f"(their backlog drained {(max(drained) - killed_at) if drained else float('nan'):.1f} s "
        "after it); "
        f"the slowest 1% sent {min(at for _, at, _ in slowest):.1f}-"
        f"{max(at for _, at, _ in slowest):.1f} s after it, on partitions "
        f"{sorted({p for _, _, p in slowest})}"
    )
    return {
        "dead_partitions": sorted(dead),
        "elapsed": time.monotonic() - started,
        "others_before_p99": percentile(before, 0.99),
        "others_first_p50": percentile(first, 0.50),
        "others_first_p99": percentile(first, 0.99),
        "others_first_max": max(first, default=float("nan")),
        "others_second_p99": percentile(second, 0.99),
        "others_second_max": max(second, default=float("nan")),
        "dead_resumed_s": (min(resumed) - killed_at) if resumed else float("nan"),
        "dead_drained_s": (max(drained) - killed_at) if drained else float("nan"),
        "dead_max_ms": max(waited, default=float("nan")),
        "dead_p99_ms": percentile(waited, 0.99),
        "verdicts_after_kill": len(first) + len(second),
        "survivor_stages": [
            {
                "partitions": owned(s.log.read_text(errors="replace")),
                "windows": stage_windows(t, killed_at),
            }
            for s, t in zip(survivors, timelines, strict=True)
        ],
        "others_first_slowest": [
            {"ms": round(ms), "sent_after_kill_s": round(at, 2), "partition": p}
            for ms, at, p in slowest
        ],
    }


async def run(ctx: Context) -> None:
    """One instance, then four, on 16 partitions at the same load; one of the four killed."""
    say(f"9. one partition, one owner: {INSTANCES} instances against one, {LOAD}/s in total")
    seconds = WARMUP_SECONDS + STEADY_SECONDS + AFTER_KILL_SECONDS + KILL_AFTER_SECONDS
    lines = phase_lines(LOAD, seconds, 4242)
    layouts = [(1, HEARTBEATS_MS[0]), *((INSTANCES, ms) for ms in HEARTBEATS_MS)]
    rounds = [
        await layout_run(ctx, instances, lines, kill=instances > 1, heartbeat_ms=ms)
        for round_number in range(ctx.sizes.repeats)
        for instances, ms in (layouts if round_number % 2 == 0 else layouts[::-1])
    ]
    ctx.results["cluster"] = {"rounds": rounds}
    ctx.note(
        f"{INSTANCES} x uv run referee serve (one group, {PARTITIONS} partitions)"
        "   # see bench/scenarios/cluster.py"
    )
