"""The rebalance listener: positions come from the store, never from Kafka's commits.

aiokafka's group protocol is eager: every rebalance revokes every partition, then assigns the
new share. A partition that comes back to the same instance, found where it was left, keeps
its cached games and its publisher (its producer, its place on the output topics): a
rebalance that moves other partitions costs it one read of the stored positions.
"""

from __future__ import annotations

import logging

from aiokafka import ConsumerRebalanceListener, TopicPartition

from referee.service.retry import retrying
from referee.service.runtime import Service

log = logging.getLogger("referee.serve")


class PositionListener(ConsumerRebalanceListener):  # type: ignore[misc]
    """Seeks every assigned partition to its stored position + 1."""

    def __init__(self, service: Service) -> None:
        self.service = service

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """Writes the batch in flight before the partitions can go to another instance."""
        service = self.service
        await service.step.pause()
        service.assigned -= set(revoked)
        service.metrics.assigned.set(len(service.assigned))
        if revoked:
            log.info(
                "partitions revoked", extra={"partitions": sorted(tp.partition for tp in revoked)}
            )

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        """Seeks each partition to where the store says processing ended, and publishes
        exactly the partitions owned."""
        service = self.service
        consumer = service.consumer = service.subscriber_consumer()
        topic = service.settings.input_topic
        judged = service.judged
        partitions = sorted(tp.partition for tp in assigned if tp.topic == topic)
        if judged is not None and partitions and partitions[-1] >= judged.partitions:
            # partitions added to the topic: theirs wait unread while the others drain
            waiting = [tp for tp in assigned if tp.partition >= judged.partitions]
            consumer.pause(*waiting)
            service.draining = judged.draining(partitions[-1] + 1)
            log.error("input partitions left unread: %s", service.draining)
            partitions = [p for p in partitions if p < judged.partitions]
        stored = await retrying(
            "reading the stored positions",
            lambda: service.step.take_partitions(topic, partitions),
        )
        for partition in partitions:
            # Nothing stored: offset 0. Below a partition's log start (records deleted by
            # retention) the consumer's auto_offset_reset="earliest" moves it to the oldest
            # record (``seek_to_beginning`` would wait for the fetch in flight).
            consumer.seek(TopicPartition(topic, partition), stored.get(partition, -1) + 1)
        previous = set(service.publishers.by_partition)
        await service.publishers.own(partitions)
        service.assigned = {TopicPartition(topic, p) for p in partitions}
        service.joined = True
        service.metrics.assigned.set(len(service.assigned))
        if set(partitions) != previous:
            service.metrics.rebalances.inc()
        for tp in previous - set(partitions):
            service.metrics.forget_partition(topic, tp)
        log.info("partitions assigned", extra={"partitions": partitions})
