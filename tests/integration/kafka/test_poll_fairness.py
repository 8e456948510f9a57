"""On the real broker: a partition's backlog does not keep another partition's records out of
the batches (referee/service/poll.py). aiokafka hands buffered records out partition by
partition; a full half batch from a backlog is topped up from the others, each given its
share."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from referee.service.poll import batch_poll
from tools.testkit.kafkatools import Topics, create_topics

pytestmark = pytest.mark.kafka

BACKLOG = 5000
FRESH = 5


async def _fill(bootstrap: str, topic: str, backlogs: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        sent = [
            await producer.send(topic, b"x" * 80, partition=p)
            for p in range(backlogs)
            for _ in range(BACKLOG)
        ]
        sent += [await producer.send(topic, b"y" * 80, partition=backlogs) for _ in range(FRESH)]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()


@pytest.mark.parametrize("backlogs", [1, 2])
async def test_the_other_partitions_records_share_the_first_batch_with_the_backlogs(
    bootstrap: str, backlogs: int
) -> None:
    # two backlogs: a dead instance's partitions dealt out to one survivor
    topics = Topics.fresh()
    await create_topics(bootstrap, topics, partitions=backlogs + 1)
    await _fill(bootstrap, topics.input, backlogs)
    fresh = backlogs
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topics.input, p) for p in range(backlogs + 1)])
        poll = batch_poll(500, 2000)
        batches: list[dict[int, int]] = []
        while sum(sum(b.values()) for b in batches) < backlogs * BACKLOG + FRESH:
            batch = await asyncio.wait_for(poll(consumer), 30)
            counts: dict[int, int] = {}
            for record in batch:
                counts[record.partition] = counts.get(record.partition, 0) + 1
            batches.append(counts)
    finally:
        await consumer.stop()
    first_backlog = next(i for i, b in enumerate(batches) if any(b.get(p) for p in range(fresh)))
    first_fresh = next(i for i, b in enumerate(batches) if b.get(fresh))
    # before: 2,000 backlog records a batch, the fresh ones only in the third batch (with two
    # backlogs and the top-up in arrival order: the second backlog filled the rest)
    assert first_fresh <= first_backlog, batches
    assert all(sum(b.values()) <= 2000 for b in batches)
    for p in range(fresh):
        assert sum(b.get(p, 0) for b in batches) == BACKLOG
    assert sum(b.get(fresh, 0) for b in batches) == FRESH
