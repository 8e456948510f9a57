"""The rebalance listener: positions come from the store, never from Kafka's commits."""

from __future__ import annotations

import logging

from aiokafka import ConsumerRebalanceListener, TopicPartition

from referee.service.retry import retrying
from referee.service.runtime import Service

log = logging.getLogger("referee.serve")


class PositionListener(ConsumerRebalanceListener):  # type: ignore[misc]
    """Seeks every newly assigned partition to its stored position + 1."""

    def __init__(self, service: Service) -> None:
        self.service = service

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """Forgets the partitions and the cached games (they may move elsewhere).

        The step finishes the batch in flight first: what it judged is committed before the
        partition can be given to another instance.
        """
        service = self.service
        service.assigned -= set(revoked)
        await service.step.forget_partitions({(tp.topic, tp.partition) for tp in revoked})
        for tp in revoked:
            service.metrics.forget_partition(tp.topic, tp.partition)
        service.metrics.assigned.set(len(service.assigned))
        if revoked:
            service.metrics.rebalances.inc()
            log.info(
                "partitions revoked", extra={"partitions": sorted(tp.partition for tp in revoked)}
            )

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        """Seeks each partition to where the store says processing ended."""
        service = self.service
        consumer = service.consumer = service.subscriber_consumer()
        by_topic: dict[str, list[int]] = {}
        for tp in assigned:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        for topic, partitions in by_topic.items():
            stored = await retrying(
                "reading the stored positions",
                lambda t=topic, p=partitions: service.step.load_positions(t, p),  # type: ignore[misc]
            )
            for partition in partitions:
                # Nothing stored: offset 0. Below a partition's log start (records deleted
                # by retention) the consumer's auto_offset_reset="earliest" moves it to the
                # oldest record. ``seek_to_beginning`` would do the same, but it waits for
                # the fetch in flight (up to fetch_max_wait_ms) for each partition in turn:
                # 1.5 s of a fresh instance's start-up with four partitions.
                consumer.seek(TopicPartition(topic, partition), stored.get(partition, -1) + 1)
        service.assigned |= set(assigned)
        service.joined = True
        service.metrics.assigned.set(len(service.assigned))
        if assigned:
            service.metrics.rebalances.inc()
        log.info(
            "partitions assigned",
            extra={"partitions": sorted(tp.partition for tp in assigned)},
        )
