"""What the processing step needs of a store (a port): the PostgreSQL store implements it,
and the unit tests' in-memory fake does too.

The step depends on these protocols only, so its delicate parts (fencing, eviction, the
cache, the quarantine) can be tested in milliseconds without a server, beside the tests on
the real database.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from referee.store.rows import StepRows, StoredGame, StoredPrint


class StepTransaction(Protocol):
    """The reads and appends of one step, inside one transaction."""

    async def lock_position(self, group_id: str, topic: str, partition: int) -> int:
        """Takes the partition's lock until the transaction ends; returns its stored offset
        (-1 if none)."""

    async def load_games(self, game_ids: Sequence[str]) -> list[StoredGame]:
        """Returns the newest stored version of each of these games that has one."""

    async def load_prints(
        self, seqs: Sequence[tuple[str, int]], event_ids: Sequence[tuple[str, str]]
    ) -> list[StoredPrint]:
        """Returns what took these (game, seq) and (game, event id) places."""

    async def reserve_journal_ids(self, count: int) -> list[int]:
        """Returns ``count`` fresh journal ids, ascending."""

    async def append(self, rows: StepRows) -> float | None:
        """Appends the step's rows; they are kept only if the transaction commits.

        Returns when (``time.perf_counter``) it took the writers' outbox lock, which the
        transaction holds until it ends; ``None`` when it wrote no outbox rows.
        """


class StepStore(Protocol):
    """The store a processing step reads positions from and appends its batches to."""

    async def load_positions(
        self, group_id: str, topic: str, partitions: Iterable[int]
    ) -> dict[int, int]:
        """Returns the last processed offset of each of these partitions that has one."""

    def transaction(self) -> AbstractAsyncContextManager[StepTransaction]:
        """Opens a transaction: committed when the block ends, rolled back if it raises."""

    def reads(self) -> AbstractAsyncContextManager[StepTransaction]:
        """Opens a connection for reads only (games, prints, journal ids), each standing
        alone: what they read is checked again by the fence of the write that follows."""

    def is_outage(self, exc: BaseException) -> bool:
        """Checks if a failure came from the store being unavailable (to retry), rather than
        from something in the records (to isolate)."""
