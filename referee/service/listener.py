"""The rebalance listener: the group says which partitions this instance owns, the partitions'
owner (``partitions.py``) takes, keeps and gives them back.

aiokafka's group protocol is eager: every rebalance revokes every partition, then assigns the
new share. A partition that comes back to the same instance, found where it was left, keeps
its cached games and its publisher; positions come from the store, never from Kafka's commits.
"""

from __future__ import annotations

from aiokafka import ConsumerRebalanceListener, TopicPartition

from referee.service.partitions import Partitions


class PositionListener(ConsumerRebalanceListener):  # type: ignore[misc]
    """Tells the partitions' owner what the group revoked and assigned."""

    def __init__(self, partitions: Partitions) -> None:
        self.partitions = partitions

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """Writes the batch in flight before the partitions can go to another instance."""
        await self.partitions.revoked(revoked)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        """Owns exactly the partitions assigned."""
        await self.partitions.assigned(assigned)
