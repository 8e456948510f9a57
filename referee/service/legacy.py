"""What this release does for instances of earlier releases, in one place, until 0.6.0.

**Release 0.1's global relay** published every partition's outbox through one relay leader
with the transactional id ``<prefix>``. Before the first instance of this release consumes,
it retires that relay for good (a checkpoint at the largest position: a term it starts
publishes nothing), fences its producer (a transaction it has open is aborted), and records
how far it got on the output topics: every outbox row up to that position is published, for
every partition. The relay published by key, to any partition of the output topics, so every
partition of each is read (an output topic may have more than the input). Instances starting
together do it once, under a lock; it is recorded, so it happens once per database
(``store/outbox_store.Takeover``).

**Release 0.4's partition publishers** published each input partition with a producer of its
own, ``<prefix>.<partition>``, and recorded no terms of ownership. While instances of 0.4 and
this release share a group (a rolling upgrade), a partition may come from one of them with no
term naming it: every take fences that id too.

Both go in release 0.6.0: an upgrade to 0.6 is then from 0.5 only (docs/releases.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Protocol

from aiokafka import TopicPartition

from referee.service.tails import Tail, partition_counts
from referee.store.outbox_store import PostgresOutboxStore

log = logging.getLogger("referee.serve")

REMOVED_IN = "0.6.0"
"""The release that drops what this module does."""


class _Producer(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class _Tails(Protocol):
    async def read(self, partitions: list[TopicPartition]) -> dict[TopicPartition, Tail]: ...


class _Prefixed(Protocol):
    def legacy_transactional_id(self, partition: int) -> str: ...


def legacy_transactional_ids(publishing: _Prefixed, partitions: Iterable[int]) -> list[str]:
    """The transactional ids release 0.4 published these partitions with (fenced at a take)."""
    return [publishing.legacy_transactional_id(p) for p in partitions]


async def take_over_from_release_01(
    store: PostgresOutboxStore,
    make_producer: Any,
    tails: _Tails,
    kafka_options: dict[str, Any],
    *,
    input_topic: str,
    outputs: dict[str, str],
    transactional_prefix: str,
) -> None:
    """Retires the global relay of releases up to 0.1, once per database."""
    async with store.takeover() as takeover:
        if await takeover.done(input_topic):
            return
        reached = await takeover.retire_relay()
        producer: _Producer = make_producer(transactional_prefix)
        await producer.start()  # fences the global relay: its open transaction aborts
        await producer.stop()
        published = dict(reached)
        counts = await partition_counts(kafka_options, list(outputs.values()))
        for outbox, topic in outputs.items():
            last = await tails.read([TopicPartition(topic, p) for p in range(counts[topic])])
            published[outbox] = max([published[outbox], *(t.position for t in last.values())])
        await takeover.record(input_topic, published)
        log.info("took the publishing over from the global relay", extra=published)
