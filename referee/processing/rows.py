"""The rows the engine appends and reads, typed: one record type per table.

They cross the engine's port (``ports.py``): the store implements the port and imports these
types, the engine imports no store. Fields are in the tables' column order, and the column
lists COPY writes are taken from the fields, so a row cannot drift from its table (a test
holds each to ``store/schema.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class JournalRow(NamedTuple):
    """One input record, as received, with its outcome (table ``journal``)."""

    id: int
    source_topic: str
    """The Kafka topic, or ``file:<path>`` for a log."""
    source_partition: int
    source_offset: int
    """The Kafka offset, or the line number in a log."""
    game_id: str | None
    seq: int | None
    event_id: str | None
    event_type: str | None
    outcome: str
    reason: str | None
    took_place: bool
    fingerprint: bytes
    raw: bytes
    max_event_bytes: int | None
    """The size limit the record was judged under."""
    referee_version: str | None
    """The referee release that wrote the row (None: before migration 0011)."""


class GameVersionRow(NamedTuple):
    """A game's folded state after a batch (table ``game_versions``)."""

    game_id: str
    version: int
    """The last seq folded into the state."""
    state: str
    """The state codec's JSON."""
    journal_id: int


class VerdictRow(NamedTuple):
    """A verdict in its input partition's outbox of the verdict topic (table ``verdicts``)."""

    position: int
    """Its place in the outbox: ascending in commit order within its input partition."""
    verdict_id: str
    game_id: str
    type: str
    cause_seq: int
    journal_id: int
    body: str
    """The canonical JSON, byte for byte."""
    source_topic: str
    source_partition: int
    """The input partition whose batch wrote it: the outbox it is published from."""


class DeadLetterRow(NamedTuple):
    """An ``EventRejected`` in its input partition's outbox of the dead-letter topic (table
    ``dead_letters``)."""

    position: int
    """Its place in the outbox: ascending in commit order within its input partition."""
    journal_id: int
    key: bytes | None
    """The input record's key, as received."""
    reason: str
    body: str
    source_topic: str
    source_partition: int
    """The input partition whose batch wrote it: the outbox it is published from."""


class PositionRow(NamedTuple):
    """How far a consumer group processed a partition (table ``consumer_positions``)."""

    group_id: str
    topic: str
    partition: int
    offset: int
    journal_id: int


class GameRevisionRow(NamedTuple):
    """The rules revision a game started under (table ``game_revisions``, migration 0009)."""

    game_id: str
    rules_revision: int
    referee_version: str
    journal_id: int


JOURNAL_COLUMNS = JournalRow._fields
VERSION_COLUMNS = GameVersionRow._fields
VERDICT_COLUMNS = VerdictRow._fields
DEAD_LETTER_COLUMNS = DeadLetterRow._fields
POSITION_COLUMNS = PositionRow._fields
GAME_REVISION_COLUMNS = GameRevisionRow._fields


@dataclass(slots=True)
class StepRows:
    """Everything one processing step appends, in one transaction."""

    journal: list[JournalRow] = field(default_factory=list)
    versions: list[GameVersionRow] = field(default_factory=list)
    verdicts: list[VerdictRow] = field(default_factory=list)
    dead_letters: list[DeadLetterRow] = field(default_factory=list)
    positions: list[PositionRow] = field(default_factory=list)
    revisions: list[GameRevisionRow] = field(default_factory=list)


class Fenced(NamedTuple):
    """A partition a write fences: the stored position it must find (-1 for none), and the
    writer's term of ownership, which must be the partition's newest (None: not checked)."""

    topic: str
    partition: int
    expected: int
    epoch: int | None = None


class Moved(NamedTuple):
    """A fenced partition the write did not find as expected: its stored position was not the
    one expected, or its newest term of ownership not the writer's. Nothing of the write was
    kept."""

    topic: str
    partition: int
    stored: int
    epoch: int = 0
    """The partition's newest term (0: none; the writer's own when only the position moved)."""
    released: bool = False
    """The newest term was given back by its owner."""


class Taken(NamedTuple):
    """An input partition taken by a new term of ownership (``referee_take``)."""

    partition: int
    epoch: int
    stored: int
    """The last processed offset (-1: none), read once the term was appended."""
    previous_epoch: int
    """The term before (0: none)."""
    previous_released: bool
    """The term before was given back cleanly by its owner."""
    previous_owner: str | None
    previous_transactional_id: str | None


class Term(NamedTuple):
    """A partition's newest term of ownership."""

    partition: int
    epoch: int
    released: bool
    stored: int
    """The last processed offset (-1: none)."""


class Written(NamedTuple):
    """How a write went."""

    moved: Moved | None
    """The first fenced partition found moved (nothing was written), or ``None``."""
    appended: float
    """When the rows were appended (``time.perf_counter``; the commit follows)."""


class Reserved(NamedTuple):
    """Fresh numbers from the store's sequences, each list ascending."""

    journal_ids: list[int]
    verdict_positions: list[int]
    dead_letter_positions: list[int]


class StoredGame(NamedTuple):
    """A game's newest projection version."""

    game_id: str
    last_seq: int
    state: str
    rules_revision: int = 1
    """The rules revision the game was pinned to (1: started before migration 0009)."""


class StoredPrint(NamedTuple):
    """What took a place in a game: its seq, event id and fingerprint."""

    game_id: str
    seq: int
    event_id: str | None
    fingerprint: bytes
