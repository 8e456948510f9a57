"""What the processing step needs of a store (a port): the PostgreSQL store implements it,
and the unit tests' in-memory fake does too. The port's types are in ``rows.py``.

The step depends on these protocols only, so its delicate parts (fencing, eviction, the
cache, the quarantine) can be tested in milliseconds without a server, beside the tests on
the real database.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from referee.processing.rows import Fenced, Reserved, StepRows, StoredGame, StoredPrint, Written


class StepReads(Protocol):
    """The reads of one step before it judges, each standing alone: what they read is
    checked again by the fence of the write that follows."""

    async def load_games(self, game_ids: Sequence[str]) -> list[StoredGame]:
        """Returns the newest stored version of each of these games that has one."""

    async def load_prints(
        self, seqs: Sequence[tuple[str, int]], event_ids: Sequence[tuple[str, str]]
    ) -> list[StoredPrint]:
        """Returns what took these (game, seq) and (game, event id) places."""

    async def reserve_ids(self, journal: int, verdicts: int, dead_letters: int) -> Reserved:
        """Returns fresh journal ids and verdict and dead-letter positions, each ascending
        (never given out again)."""


class StepStore(Protocol):
    """The store a processing step reads positions from and appends its batches to."""

    async def load_positions(
        self, group_id: str, topic: str, partitions: Iterable[int]
    ) -> dict[int, int]:
        """Returns the last processed offset of each of these partitions that has one."""

    def reads(self) -> AbstractAsyncContextManager[StepReads]:
        """Opens a connection for reads only (games, prints, journal ids)."""

    async def write(self, group_id: str, fence: Sequence[Fenced], rows: StepRows) -> Written:
        """Appends a step's rows in one transaction, fenced: it first locks each fenced
        partition's position until the transaction ends and checks it is the one expected;
        if one is not, nothing is written and ``Written.moved`` says which."""

    def is_outage(self, exc: BaseException) -> bool:
        """Checks if a failure came from the store being unavailable (to retry), rather than
        from something in the records (to isolate)."""
