"""The batch poll: one partition's backlog never fills every batch while another partition's
records wait (referee/service/poll.py). The fake consumer hands records out as aiokafka's
fetcher does (buffered partitions in arrival order, each drained up to what is left of
``max_records``, only those asked for when partitions are named);
tests/integration/kafka/test_poll_fairness.py checks the same on the real broker."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from aiokafka import TopicPartition

from referee.service.poll import batch_poll

TOPIC = "events"


class Buffered:
    """A consumer whose fetched records wait in ``buffer``, partitions in arrival order."""

    def __init__(self, counts: dict[int, int]) -> None:
        self.buffer = {
            TopicPartition(TOPIC, p): deque((p, offset) for offset in range(n))
            for p, n in counts.items()
        }
        self.calls: list[tuple[tuple[TopicPartition, ...], int]] = []

    def assignment(self) -> set[TopicPartition]:
        return set(self.buffer)

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int
    ) -> dict[TopicPartition, list[Any]]:
        self.calls.append((partitions, max_records))
        drained: dict[TopicPartition, list[Any]] = {}
        left = max_records
        for tp, records in self.buffer.items():
            if partitions and tp not in partitions:
                continue
            took = [records.popleft() for _ in range(min(left, len(records)))]
            if took:
                drained[tp] = took
                left -= len(took)
            if not left:
                break
        return drained


def poll(consumer: Buffered, max_records: int) -> tuple[Any, ...]:
    return asyncio.run(batch_poll(50, max_records)(consumer))


def test_a_backlog_at_the_front_fills_half_a_batch_and_the_others_get_in() -> None:
    consumer = Buffered({0: 5000, 1: 3, 2: 7})
    batch = poll(consumer, 2000)
    by_partition = {p: sum(1 for q, _ in batch if q == p) for p in (0, 1, 2)}
    assert by_partition == {0: 1000, 1: 3, 2: 7}
    # each partition's records in offset order, a partition's records never split
    for p in (0, 1, 2):
        offsets = [o for q, o in batch if q == p]
        assert offsets == list(range(len(offsets)))


def test_the_backlog_drains_in_later_batches_and_a_batch_never_exceeds_its_size() -> None:
    consumer = Buffered({0: 5000, 1: 3000})
    seen: dict[int, list[int]] = {0: [], 1: []}
    while any(consumer.buffer.values()):
        batch = poll(consumer, 2000)
        assert 0 < len(batch) <= 2000
        for p, offset in batch:
            seen[p].append(offset)
    assert seen == {0: list(range(5000)), 1: list(range(3000))}


def test_a_quiet_poll_is_one_call() -> None:
    consumer = Buffered({0: 40, 1: 12})
    assert len(poll(consumer, 2000)) == 52
    assert len(consumer.calls) == 1


def test_a_batch_of_one_record() -> None:
    consumer = Buffered({0: 3, 1: 3})
    assert len(poll(consumer, 1)) == 1


def test_two_backlogs_leave_room_for_the_fresh_partitions_behind_them() -> None:
    # a dead instance's partitions dealt out: two backlogs ahead of two fresh partitions
    consumer = Buffered({0: 5000, 1: 5000, 2: 7, 3: 3})
    batch = poll(consumer, 2000)
    by_partition = {p: sum(1 for q, _ in batch if q == p) for p in (0, 1, 2, 3)}
    assert by_partition[2] == 7, by_partition
    assert by_partition[3] == 3, by_partition
    assert by_partition[0] == 1000
    assert 0 < by_partition[1] <= 1000 - 10
    assert len(batch) <= 2000


def test_what_a_quiet_partition_leaves_goes_to_the_partitions_after_it() -> None:
    consumer = Buffered({0: 5000, 1: 2, 2: 5000})
    batch = poll(consumer, 2000)
    assert len(batch) == 2000
    assert sum(1 for q, _ in batch if q == 2) == 998
