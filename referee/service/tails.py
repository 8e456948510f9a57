"""How far each output partition got: its last committed record's outbox position and input
offset.

Every record the referee publishes carries the headers ``outbox-position`` (its row's place in
its input partition's outbox, a number the store hands out) and ``input-offset`` (the offset of
the input record that gave it, a coordinate the store cannot forget; releases before 0.5 did
not write it). The committed records of an output partition are a prefix of what its input
partition's records gave, in input order, so the last one says where its publisher resumes.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

POSITION_HEADER = "outbox-position"
CAUSE_HEADER = "input-offset"


class Tail(NamedTuple):
    """The last committed record of an output partition."""

    position: int
    """Its ``outbox-position``."""
    cause: int | None
    """Its ``input-offset`` (None: published by a release that did not write it)."""


TAIL_WINDOW = 50
TAIL_STALL_SECONDS = 10.0


class Input(NamedTuple):
    """What an input partition holds, as its new owner finds it."""

    log_start: int
    """The first offset still held (records before it were deleted)."""
    end: int
    """The end offset (the next record's)."""
    record: bytes | None
    """The record at the store's position (the last processed), when still held."""


class Survey(NamedTuple):
    """What partitions' new owner reads of Kafka once it has fenced their previous owners."""

    inputs: dict[TopicPartition, Input]
    tails: dict[TopicPartition, Tail]
    """The last committed record of each output partition that has one."""


class TopicTails:
    """Reads the last committed outbox positions of output partitions (``read_committed``)."""

    def __init__(self, client_options: dict[str, Any]) -> None:
        self.options = client_options

    async def survey(
        self, stored: dict[TopicPartition, int], outputs: list[TopicPartition]
    ) -> Survey:
        """Returns what each input partition holds (its offsets, and its record at the store's
        position ``stored[tp]`` when it still holds it) and the last committed record of each
        output partition, with one consumer."""
        consumer = self._consumer()
        await consumer.start()
        try:
            sources = list(stored)
            starts = await consumer.beginning_offsets(sources) if sources else {}
            ends = await consumer.end_offsets(sources) if sources else {}
            inputs = {}
            for tp in sources:
                start, end, at = starts[tp], ends[tp], stored[tp]
                record = await _record_at(consumer, tp, at) if start <= at < end else None
                inputs[tp] = Input(start, end, record)
            return Survey(inputs, await _tails(consumer, outputs))
        finally:
            await consumer.stop()

    def _consumer(self) -> AIOKafkaConsumer:
        return AIOKafkaConsumer(
            enable_auto_commit=False,
            group_id=None,
            isolation_level="read_committed",
            **self.options,
        )

    async def read(self, partitions: list[TopicPartition]) -> dict[TopicPartition, Tail]:
        """Returns the last committed record of each partition that has one.

        Reads ``read_committed``: the end offsets are then the last stable offsets, and
        records of aborted transactions are skipped. Those can fill a partition's tail (an
        aborted transaction leaves its records, and every commit leaves a marker that takes
        an offset), so the window grows backwards until a committed record is found.
        """
        if not partitions:
            return {}
        consumer = self._consumer()
        await consumer.start()
        try:
            return await _tails(consumer, partitions)
        finally:
            await consumer.stop()


async def _tails(
    consumer: AIOKafkaConsumer, partitions: list[TopicPartition]
) -> dict[TopicPartition, Tail]:
    """The last committed record of each partition that has one, on a started consumer."""
    if not partitions:
        return {}
    consumer.assign(partitions)
    ends: dict[TopicPartition, int] = await consumer.end_offsets(partitions)
    last: dict[TopicPartition, Tail] = {}
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


async def _record_at(consumer: AIOKafkaConsumer, tp: TopicPartition, offset: int) -> bytes | None:
    """Returns the value of a partition's record at ``offset`` (None: none there, such as a
    record of an aborted transaction)."""
    consumer.assign([tp])
    consumer.seek(tp, offset)
    deadline = time.monotonic() + TAIL_STALL_SECONDS
    while time.monotonic() < deadline:
        batch = await consumer.getmany(tp, timeout_ms=200, max_records=1)
        for r in batch.get(tp, ()):
            return (r.value or b"") if r.offset == offset else None
        if await consumer.position(tp) > offset:
            return None
    raise RuntimeError(f"could not read the record at offset {offset} of {tp}")


async def _read_spans(
    consumer: AIOKafkaConsumer, spans: dict[TopicPartition, tuple[int, int]]
) -> dict[TopicPartition, Tail]:
    """Reads [start, stop) of each partition; returns the last record of each that carries a
    position (the last by offset: after the store went back in time, positions on the topic
    need not ascend)."""
    found: dict[TopicPartition, Tail] = {}
    found_at: dict[TopicPartition, int] = {}
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
                tail = _tail(r.headers) if r.offset < stop else None
                if tail is not None and r.offset >= found_at.get(tp, -1):
                    found[tp] = tail
                    found_at[tp] = r.offset
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


async def read_topic(options: dict[str, Any], topic: str) -> list[tuple[int, int, bytes]]:
    """Returns every committed record of a topic (``read_committed``): (partition, offset,
    value), each partition read to its last stable offset."""
    count = (await partition_counts(options, [topic]))[topic]
    if not count:
        return []
    partitions = [TopicPartition(topic, p) for p in range(count)]
    consumer = AIOKafkaConsumer(
        enable_auto_commit=False, group_id=None, isolation_level="read_committed", **options
    )
    await consumer.start()
    try:
        consumer.assign(partitions)
        ends = await consumer.end_offsets(partitions)
        starts = await consumer.beginning_offsets(partitions)
        for tp in partitions:
            consumer.seek(tp, starts[tp])
        pending = {tp for tp in partitions if ends[tp] > 0}
        found: list[tuple[int, int, bytes]] = []
        moved_at = time.monotonic()
        while pending:
            batch = await consumer.getmany(*pending, timeout_ms=500, max_records=5000)
            for tp, records in batch.items():
                found += [(tp.partition, r.offset, r.value or b"") for r in records]
            for tp in list(pending):
                # the position passes aborted records and markers too: it says when a
                # partition is read to its end
                if await consumer.position(tp) >= ends[tp]:
                    pending.discard(tp)
            if batch:
                moved_at = time.monotonic()
            elif time.monotonic() - moved_at > TAIL_STALL_SECONDS:
                raise RuntimeError(f"could not read {sorted(tp.partition for tp in pending)}")
        return found
    finally:
        await consumer.stop()


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


def _tail(headers: Any) -> Tail | None:
    position = cause = None
    for name, value in headers or ():
        if name == POSITION_HEADER:
            position = int(value)
        elif name == CAUSE_HEADER:
            cause = int(value)
    return None if position is None else Tail(position, cause)
