"""What goes into the processing step and what comes out of one of its transactions."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

from referee.contracts.rejection import Source
from referee.processing.outcome import Processed
from referee.processing.rows import DeadLetterRow, StepRows, VerdictRow

Partition = tuple[str, int]
"""An input partition: (topic, partition number)."""


class InputRecord(NamedTuple):
    """One raw input record and where it came from."""

    raw: bytes
    topic: str
    partition: int
    offset: int
    source: Source
    key: bytes | None = None
    """The record's key as received (Kafka); the dead letter keeps it."""
    timestamp_ms: int | None = None
    """The record's Kafka timestamp (for the event-to-verdict latency), if it has one."""


@dataclass(slots=True)
class StepResult:
    """What one step appended (for metrics and tests)."""

    processed: list[tuple[InputRecord, Processed]] = field(default_factory=list)
    skipped: int = 0
    """Records at or below the stored position: already processed before."""
    transactions: int = 0
    """Transactions committed (more than one when a failing record had to be isolated)."""
    started: float = field(default_factory=time.monotonic)
    """When the batch was received (monotonic seconds)."""

    def extend(self, other: StepResult) -> None:
        """Adds what another part of the same batch appended."""
        self.processed += other.processed
        self.skipped += other.skipped
        self.transactions += other.transactions


class PositionMoved(Exception):  # noqa: N818 - a fact, like the events
    """The store does not hold a partition as this consumer knew it: another writer committed
    it further, another owner took it (``lost``), or the store lost commits (it went back in
    time). The consumer must take the partition again, or give it up when lost."""

    def __init__(
        self, topic: str, partition: int, stored: int, expected: int, *, lost: bool = False
    ) -> None:
        detail = "another owner took it" if lost else f"this consumer expected {expected}"
        super().__init__(f"{topic}[{partition}] is at {stored} in the store, {detail}")
        self.topic = topic
        self.partition = partition
        self.stored = stored
        self.expected = expected
        self.lost = lost


class OutboxChunk(NamedTuple):
    """What one committed transaction appended to one input partition's outbox.

    ``after`` and ``through`` are input offsets: the transaction found the partition's stored
    position at ``after`` and left it at ``through``. A publisher that has handed on
    everything of the partition up to ``after`` can go on with this chunk; any other chunk
    means transactions it did not see committed in between (it reads them from the store).
    """

    topic: str
    partition: int
    after: int
    through: int
    verdicts: tuple[VerdictRow, ...]
    dead_letters: tuple[DeadLetterRow, ...]
    causes: Mapping[int, int]
    """The input offset of the record each row's journal row holds (by journal id): what a
    publisher matches against the output topics, a coordinate the store cannot forget."""


_NO_CAUSES: Mapping[int, int] = MappingProxyType({})


def chunks_of(expected: dict[Partition, int], rows: StepRows) -> list[OutboxChunk]:
    """Splits a committed transaction's outbox rows by input partition, one chunk for every
    partition it moved (with or without rows)."""
    verdicts: dict[Partition, list[VerdictRow]] = {}
    for v in rows.verdicts:
        verdicts.setdefault((v.source_topic, v.source_partition), []).append(v)
    dead: dict[Partition, list[DeadLetterRow]] = {}
    for d in rows.dead_letters:
        dead.setdefault((d.source_topic, d.source_partition), []).append(d)
    causes: Mapping[int, int] = (
        {j.id: j.source_offset for j in rows.journal} if verdicts or dead else _NO_CAUSES
    )
    return [
        OutboxChunk(
            p.topic,
            p.partition,
            expected[p.topic, p.partition],
            p.offset,
            tuple(verdicts.get((p.topic, p.partition), ())),
            tuple(dead.get((p.topic, p.partition), ())),
            causes,
        )
        for p in rows.positions
    ]
