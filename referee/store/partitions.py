"""Time partitions: made ahead of the rows that need them, listed for the archive and metrics.

Migration 0010 partitions ``journal``, ``game_versions``, ``verdicts``, ``dead_letters`` and
``consumer_positions`` by range of ``recorded_at`` (a row's transaction start). Partitions are
made by ``referee_create_partitions(step, ahead)``, which any role may call (it runs with its
owner's rights): the store calls it before a write whenever the partitions made do not reach
one interval past its clock, ``referee migrate`` and ``referee maintain`` call it too. A row
with no partition to go to fails as an outage (the batch is retried, never quarantined), and
the next try makes the partitions first.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

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


async def create_partitions(driver: Any, policy: PartitionPolicy = DEFAULT_POLICY) -> datetime:
    """Makes the partitions missing up to now + the policy's horizon (on an asyncpg
    connection); returns how far every partitioned table is covered."""
    covered: datetime = await driver.fetchval(_CREATE, policy.interval, policy.horizon)
    return covered


@dataclass(slots=True)
class PartitionKeeper:
    """Makes partitions ahead of a writer: asks the database only when the partitions made
    may not reach one interval past this machine's clock."""

    policy: PartitionPolicy = DEFAULT_POLICY
    covered_until: float = field(default=0.0)
    """Epoch seconds up to which every partitioned table has partitions (0: unknown)."""

    async def ensure(self, driver: Any) -> None:
        """Makes the partitions needed soon, if they may be missing."""
        if time.time() + self.policy.interval.total_seconds() < self.covered_until:
            return
        covered = await create_partitions(driver, self.policy)
        self.covered_until = covered.timestamp()

    def forget(self) -> None:
        """Asks again before the next write (a row found no partition)."""
        self.covered_until = 0.0


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
