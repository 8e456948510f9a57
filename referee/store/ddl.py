"""DDL beside the live service: each lock waited for a bounded time, the transaction tried again.

PostgreSQL grants table locks in the order they were asked for: while a statement waits for
an ``ACCESS EXCLUSIVE`` lock (``DETACH PARTITION``, ``DROP TABLE``, most of ``ALTER TABLE``),
every later request on the table waits behind it, the service's inserts and reads included,
and it waits for every transaction that already holds the table, however long (an analyst's
repeatable-read transaction, ``referee audit``). ``lock_timeout`` bounds that wait, so it bounds
how long the inserts queue behind it; the statement then fails (SQLSTATE 55P03) and its whole
transaction is tried again after a pause, until it finds a moment with the table free.
docs/store.md, "DDL beside the service", has the statements the referee runs this way and the
locks each takes.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import asyncpg

log = logging.getLogger("referee.store.ddl")

T = TypeVar("T")


class LocksNotTaken(Exception):  # noqa: N818 - what happened
    """A ``LOCK TABLE`` of several tables did not get them all within its bounded wait."""


BUSY = (
    asyncpg.LockNotAvailableError,  # 55P03: lock_timeout ran out
    asyncpg.DeadlockDetectedError,  # 40P01: chosen as the victim (it holds what it took so far)
    LocksNotTaken,
)
"""What a DDL transaction fails with when it did not get its locks in time: tried again."""


@dataclass(frozen=True, slots=True)
class LockPatience:
    """How long a DDL transaction waits for each lock, and how often it is tried again."""

    wait: timedelta = timedelta(milliseconds=200)
    """``lock_timeout``: the longest an insert queues behind one of its lock requests (well
    under a second, the delay a verdict may take; docs/store.md says why this value)."""
    tries: int = 10
    pause: float = 0.5
    """Seconds before the second try; doubled before each next, up to ``longest_pause``."""
    longest_pause: float = 8.0

    def pause_before(self, attempt: int) -> float:
        """Seconds to wait before try ``attempt`` (2 or more): doubling, jittered by a
        quarter either way so that two waiting sessions do not try in step."""
        base = min(self.pause * 2.0 ** (attempt - 2), self.longest_pause)
        return base * random.uniform(0.75, 1.25)

    @property
    def milliseconds(self) -> int:
        """``wait`` as whole milliseconds (PostgreSQL's unit for it), at least 1."""
        return max(1, round(self.wait.total_seconds() * 1000))


DDL_PATIENCE = LockPatience()
"""What the referee's DDL on the tables the service writes runs with."""


class LocksBusy(RuntimeError):  # noqa: N818 - what the caller reports
    """Every try of a DDL transaction found a lock it needed held for longer than its wait."""


async def with_lock_timeout(
    driver: Any,
    work: Callable[[Any], Awaitable[T]],
    patience: LockPatience = DDL_PATIENCE,
    *,
    what: str,
    on_busy: Callable[[BaseException], None] | None = None,
) -> T:
    """Runs ``work(driver)`` in a transaction whose every lock wait is bounded by
    ``patience.wait`` (``SET LOCAL lock_timeout``); when a wait runs out, rolls it back and
    tries again after a pause, ``patience.tries`` times in all. Raises :class:`LocksBusy`
    after the last; any other failure at once."""
    last: BaseException | None = None
    for attempt in range(1, patience.tries + 1):
        if attempt > 1:
            await asyncio.sleep(patience.pause_before(attempt))
        try:
            async with driver.transaction():
                await driver.execute(f"SET LOCAL lock_timeout = {patience.milliseconds}")
                return await work(driver)
        except BUSY as busy:
            if on_busy is not None:
                on_busy(busy)
            log.info(
                "%s: a lock was not free within %d ms (try %d of %d): %s",
                what,
                patience.milliseconds,
                attempt,
                patience.tries,
                str(busy).splitlines()[0],
            )
            last = busy
    raise LocksBusy(
        f"{what}: a lock stayed held through {patience.tries} tries of {patience.milliseconds} "
        "ms each (who holds it: pg_locks and pg_stat_activity, docs/runbook.md)"
    ) from last


async def bounded_lock(driver: Any, statement: str, patience: LockPatience = DDL_PATIENCE) -> None:
    """Runs a ``LOCK TABLE`` statement that takes several locks, its waits bounded together by
    ``patience.wait`` (``statement_timeout``, for this statement only: ``lock_timeout`` bounds
    each wait alone, and the first lock taken is held through the waits for the others)."""
    await driver.execute(f"SET LOCAL statement_timeout = {patience.milliseconds}")
    try:
        await driver.execute(statement)
    except asyncpg.QueryCanceledError as late:  # 57014: the statement_timeout just set
        raise LocksNotTaken(f"not every lock within {patience.milliseconds} ms") from late
    await driver.execute("SET LOCAL statement_timeout = DEFAULT")
