"""Reading the referee's output topics: counts, values and end offsets."""

from __future__ import annotations

import time

from aiokafka import AIOKafkaConsumer, TopicPartition

from bench.context import Context
from bench.process import Served, tail
from referee.service.tails import partition_ids


async def committed_reader(ctx: Context, topic: str) -> AIOKafkaConsumer:
    """A read_committed consumer of the whole topic (the relay publishes in transactions)."""
    parts = await partition_ids({"bootstrap_servers": ctx.bootstrap}, topic)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=ctx.bootstrap,
        enable_auto_commit=False,
        isolation_level="read_committed",
        fetch_max_wait_ms=50,
    )
    await consumer.start()
    tps = [TopicPartition(topic, p) for p in parts]
    consumer.assign(tps)
    await consumer.seek_to_beginning(*tps)
    return consumer


async def wait_for_count(
    ctx: Context, served: Served, topic: str, expected: int, limit: float
) -> float:
    """Waits until ``topic`` holds ``expected`` committed records; returns the perf_counter time.

    Counts records read ``read_committed``, not end offsets: with a transactional relay every
    commit also writes a marker that takes an offset in each partition it touched.
    """
    consumer = await committed_reader(ctx, topic)
    try:
        seen = 0
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            got = await consumer.getmany(timeout_ms=50)
            seen += sum(len(records) for records in got.values())
            if seen >= expected:
                return time.perf_counter()
            if served.process.poll() is not None:
                raise RuntimeError(f"referee serve died:\n{tail(served.log)}")
    finally:
        await consumer.stop()
    raise RuntimeError(
        f"{topic} did not reach {expected} records in {limit:.0f} s:\n{tail(served.log)}"
    )


async def drain_values(ctx: Context, topic: str, expected: int) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=ctx.bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await consumer.start()
    try:
        parts = await partition_ids({"bootstrap_servers": ctx.bootstrap}, topic)
        tps = [TopicPartition(topic, p) for p in parts]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        out: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(out) < expected and time.monotonic() < deadline:
            got = await consumer.getmany(timeout_ms=200)
            out.extend(r.value or b"" for rs in got.values() for r in rs)
        return out
    finally:
        await consumer.stop()


async def high_watermarks(ctx: Context, topic: str) -> int:
    """The sum of the topic's end offsets read_uncommitted: records, aborted ones and markers."""
    parts = await partition_ids({"bootstrap_servers": ctx.bootstrap}, topic)
    consumer = AIOKafkaConsumer(bootstrap_servers=ctx.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        ends = await consumer.end_offsets([TopicPartition(topic, p) for p in parts])
        return int(sum(ends.values()))
    finally:
        await consumer.stop()
