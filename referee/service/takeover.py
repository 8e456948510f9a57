"""What an instance checks before it consumes: the topics' partitions, and (``legacy.py``) the
takeover from the global relay of releases up to 0.1.

**Partitions.** A game's events are keyed by its id, so they stay in one input partition
only while the partition count stays the same, and each input partition publishes to the
same partition number of the output topics. The referee records the input topic's count the
first time it starts on a database and judges only that many: partitions added later (keys
moved, a game's later events could overtake its earlier ones) wait unread, the instance not
ready, while the others drain, until ``referee partitions --accept`` records the new count.
An output topic with fewer partitions than are judged is refused. docs/runbook.md, "Adding
input partitions", is the procedure.

**Takeover.** Before the first instance of this release consumes, it retires the global
relay of releases up to 0.1, once per database (``legacy.py`` says how, and which release
removes it).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from referee.service.legacy import take_over_from_release_01
from referee.service.publisher import MakeProducer, Tails
from referee.service.tails import partition_counts
from referee.store.outbox_store import PostgresOutboxStore

log = logging.getLogger("referee.serve")


class TopicsRefused(RuntimeError):  # noqa: N818 - what the operator is told
    """The topics are not as the referee can judge them (the message says what to do)."""


@dataclass(slots=True)
class Preflight:
    """The checks and the takeover of one instance, run before its consumer joins."""

    group_id: str
    input_topic: str
    verdict_topic: str
    dlq_topic: str
    transactional_prefix: str
    kafka_options: dict[str, Any]
    store: PostgresOutboxStore
    make_producer: MakeProducer
    tails: Tails

    async def run(self) -> Judged:
        """Checks the topics and takes the publishing over; says which partitions to judge."""
        judged = await self.check_partitions()
        await self.take_over()
        return judged

    async def check_partitions(self) -> Judged:
        """Returns the partition count the referee judges the input topic under (recorded the
        first time), refusing output topics that cannot take its partitions."""
        topics = [self.input_topic, self.verdict_topic, self.dlq_topic]
        counts = await partition_counts(self.kafka_options, topics)
        count = counts[self.input_topic]
        if not count:
            raise TopicsRefused(f"the input topic {self.input_topic!r} does not exist")
        recorded = await self.store.input_partitions(self.group_id, self.input_topic)
        if recorded is not None and count < recorded:
            raise TopicsRefused(
                f"the input topic {self.input_topic!r} has {count} partitions, fewer than the "
                f"{recorded} the referee judged it under: was it deleted and made again? "
                "(docs/runbook.md)"
            )
        judged = count if recorded is None else recorded
        for topic in (self.verdict_topic, self.dlq_topic):
            if counts[topic] < judged:
                raise TopicsRefused(
                    f"topic {topic!r} has {counts[topic]} partitions and the input topic "
                    f"{self.input_topic!r} {judged}: each input partition publishes to the same "
                    "partition number, so it needs as many (docs/runbook.md)"
                )
        if recorded is None:
            await self.store.record_input_partitions(self.group_id, self.input_topic, count)
        return Judged(self.input_topic, judged, count)

    async def take_over(self) -> None:
        """Retires the global relay of releases up to 0.1, once per database (``legacy.py``)."""
        await take_over_from_release_01(
            self.store,
            self.make_producer,
            self.tails,
            self.kafka_options,
            input_topic=self.input_topic,
            outputs={"verdicts": self.verdict_topic, "dead_letters": self.dlq_topic},
            transactional_prefix=self.transactional_prefix,
        )


@dataclass(frozen=True, slots=True)
class Judged:
    """The input topic's partitions: those the referee judges, those the topic has."""

    topic: str
    partitions: int
    """The count recorded: partitions 0 to this one less are consumed."""
    in_topic: int

    def draining(self, seen: int | None = None) -> str | None:
        """Says why partitions are left alone, if the topic has more than are judged (or an
        assignment showed ``seen`` of them); None when it has not."""
        count = max(self.in_topic, seen or 0)
        if count <= self.partitions:
            return None
        return (
            f"the input topic {self.topic!r} has {count} partitions, the referee judges it "
            f"under {self.partitions}: keys moved to other partitions, so a game's later events "
            f"could be judged before its earlier ones. Partitions {self.partitions} and up wait "
            "unread while the others drain: follow docs/runbook.md, 'Adding input partitions' "
            "(`referee partitions --accept` once drained, then restart the instances)"
        )
