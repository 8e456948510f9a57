"""Time partitions: made ahead of the rows that need them, off the write path; listed for the
archive and metrics.

Migration 0010 partitions ``journal``, ``game_versions``, ``verdicts``, ``dead_letters`` and
``consumer_positions`` by range of ``recorded_at`` (a row's transaction start). Partitions are
made by ``referee_create_partitions(step, ahead)``, which any role may call (it runs with its
owner's rights) and which attaches each new partition (migration 0012: no lock a reader or an
insert conflicts with). In ``referee serve`` a :class:`PartitionMaker` makes them in the
background, several intervals ahead of the clock; ``referee migrate``, ``maintain``,
``archive`` and ``replay --database`` make them before their work. The write path never
does: a row with no partition to go to fails as an outage (the batch is retried, never
quarantined) and asks the maker to try at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from referee.store.ddl import DDL_PATIENCE, LockPatience, with_lock_timeout

log = logging.getLogger("referee.store.partitions")

PARTITIONED = ("journal", "game_versions", "verdicts", "dead_letters", "consumer_positions")
"""The tables partitioned by time, in the order their rows reference each other."""

_UNITS = {
    "m": 60,
    "min": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
}
_INTERVAL = re.compile(r"(\d{1,6}) ?([a-z]+)")
SMALLEST = timedelta(minutes=1)
LARGEST = timedelta(days=31)
RETENTION_CAP = timedelta(days=3650)


def parse_interval(text: str, *, largest: timedelta = LARGEST) -> timedelta:
    """Reads an interval written as ``<n><unit>`` or ``<n> <unit>`` (units: m, min, minute(s),
    h, hour(s), d, day(s)), between a minute and ``largest`` (31 days unless told); raises
    ValueError naming the rule."""
    match = _INTERVAL.fullmatch(text.strip().lower())
    if match is None or match.group(2) not in _UNITS:
        raise ValueError(
            f"{text!r} is not an interval: write a whole number and a unit, as '1 day', "
            "'6h' or '15 minutes' (units: minutes, hours, days)"
        )
    interval = timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])
    if not SMALLEST <= interval <= largest:
        raise ValueError(f"{text!r} is not between a minute and {largest.days} days")
    return interval


@dataclass(frozen=True, slots=True)
class PartitionPolicy:
    """How long a time partition is, and how many are made ahead of the clock."""

    interval: timedelta = timedelta(days=1)
    ahead: int = 3

    @property
    def horizon(self) -> timedelta:
        """How far past now the partitions are made."""
        return self.interval * self.ahead


DEFAULT_POLICY = PartitionPolicy()

_CREATE = "SELECT referee_create_partitions($1::interval, $2::interval)"


async def create_partitions(
    driver: Any,
    policy: PartitionPolicy = DEFAULT_POLICY,
    patience: LockPatience = DDL_PATIENCE,
    *,
    on_busy: Callable[[BaseException], None] | None = None,
) -> datetime:
    """Makes the partitions missing up to now + the policy's horizon (on an asyncpg
    connection), each lock waited for a bounded time and the whole tried again when one was
    not free (``store/ddl.py``); returns how far every partitioned table is covered."""

    async def make(conn: Any) -> datetime:
        covered: datetime = await conn.fetchval(_CREATE, policy.interval, policy.horizon)
        return covered

    return await with_lock_timeout(
        driver, make, patience, what="making the time partitions", on_busy=on_busy
    )


LONGEST_SLEEP = 60.0
"""Seconds the maker sleeps at most between two looks (a clock that jumped, an interval
changed by another instance: each is seen within a minute)."""
SHORTEST_SLEEP = 1.0
FAILED_PAUSE = 5.0
"""Seconds before the maker tries again after a failed round; doubled, up to LONGEST_SLEEP."""

MADE, LOCK_TIMEOUT, FAILED = "made", "lock_timeout", "failed"
"""What the maker reports (the label of its metric): a round that made the missing
partitions (or found none missing), a try whose lock was not free in time (tried again), a
round that failed (its locks never free, or any other failure)."""


class PartitionMaker:
    """Makes the time partitions ahead of the clock, off the write path.

    A round makes every partition missing up to now + the policy's horizon (``ahead``
    intervals). :meth:`run` starts a round as soon as the partitions reach less than the
    horizon past the clock, so each partition is made about ``ahead`` intervals before its
    first row, and a round that fails (a lock not free, the database away) is tried again
    with ``ahead - 1`` intervals or more still to go. A writer whose row found no partition
    calls :meth:`wake`: the next round starts at once.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        policy: PartitionPolicy = DEFAULT_POLICY,
        *,
        patience: LockPatience = DDL_PATIENCE,
        observe: Callable[[str], None] | None = None,
    ) -> None:
        self.engine = engine
        self.policy = policy
        self.patience = patience
        self.observe = observe or _ignore
        """Called with MADE, LOCK_TIMEOUT or FAILED after each try (the service's metric)."""
        self.covered_until: datetime | None = None
        """How far every partitioned table had partitions at the last round (None: no round
        succeeded yet)."""
        self._woken = asyncio.Event()

    def wake(self) -> None:
        """Asks for a round now (a row found no partition)."""
        self._woken.set()

    @property
    def woken(self) -> bool:
        """Whether a round was asked for since the last began."""
        return self._woken.is_set()

    async def make(self) -> datetime:
        """One round: makes the partitions missing up to now + the horizon; returns how far
        they reach. Raises what the last try raised (``LocksBusy``: a lock never free)."""
        try:
            async with self.engine.connect() as conn:
                raw = await conn.get_raw_connection()
                covered = await create_partitions(
                    raw.driver_connection, self.policy, self.patience, on_busy=self._busy
                )
        except Exception:
            self.observe(FAILED)
            raise
        self.observe(MADE)
        self.covered_until = covered
        return covered

    def _busy(self, _: BaseException) -> None:
        self.observe(LOCK_TIMEOUT)

    async def run(self) -> None:
        """Keeps the partitions ahead until cancelled; a failed round is logged and tried
        again after a pause (FAILED_PAUSE, doubled up to LONGEST_SLEEP), never raised."""
        failures = 0
        while True:
            self._woken.clear()
            try:
                covered = await self.make()
            except Exception as exc:  # noqa: BLE001 - the maker outlives any one failure
                failures += 1
                pause = min(FAILED_PAUSE * 2.0 ** (failures - 1), LONGEST_SLEEP)
                log.warning(
                    "could not make the time partitions ahead (they reach %s; try %d, the "
                    "next in %.0f s): %s: %s",
                    "unknown" if self.covered_until is None else self.covered_until.isoformat(),
                    failures,
                    pause,
                    exc.__class__.__name__,
                    str(exc).splitlines()[0] if str(exc) else "",
                )
            else:
                if failures:
                    log.info("time partitions made up to %s", covered.isoformat())
                failures = 0
                pause = self.due_in(covered)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(pause):
                    await self._woken.wait()

    def due_in(self, covered: datetime) -> float:
        """Seconds until the partitions reach less than the horizon past this machine's
        clock (between SHORTEST_SLEEP and LONGEST_SLEEP)."""
        due = covered.timestamp() - self.policy.horizon.total_seconds() - time.time()
        return min(max(due, SHORTEST_SLEEP), LONGEST_SLEEP)

    @contextlib.asynccontextmanager
    async def kept(self) -> AsyncIterator[None]:
        """Makes the partitions now (raising if it cannot), then keeps them ahead in the
        background while the block runs (``referee replay --database``)."""
        await self.make()
        task = asyncio.create_task(self.run())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _ignore(_: str) -> None:
    return None


@dataclass(frozen=True, slots=True)
class TimePartition:
    """One partition of a partitioned table, and the ``recorded_at`` range it holds."""

    table: str
    name: str
    lower: datetime | None
    """None: from the beginning (the legacy partition of rows stored before migration 0010)."""
    upper: datetime


_LIST = (
    "SELECT p.relname::text, c.relname::text, b.lower_bound, b.upper_bound "
    "FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent "
    "JOIN pg_class c ON c.oid = i.inhrelid, "
    "LATERAL referee_partition_bounds(c.oid::regclass) b "
    "WHERE p.relname = ANY($1::text[]) AND p.relnamespace = c.relnamespace "
    "AND p.relnamespace = to_regnamespace(current_schema())::oid "
    "ORDER BY b.upper_bound, p.relname"
)


async def list_partitions(driver: Any) -> list[TimePartition]:
    """Returns the attached time partitions of the five tables, oldest first."""
    rows = await driver.fetch(_LIST, list(PARTITIONED))
    return [TimePartition(t, n, lo, hi) for t, n, lo, hi in rows]
