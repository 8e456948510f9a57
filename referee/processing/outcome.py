"""What became of each input record, and the counts of a run."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum

import msgspec

from referee.contracts.rejection import EventRejected
from referee.contracts.verdicts import OutputVerdict
from referee.contracts.wire import InputEvent
from referee.processing.ledger import Fingerprint, event_print


class Outcome(StrEnum):
    """What became of one input record."""

    APPLIED = "applied"
    """Judged; no foul."""
    FOULED = "fouled"
    """Judged; at least one foul was recorded."""
    REJECTED = "rejected"
    """Could not be judged; published as ``EventRejected``."""
    DUPLICATE = "duplicate"
    """Already processed with the same content; ignored."""


class Processed(msgspec.Struct, frozen=True, gc=False):
    """The outcome of one record, with everything the store and the publishers need."""

    outcome: Outcome
    game_id: str | None
    seq: int | None
    event_id: str | None
    event_type: str | None
    content: InputEvent | Fingerprint
    """The valid event, or the fingerprint of a record that failed at the edge."""
    took_place: bool
    """Whether the record took the next place in its game's sequence."""
    verdicts: tuple[OutputVerdict, ...] = ()
    rejection: EventRejected | None = None

    @property
    def fingerprint(self) -> Fingerprint:
        """Returns the record's content fingerprint (the journal's)."""
        content = self.content
        return content if isinstance(content, Fingerprint) else event_print(content)


_DUPLICATE = Outcome.DUPLICATE


@dataclass(slots=True)
class Tally:
    """Counts for the summary and the metrics."""

    events: Counter[str] = field(default_factory=Counter)
    verdicts: Counter[str] = field(default_factory=Counter)
    rejections: Counter[str] = field(default_factory=Counter)
    duplicates: int = 0
    records: int = 0

    def copy(self) -> Tally:
        """Returns a copy to go back to (a batch that fails is not counted)."""
        return Tally(
            Counter(self.events),
            Counter(self.verdicts),
            Counter(self.rejections),
            self.duplicates,
            self.records,
        )

    def merge(self, other: Tally) -> None:
        """Adds another tally (of another shard) to this one."""
        self.events.update(other.events)
        self.verdicts.update(other.verdicts)
        self.rejections.update(other.rejections)
        self.duplicates += other.duplicates
        self.records += other.records

    def count(self, processed: Processed) -> None:
        """Adds one processed record (only a judged one can have verdicts)."""
        self.records += 1
        if processed.outcome is _DUPLICATE:
            self.duplicates += 1
        elif processed.rejection is not None:
            self.rejections[processed.rejection.reason.value] += 1
        elif (kind := processed.event_type) is not None:
            events = self.events
            events[kind] = events.get(kind, 0) + 1  # cheaper than Counter's ``+= 1``
            for v in processed.verdicts:
                self.verdicts[v.__struct_config__.tag] += 1  # type: ignore[index]
