"""The subscriber's poll for the next batch: FastStream's, without its sleep after an empty one.

FastStream's batch subscriber calls ``getmany``, which returns as soon as a record is buffered
or empty after ``timeout_ms``, and then, when it was empty, sleeps ``timeout_ms`` more before
it polls again: a record that arrives during that sleep waits up to ``timeout_ms`` (half the
time, at a quiet table). FastStream has no setting for it, so this module replaces the one
method on the one subscriber (``tests/unit/service/test_poll.py`` holds FastStream's to what
this replaces, so an upgrade that changes it is seen).

**No partition's backlog holds the others up.** aiokafka hands buffered records out partition
by partition, in the order their fetches arrived, until ``max_records``: a partition with a
backlog (one just taken over from a dead instance, thousands of records) at the front fills
batch after batch while the records of every other partition wait behind it, fresh as they
are. The poll takes at most half a batch first; when that half comes back full, it shares
the rest out among the partitions that gave nothing yet, each asked in turn for an equal
share of what is left (two backlogs, as when a dead instance's partitions are dealt out,
would otherwise fill the batch between them). A backlog then drains a share of a batch at a
time, and every other partition gets into each batch (``tests/unit/service/test_poll.py``;
on the real broker, ``tests/integration/kafka/test_poll_fairness.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from itertools import chain
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import ConsumerRecord

Batch = tuple[ConsumerRecord[bytes, bytes], ...]
Poll = Callable[[AIOKafkaConsumer], Coroutine[Any, Any, Batch]]


@dataclass(slots=True)
class Polls:
    """Numbers the batches the poll returns: the consume loop polls, then hands the batch to
    the handler, one at a time, so the number of the last batch returned is the handler's.
    A partition paused when ``count`` was n has no record in a batch numbered above n until
    it is resumed (after a seek): what a batch up to n holds of it is stale."""

    count: int = 0


def batch_poll(timeout_ms: int, max_records: int, polls: Polls | None = None) -> Poll:
    """Returns a poll that gives the empty batch back at once: the consume loop polls again,
    checking in between whether it is stopping; the wait for idle records is ``getmany``'s.
    A batch holds at most ``max_records``, of which one partition's backlog fills half at
    most, and the partitions behind it share the rest. Each batch with records is numbered
    in ``polls``."""
    first_share = max(1, max_records // 2)
    numbered = polls if polls is not None else Polls()

    async def get_msg(consumer: AIOKafkaConsumer) -> Batch:
        got = await consumer.getmany(timeout_ms=timeout_ms, max_records=first_share)
        taken = sum(len(records) for records in got.values())
        if taken == first_share and taken < max_records:
            got = {**got, **await _shared_out(consumer, got.keys(), max_records - taken)}
        batch = tuple(chain.from_iterable(got.values()))
        if batch:
            numbered.count += 1
        return batch

    return get_msg


async def _shared_out(
    consumer: AIOKafkaConsumer, served: Iterable[TopicPartition], room: int
) -> dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]:
    """The rest of a batch, ``room`` records, shared out among the partitions not yet served:
    each asked in turn for an equal share of what is left, so that what a quiet partition
    leaves goes to those after it and a second backlog takes its share, never the room of
    every partition behind it (a partition asked with ``timeout_ms=0`` gives what is
    buffered, at once)."""
    others = sorted(consumer.assignment() - set(served))
    got: dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]] = {}
    for asked, tp in enumerate(others):
        share = max(1, room // (len(others) - asked))
        records = (await consumer.getmany(tp, timeout_ms=0, max_records=share)).get(tp)
        if records:
            got[tp] = records
            room -= len(records)
            if room <= 0:
                break
    return got
