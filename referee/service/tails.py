"""How far each output partition got: the outbox position of its last committed record.

Every record the referee publishes carries the header ``outbox-position``. The committed
records of an output partition are a prefix of the outbox they come from, in position order,
so the last one says where its publisher resumes.
"""

from __future__ import annotations

import time
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

POSITION_HEADER = "outbox-position"
TAIL_WINDOW = 50
TAIL_STALL_SECONDS = 10.0


class TopicTails:
    """Reads the last committed outbox positions of output partitions (``read_committed``)."""

    def __init__(self, client_options: dict[str, Any]) -> None:
        self.options = client_options

    async def read(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Returns the highest ``outbox-position`` of the last committed records of each
        partition that has one.

        Reads ``read_committed``: the end offsets are then the last stable offsets, and
        records of aborted transactions are skipped. Those can fill a partition's tail (an
        aborted transaction leaves its records, and every commit leaves a marker that takes
        an offset), so the window grows backwards until a committed record is found.
        """
        if not partitions:
            return {}
        consumer = AIOKafkaConsumer(
            enable_auto_commit=False,
            group_id=None,
            isolation_level="read_committed",
            **self.options,
        )
        await consumer.start()
        try:
            consumer.assign(partitions)
            ends: dict[TopicPartition, int] = await consumer.end_offsets(partitions)
            last: dict[TopicPartition, int] = {}
            window = TAIL_WINDOW
            spans = {tp: (max(0, ends[tp] - window), ends[tp]) for tp in partitions if ends[tp] > 0}
            while spans:
                found = await _read_spans(consumer, spans)
                last.update(found)
                window *= 8
                spans = {
                    tp: (max(0, start - window), start)
                    for tp, (start, _) in spans.items()
                    if tp not in found and start > 0
                }
            return last
        finally:
            await consumer.stop()


async def _read_spans(
    consumer: AIOKafkaConsumer, spans: dict[TopicPartition, tuple[int, int]]
) -> dict[TopicPartition, int]:
    """Reads [start, stop) of each partition; returns the highest position header of each."""
    found: dict[TopicPartition, int] = {}
    consumer.resume(*spans)
    for tp, (start, _) in spans.items():
        consumer.seek(tp, start)
    pending = set(spans)
    positions = {tp: spans[tp][0] for tp in pending}
    moved_at = time.monotonic()
    while pending:
        batch = await consumer.getmany(*pending, timeout_ms=200)
        for tp, records in batch.items():
            stop = spans[tp][1]
            for r in records:
                position = _header(r.headers) if r.offset < stop else None
                if position is not None:
                    found[tp] = max(found.get(tp, 0), position)
        for tp in list(pending):
            # the position moves past aborted batches and commit markers too, which
            # getmany never returns: it, not the records, says the span is read
            now_at = await consumer.position(tp)
            if now_at != positions[tp]:
                positions[tp] = now_at
                moved_at = time.monotonic()
            if now_at >= spans[tp][1]:
                pending.discard(tp)
                consumer.pause(tp)
        if pending and time.monotonic() - moved_at > TAIL_STALL_SECONDS:
            raise RuntimeError(f"could not read the tails of {sorted(pending)}")
    return found


async def partition_counts(options: dict[str, Any], topics: list[str]) -> dict[str, int]:
    """Returns the partition count of each topic, asking the cluster (not a client's cache);
    0 for a topic that does not exist."""
    admin = AIOKafkaAdminClient(**options)
    await admin.start()
    try:
        described = await admin.describe_topics(topics)
    finally:
        await admin.close()
    counts = dict.fromkeys(topics, 0)
    for d in described:
        if d.get("topic") in counts:
            counts[d["topic"]] = len(d.get("partitions", []))
    return counts


async def partition_ids(options: dict[str, Any], topic: str) -> list[int]:
    """Returns the partition ids of a topic, asking the cluster (not a client's cache)."""
    count = (await partition_counts(options, [topic]))[topic]
    if not count:
        raise RuntimeError(f"topic {topic!r} does not exist")
    return list(range(count))


def _header(headers: Any) -> int | None:
    for name, value in headers or ():
        if name == POSITION_HEADER:
            return int(value)
    return None
