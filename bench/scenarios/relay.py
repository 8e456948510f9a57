"""7. One owner's publishing rate: a full outbox of input partitions, published by their owner.

The edition-2 log (every family, scoring during play: many verdicts) is judged in this process
through the processing step into a fresh store, as if it had been read from PARTITIONS input
partitions of a topic (each game on its key's partition, Kafka's default partitioner); nothing
is published. Then ``referee serve`` starts on that (empty) input topic: on assignment, each
partition's publisher fences, reads its output partition's tail and publishes the partition's
outbox from the store. The rate is one instance's publishing ceiling with one partition (one
publisher) and with PARTITIONS (one publisher each, in one process), which bounds a cluster's
(docs/design.md, "Scale ceiling").
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
from aiokafka.partitioner import murmur2

from bench.context import Context, say
from bench.process import start_serve, stop_process
from bench.readers import committed_reader
from bench.services import fresh_database, fresh_topics, make_topics
from referee.contracts.rejection import KafkaSource
from referee.processing.step import InputRecord, ProcessingStep
from referee.store.database import create_engine
from referee.store.step_store import PostgresStepStore
from tools.testkit.kafkatools import Topics, keyed_lines

PARTITIONS = (1, 4)
"""Input partitions of the two runs: one publisher, then one a partition in one instance."""
BATCH = 2000


async def stored_outbox(url: str, log: Path, topic: str, partitions: int) -> None:
    """Judges ``log`` into the store as records of ``topic``'s partitions (nothing published)."""
    engine = create_engine(url)
    step = ProcessingStep(PostgresStepStore(engine), f"bench-{uuid.uuid4().hex[:6]}")
    offsets = [0] * partitions
    batch: list[InputRecord] = []
    try:
        for key, value in keyed_lines(log):
            p = (murmur2(key) & 0x7FFFFFFF) % partitions if key is not None else 0
            offset = offsets[p]
            offsets[p] += 1
            batch.append(InputRecord(value, topic, p, offset, KafkaSource(topic, p, offset), key))
            if len(batch) >= BATCH:
                await step.submit(batch)
                batch = []
        if batch:
            await step.submit(batch)
        await step.settle()
    finally:
        await engine.dispose()


async def one_run(ctx: Context, log: Path, partitions: int) -> dict[str, Any]:
    """Stores the outbox of ``log`` over ``partitions`` and times its publishing."""
    topics: Topics = fresh_topics()
    url = await fresh_database(ctx, f"relay{partitions}", migrate=True)
    await stored_outbox(url, log, topics.input, partitions)
    conn = await asyncpg.connect(url)
    try:
        verdicts = int(await conn.fetchval("SELECT count(*) FROM verdicts"))
        dead = int(await conn.fetchval("SELECT count(*) FROM dead_letters"))
        events = int(await conn.fetchval("SELECT count(*) FROM journal"))
    finally:
        await conn.close()
    await make_topics(ctx, [topics.input, topics.verdicts, topics.dlq], partitions=partitions)
    served = await start_serve(ctx, url, topics, name=f"relay{partitions}")
    try:
        first_ms, last_ms = await send_times(ctx, topics.verdicts, verdicts, limit=300)
    finally:
        stop_process(served.process)
    # The span between the first and the last record's producer timestamp: the publishers may
    # publish much of the outbox before /readyz answers, so the process's clock would not do.
    seconds = max(last_ms - first_ms, 1) / 1000
    rate = (verdicts - 1) / seconds
    say(f"   {partitions} partition(s): {verdicts} verdicts in {seconds:.2f} s: {rate:,.0f}/s")
    return {
        "partitions": partitions,
        "verdicts": verdicts,
        "events": events,
        "dead_letters": dead,
        "seconds": seconds,
        "verdicts_per_second": rate,
    }


async def run(ctx: Context) -> None:
    """Publishes a stored outbox of the edition-2 log's verdicts and measures the rate."""
    say("7. one owner's publishing rate")
    logs = ctx.shared_logs()
    runs = [await one_run(ctx, logs.edition2, partitions) for partitions in PARTITIONS]
    ctx.results["relay"] = {"runs": runs, **runs[0]}
    ctx.note(
        "the edition-2 log judged into the store as records of 1 and 4 input partitions"
        " (bench/scenarios/relay.py), then uv run referee serve on that empty input topic"
    )


async def send_times(ctx: Context, topic: str, expected: int, limit: float) -> tuple[int, int]:
    """The first and last producer timestamps (ms) once ``topic`` holds ``expected`` records."""
    consumer = await committed_reader(ctx, topic)
    try:
        seen = 0
        first = last = 0
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            got = await consumer.getmany(timeout_ms=50)
            for records in got.values():
                for record in records:
                    first = record.timestamp if seen == 0 else min(first, record.timestamp)
                    last = max(last, record.timestamp)
                    seen += 1
            if seen >= expected:
                return first, last
    finally:
        await consumer.stop()
    raise RuntimeError(f"{topic} did not reach {expected} records in {limit:.0f} s")
