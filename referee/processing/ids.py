"""Journal ids and outbox positions, reserved from the store's sequences ahead of need.

Within an input partition both must ascend in commit order: the journal is read in id order
by the audit, and a partition's outbox is published in position order, its committed records
on the topic always a prefix of it. A pool keeps that true because it is emptied whenever
the partitions it numbers could have been numbered by another writer meanwhile (partitions
assigned or revoked, a write that finds a partition moved): the next block is then reserved
after everything the other writer reserved, a sequence only growing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from referee.processing.rows import Reserved

BLOCK = 1_000
"""Numbers of each kind reserved at a time, at least: a small live batch then reads nothing
from the store when its games are cached."""

BATCHES = 4
"""A reservation covers this many batches the size of the one asking, if that is more than
``BLOCK`` (a large batch then reserves once in four batches rather than each time)."""


class Reserves(Protocol):
    """The store's reservation (``StepReads.reserve_ids``)."""

    async def reserve_ids(self, journal: int, verdicts: int, dead_letters: int) -> Reserved:
        """Returns fresh numbers of each kind, ascending, never given out again."""


@dataclass(slots=True)
class IdPool:
    """Numbers in hand, each kind ascending."""

    journal_ids: list[int] = field(default_factory=list)
    verdict_positions: list[int] = field(default_factory=list)
    dead_letter_positions: list[int] = field(default_factory=list)
    reservations: int = 0
    """Round trips made (for tests and the breakdown)."""

    def clear(self) -> None:
        """Drops every number in hand: another writer may have numbered after them."""
        self.journal_ids.clear()
        self.verdict_positions.clear()
        self.dead_letter_positions.clear()

    def has(self, journal: int, verdicts: int = 0, dead_letters: int = 0) -> bool:
        """Checks if enough of each kind is in hand."""
        return (
            len(self.journal_ids) >= journal
            and len(self.verdict_positions) >= verdicts
            and len(self.dead_letter_positions) >= dead_letters
        )

    async def top_up(
        self, store: Reserves, journal: int, verdicts: int = 0, dead_letters: int = 0
    ) -> None:
        """Reserves a block of each kind that has fewer than asked for (one round trip)."""
        wanted = [
            _block(count, len(pool))
            for count, pool in (
                (journal, self.journal_ids),
                (verdicts, self.verdict_positions),
                (dead_letters, self.dead_letter_positions),
            )
        ]
        if not any(wanted):
            return
        got = await store.reserve_ids(*wanted)
        self.reservations += 1
        self.journal_ids += got.journal_ids
        self.verdict_positions += got.verdict_positions
        self.dead_letter_positions += got.dead_letter_positions

    def take_journal_ids(self, count: int) -> list[int]:
        """Takes ``count`` journal ids from those in hand (``has`` said they are)."""
        return _take(self.journal_ids, count)

    def take_positions(self, verdicts: int, dead_letters: int) -> tuple[list[int], list[int]]:
        """Takes outbox positions from those in hand (``has`` said they are)."""
        return _take(self.verdict_positions, verdicts), _take(
            self.dead_letter_positions, dead_letters
        )


def _block(count: int, in_hand: int) -> int:
    """How many to reserve of a kind of which ``count`` are needed and ``in_hand`` held."""
    if in_hand >= count:
        return 0
    return max(count - in_hand, BLOCK, BATCHES * count)


def _take(pool: list[int], count: int) -> list[int]:
    if len(pool) < count:
        raise RuntimeError(f"{count} numbers asked for, {len(pool)} in hand")
    taken = pool[:count]
    del pool[:count]
    return taken
