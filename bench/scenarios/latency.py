"""4a. Latency vs offered load: paced production of fresh games, each verdict's arrival timed."""

from __future__ import annotations

import asyncio
import contextlib
import math
import statistics
import time
from collections.abc import Awaitable
from typing import Any

import msgspec
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from bench.context import Context, say
from bench.process import Served, start_serve, stop_process, tail
from bench.scrape import means, snapshot
from bench.services import fresh_database, fresh_topics, make_topics
from referee.processing.referee import Referee
from referee.service.tails import partition_ids
from referee.simulate import SimulationOptions, simulate

Line = tuple[bytes, bytes, str, int]  # (key, value, game id, seq)

QUIET_BELOW = 100
"""Offered loads (events/s) below this are a quiet table's."""


def phase_lines(load: int, seconds: float, seed: int, rules: str = "edition1") -> list[Line]:
    """(key, value, game id, seq) for load * seconds events of fresh games (edition 1's, or
    ``rules="random"``: the simulator's default mix of every family)."""
    wanted = int(load * seconds)
    # Many games open at once under load; at a quiet rate, a few games played through (so
    # that their rounds end and verdicts are sampled at all).
    many = 50 if load >= QUIET_BELOW else 0
    options = SimulationOptions(games=wanted // 60 + many, seed=seed, rules=rules)
    out = []
    for game_id, line in simulate(options):
        seq = msgspec.json.decode(line)["seq"]
        out.append((game_id.encode(), line, game_id, seq))
        if len(out) >= wanted:
            break
    return out


def verdicts_of(lines: list[Line]) -> int:
    from referee.contracts.rejection import FileSource

    ref = Referee()
    return sum(
        len(ref.process(v, FileSource("x", i)).verdicts) for i, (_, v, _, _) in enumerate(lines)
    )


class VerdictWatcher:
    """Records the arrival time of every verdict on the verdict topic, and when the relay
    sent it (the record's timestamp: the relay's producer stamps each record at its send
    call, Unix milliseconds), as the monotonic time of this process."""

    def __init__(self, ctx: Context, topic: str) -> None:
        self.ctx = ctx
        self.topic = topic
        self.arrivals: list[tuple[str, int, float]] = []
        self.relay_sent: dict[tuple[str, int], float] = {}
        self.task: asyncio.Task[None] | None = None
        self.consumer: AIOKafkaConsumer | None = None

    async def start(self) -> None:
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=self.ctx.bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=5,
            # a verdict has arrived when a consumer of the topic can see it: committed
            isolation_level="read_committed",
        )
        parts = await partition_ids({"bootstrap_servers": self.ctx.bootstrap}, self.topic)
        await self.consumer.start()
        self.consumer.assign([TopicPartition(self.topic, p) for p in parts])
        self.task = asyncio.create_task(self._run(self.consumer))

    async def _run(self, consumer: AIOKafkaConsumer) -> None:
        decode = msgspec.json.decode
        while True:
            got = await consumer.getmany(timeout_ms=20)
            now = time.monotonic()
            wall_to_monotonic = now - time.time()
            for rs in got.values():
                for r in rs:
                    v = decode(r.value or b"{}")
                    cause = (v["game_id"], v["cause_seq"])
                    self.arrivals.append((*cause, now))
                    self.relay_sent[cause] = r.timestamp / 1000 + wall_to_monotonic

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        if self.consumer is not None:
            await self.consumer.stop()


async def paced_produce(
    producer: AIOKafkaProducer,
    topic: str,
    lines: list[Line],
    rate: int,
    sent_at: dict[tuple[str, int], float],
) -> float:
    """Sends the lines at ``rate`` per second; returns the achieved rate."""
    loop_start = time.monotonic()
    i = 0
    futures: list[Awaitable[Any]] = []
    n = len(lines)
    while i < n:
        due = min(n, int((time.monotonic() - loop_start) * rate) + 1)
        while i < due:
            key, value, game, seq = lines[i]
            sent_at[game, seq] = time.monotonic()
            futures.append(await producer.send(topic, value, key=key))
            i += 1
        await asyncio.sleep(0.001)
    await asyncio.gather(*futures)
    elapsed = time.monotonic() - loop_start
    return n / elapsed if elapsed > 0 else 0.0


def tail_split(latencies: list[tuple[float, float]], share: float = 0.01) -> dict[str, float]:
    """Where the slowest verdicts' time went, split at the relay's send call: each
    latency is (ms from the cause's send to the relay's send, ms from there to arrival).

    The first part is the referee's (broker, fetch, judge, write, commit, the relay's wake-up
    and read), the second the relay's transaction and the consumer's read_committed fetch.
    """
    ordered = sorted(latencies, key=sum)
    slowest = ordered[-max(1, int(len(ordered) * share)) :] if ordered else []
    before = [b for b, _ in latencies]
    after = [a for _, a in latencies]
    return {
        "p50_before": percentile(before, 0.50),
        "p50_after": percentile(after, 0.50),
        "p99_before": percentile(before, 0.99),
        "p99_after": percentile(after, 0.99),
        "slowest": len(slowest),
        "slowest_before": statistics.fmean(b for b, _ in slowest) if slowest else math.nan,
        "slowest_after": statistics.fmean(a for _, a in slowest) if slowest else math.nan,
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    k = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[k]


async def measure_phase(
    served: Served,
    watcher: VerdictWatcher,
    producer: AIOKafkaProducer,
    topic: str,
    load: int,
    lines: list[Line],
    expected: int,
) -> dict[str, Any]:
    """Produces ``lines`` at ``load`` events/s to ``topic`` and waits (at most 60 s after the
    last) for their ``expected`` verdicts; the latencies of those that came, and the stages."""
    sent_at: dict[tuple[str, int], float] = {}
    games = {g for _, _, g, _ in lines}
    before = len(watcher.arrivals)
    stages_before = await snapshot(served.port)
    achieved = await paced_produce(producer, topic, lines, load, sent_at)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        got = sum(1 for g, _, _ in watcher.arrivals[before:] if g in games)
        if got >= expected:
            break
        if served.process.poll() is not None:
            raise RuntimeError(f"referee serve died:\n{tail(served.log)}")
        await asyncio.sleep(0.1)
    latencies = [
        (t - sent_at[g, s]) * 1000 for g, s, t in watcher.arrivals[before:] if (g, s) in sent_at
    ]
    split = tail_split(
        [
            ((sent - sent_at[g, s]) * 1000, (t - sent) * 1000)
            for g, s, t in watcher.arrivals[before:]
            if (g, s) in sent_at and (sent := watcher.relay_sent.get((g, s))) is not None
        ]
    )
    stages = means(stages_before, await snapshot(served.port))
    return {
        "load": load,
        "achieved": achieved,
        "events": len(lines),
        "verdicts": len(latencies),
        "expected": expected,
        "p50": percentile(latencies, 0.50),
        "p99": percentile(latencies, 0.99),
        "max": max(latencies, default=math.nan),
        "mean": statistics.fmean(latencies) if latencies else math.nan,
        "stages": stages,
        "split": split,
    }


async def run(ctx: Context) -> None:
    """One ``referee serve`` fed a warm-up, each offered load of ``Sizes.loads`` (edition 1's
    games), then each of ``Sizes.mix_loads`` (the simulator's default mix of every family)."""
    say("4a. latency vs offered load")
    topics = fresh_topics()
    await make_topics(ctx, [topics.input, topics.verdicts, topics.dlq])
    url = await fresh_database(ctx, "latency", migrate=True)
    loads = [(load, seconds, "edition1") for load, seconds in ctx.sizes.loads]
    loads += [(load, seconds, "random") for load, seconds in ctx.sizes.mix_loads]
    phases = [(0, ctx.sizes.warmup_seconds, 500, "edition1")] + [
        (i + 1, seconds, load, rules) for i, (load, seconds, rules) in enumerate(loads)
    ]
    prepared = [
        (phase, load, rules, lines, verdicts_of(lines))
        for phase, seconds, load, rules in phases
        for lines in [phase_lines(load, seconds, 900 + phase, rules)]
    ]
    served = await start_serve(ctx, url, topics, name="latency")
    watcher = VerdictWatcher(ctx, topics.verdicts)
    await watcher.start()
    producer = AIOKafkaProducer(
        bootstrap_servers=ctx.bootstrap, enable_idempotence=True, linger_ms=0
    )
    await producer.start()
    rows = []
    try:
        await asyncio.sleep(1.0)
        for phase, load, rules, lines, expected in prepared:
            row = await measure_phase(
                served, watcher, producer, topics.input, load, lines, expected
            )
            if phase == 0:
                say(f"   warm-up done ({row['verdicts']} verdicts)")
                continue
            row["log"] = "mix" if rules == "random" else "edition1"
            rows.append(row)
            say(
                f"   {load}/s ({row['log']}): p50 {row['p50']:.0f} ms, p99 {row['p99']:.0f} ms "
                f"({row['verdicts']}/{expected} verdicts)"
            )
            await asyncio.sleep(1.0)
    finally:
        await producer.stop()
        await watcher.stop()
        stop_process(served.process)
    ctx.results["latency"] = rows
