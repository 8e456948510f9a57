"""3. End to end on Kafka: ``referee serve`` on a full input topic against a consume + COPY
ceiling; the published verdicts checked against the in-memory replay's."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import msgspec
from aiokafka import AIOKafkaConsumer

from bench.context import E2E_BATCH, Context, say
from bench.journal import ceiling_row
from bench.process import count_lines, start_serve, stop_process
from bench.readers import drain_values, wait_for_count
from bench.scrape import means, snapshot
from bench.services import fresh_database, fresh_topics, make_topics
from referee.contracts.wire import EnvelopeProbe
from referee.processing.rows import JOURNAL_COLUMNS
from tools.testkit.kafkatools import Topics, keyed_lines, produce


async def kafka_ceiling(
    ctx: Context, url: str, topic: str, expected: int, batch_size: int
) -> dict[str, float]:
    """A consumer group reading the topic in batches, COPYing raw records into ``journal``
    with one transaction and one offset commit per batch."""
    probe = msgspec.json.Decoder(EnvelopeProbe)
    conn = await asyncpg.connect(url)
    started = time.perf_counter()
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=ctx.bootstrap,
        group_id=f"bench-ceiling-{uuid.uuid4().hex[:6]}",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    first = 0.0
    n = 0
    try:
        deadline = time.monotonic() + 600
        while n < expected and time.monotonic() < deadline:
            got = await consumer.getmany(timeout_ms=50, max_records=batch_size)
            records = [r for rs in got.values() for r in rs]
            if not records:
                continue
            if not first:
                first = time.perf_counter()
            rows = []
            for r in records:
                n += 1
                rows.append(ceiling_row(n, r.topic, r.partition, r.offset, r.value or b"", probe))
            async with conn.transaction():
                await conn.copy_records_to_table("journal", records=rows, columns=JOURNAL_COLUMNS)
            await consumer.commit()
        done = time.perf_counter()
    finally:
        await consumer.stop()
        await conn.close()
    if n < expected:
        raise RuntimeError(f"ceiling consumer read only {n} of {expected}")
    return {
        "eps": n / (done - started),
        "steady_eps": n / (done - first),
        "seconds": done - started,
    }


async def serve_run(
    ctx: Context,
    topics: Topics,
    events: int,
    verdicts: int,
    batch_size: int,
    name: str,
    extra_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Runs ``referee serve`` on a full input topic until every verdict is published."""
    url = await fresh_database(ctx, name, migrate=True, env=extra_env)
    await make_topics(ctx, [topics.verdicts, topics.dlq])
    served = await start_serve(
        ctx, url, topics, name=name, batch_size=batch_size, extra_env=extra_env
    )
    before = await snapshot(served.port)
    try:
        done = await wait_for_count(
            ctx, served, topics.verdicts, verdicts, limit=max(120.0, events / 500)
        )
        stages = means(before, await snapshot(served.port))
    finally:
        stop_process(served.process)
    total = done - served.started
    steady = done - served.ready_at
    return {
        "eps": events / total,
        "steady_eps": events / steady,
        "seconds": total,
        "startup": served.ready_at - served.started,
        "stages": stages,
    }


async def run(ctx: Context) -> None:
    """Edition 1's log and the mix of every family end to end through ``referee serve``
    (REFEREE_BATCH_SIZE=E2E_BATCH), each against its own ceiling."""
    say("3. end to end on Kafka")
    logs = ctx.shared_logs()
    result = await measure_log(ctx, logs.main, logs.main_verdicts, "edition 1", serial=True)
    result["mix"] = await measure_log(ctx, logs.edition2, logs.edition2_verdicts, "mix")
    ctx.results["e2e"] = result
    ctx.note(
        f"REFEREE_BATCH_SIZE={E2E_BATCH} ... uv run referee serve"
        "   # see bench/scenarios/e2e.py:serve_run"
    )


async def measure_log(
    ctx: Context, log: Path, verdicts_file: Path, label: str, *, serial: bool = False
) -> dict[str, Any]:
    """One log's figures: the ceiling and ``serve`` alternating, best of ``repeats`` each;
    with ``serial``, the broker's warm-up before and the serial breakdown after."""
    say(f"   {label}: {log.name}")
    expected_verdicts = count_lines(verdicts_file)
    topics = fresh_topics()
    await make_topics(ctx, [topics.input])
    records = keyed_lines(log)
    started = time.perf_counter()
    await produce(ctx.bootstrap, topics.input, records)
    produce_eps = len(records) / (time.perf_counter() - started)
    say(f"   produced {len(records)} records at {produce_eps:,.0f}/s")
    # Warm-up, unmeasured. The broker is a JVM started for this benchmark run: its JIT
    # compiler spends seconds of CPU in the first serve rounds (transactions, read_committed
    # fetches), on one of two cores (bench/notes.md, "The broker's JIT compiler"); a broker
    # in service has compiled those paths long ago.
    for attempt in range(ctx.sizes.e2e_warmups if serial else 0):
        warm_url = await fresh_database(ctx, f"kwarm{attempt}", migrate=True)
        await kafka_ceiling(ctx, warm_url, topics.input, len(records), E2E_BATCH)
        warm = await serve_run(
            ctx,
            fresh_topics(topics.input),
            len(records),
            expected_verdicts,
            E2E_BATCH,
            f"e2e-warm{attempt}",
        )
        say(f"   warm-up {attempt + 1}: referee serve {warm['eps']:,.0f} events/s (not counted)")
    # The ceiling and the referee alternate, best of ``repeats`` each, as the store replay
    # and the in-memory replay are measured: one run of either moves too much on a shared
    # machine (bench/notes.md).
    ceilings: list[dict[str, Any]] = []
    runs: list[tuple[dict[str, Any], Topics]] = []
    for attempt in range(ctx.sizes.repeats):
        ceil_url = await fresh_database(ctx, f"kceil{attempt}", migrate=True)
        ceilings.append(await kafka_ceiling(ctx, ceil_url, topics.input, len(records), E2E_BATCH))
        say(f"   ceiling: {ceilings[-1]['eps']:,.0f} events/s")
        run_topics = topics if attempt == 0 else fresh_topics(topics.input)
        one = await serve_run(
            ctx, run_topics, len(records), expected_verdicts, E2E_BATCH, f"e2e{attempt}"
        )
        runs.append((one, run_topics))
        say(f"   referee serve: {one['eps']:,.0f} events/s ({one['seconds']:.1f} s)")
    ceiling = max(ceilings, key=lambda c: float(c["eps"]))
    best, best_topics = max(runs, key=lambda r: float(r[0]["eps"]))
    result: dict[str, Any] = {}
    if serial:
        # the breakdown before the pipeline: the same run with each batch written before the next
        result["serial"] = await serve_run(
            ctx,
            fresh_topics(topics.input),
            len(records),
            expected_verdicts,
            E2E_BATCH,
            "e2e-serial",
            extra_env={"REFEREE_PIPELINE": "false"},
        )
        say(f"   referee serve, serial: {result['serial']['eps']:,.0f} events/s")
    # plausibility: the published verdicts are exactly those of the in-memory replay
    published = await drain_values(ctx, best_topics.verdicts, expected_verdicts)
    replayed = sorted((await asyncio.to_thread(verdicts_file.read_bytes)).splitlines())
    same = sorted(published) == replayed
    say(f"   verdict topic == in-memory replay verdicts: {same}")
    return {
        **result,
        "log": log.name,
        "events": len(records),
        "verdicts": expected_verdicts,
        "produce_eps": produce_eps,
        "ceiling": ceiling,
        "serve": best,
        "all_serve_eps": [r["eps"] for r, _ in runs],
        "all_ceiling_eps": [c["eps"] for c in ceilings],
        "same_verdicts": same,
        "partitions": 4,
        "warmups": ctx.sizes.e2e_warmups if serial else 0,
    }
