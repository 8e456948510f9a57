"""The store's side of ``referee archive``: its time partitions' rows, the state carried past
them, and their detaching and dropping (migration 0010; docs/archive.md says the whole run).

A *segment* is one time range ``[start, end)`` and the five partitions that hold it, one a
partitioned table (``<table>_<segment>``). Every statement here runs on an asyncpg connection
of a role that may detach and drop the partitions (the tables' owner: the migrating role).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from referee.store.ddl import DDL_PATIENCE, LockPatience, LocksBusy, bounded_lock, with_lock_timeout
from referee.store.partitions import PARTITIONED, list_partitions
from referee.store.schema import TIME_PARTITION_PATTERN


@dataclass(frozen=True, slots=True)
class StoreSegment:
    """A time range of the five partitioned tables, and whether it is still attached."""

    name: str
    """``p<YYYYMMDD>t<HHMMSS>`` of its start (UTC), or ``p_legacy``."""
    start: datetime | None
    """None: the legacy segment, from the beginning."""
    end: datetime

    def partition(self, table: str) -> str:
        """The name of this segment's partition of ``table``."""
        return f"{table}_{self.name}"


async def attached_segments(driver: Any) -> list[StoreSegment]:
    """Returns the segments every partitioned table has attached, oldest first."""
    by_range: dict[tuple[datetime | None, datetime], set[str]] = {}
    names: dict[tuple[datetime | None, datetime], str] = {}
    for p in await list_partitions(driver):
        key = (p.lower, p.upper)
        by_range.setdefault(key, set()).add(p.table)
        names[key] = p.name.removeprefix(p.table + "_")
    complete = [k for k, tables in by_range.items() if tables == set(PARTITIONED)]
    complete.sort(key=lambda k: k[1])
    return [StoreSegment(names[k], k[0], k[1]) for k in complete]


async def detached_leftovers(driver: Any) -> dict[str, list[str]]:
    """Returns the partitions detached and not dropped (a run stopped between the two), by
    segment name."""
    rows = await driver.fetch(
        "SELECT c.relname::text FROM pg_class c "
        "WHERE c.relkind = 'r' AND NOT c.relispartition "
        "AND c.relnamespace = to_regnamespace(current_schema())::oid "
        "AND c.relname::text ~ $1",
        f"^{TIME_PARTITION_PATTERN}$",
    )
    found: dict[str, list[str]] = {}
    for (name,) in rows:
        table = next(t for t in PARTITIONED if name.startswith(t + "_p"))
        found.setdefault(name.removeprefix(table + "_"), []).append(table)
    return found


ARCHIVE_LOCK = "referee archive"
"""The session lock one run of ``referee archive`` holds on a database: a second waits out."""


async def lock_archiving(driver: Any) -> bool:
    """Takes the archive's session lock if it is free; says whether it did."""
    taken: bool = await driver.fetchval(
        "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", ARCHIVE_LOCK
    )
    return taken


async def unlock_archiving(driver: Any) -> None:
    """Releases the archive's session lock."""
    await driver.execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", ARCHIVE_LOCK)


async def oldest_transaction(driver: Any) -> datetime | None:
    """Returns when the oldest transaction of another session of this database began: rows it
    writes are recorded at that moment, so no partition ending after it may be detached."""
    started: datetime | None = await driver.fetchval(
        "SELECT min(xact_start) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid() "
        "AND xact_start IS NOT NULL"
    )
    return started


async def database_now(driver: Any) -> datetime:
    """Returns the database's clock (the clock ``recorded_at`` is taken from)."""
    now: datetime = await driver.fetchval("SELECT clock_timestamp()")
    return now


async def first_recorded(driver: Any, segment: StoreSegment, tables: Sequence[str]) -> datetime:
    """Returns the earliest ``recorded_at`` in the segment's partitions of ``tables`` (the
    segment's end less a microsecond when they hold no row)."""
    # the partitions' names are the segment's and the five tables': never input
    parts = " UNION ALL ".join(
        f"SELECT min(recorded_at) AS t FROM {segment.partition(table)}"  # noqa: S608
        for table in tables
    )
    found: datetime | None = await driver.fetchval(f"SELECT min(t) FROM ({parts}) s")  # noqa: S608
    return found if found is not None else segment.end - timedelta(microseconds=1)


async def partition_rows(
    driver: Any, partition: str, columns: Sequence[str], order: Sequence[str]
) -> list[tuple[object, ...]]:
    """Returns every row of one partition (attached or detached), in ``order`` (text in code
    point order, as the archive reads it)."""
    keys = ", ".join(f'"{c}" COLLATE "C"' if c in _TEXT_KEYS else f'"{c}"' for c in order)
    cols = ", ".join(f'"{c}"' for c in columns)
    rows = await driver.fetch(f"SELECT {cols} FROM {partition} ORDER BY {keys}")  # noqa: S608
    return [tuple(r) for r in rows]


_TEXT_KEYS = frozenset({"game_id", "group_id", "topic"})

_CARRY_STATES = """
INSERT INTO game_versions (game_id, version, state, journal_id)
SELECT DISTINCT ON (v.game_id) v.game_id, v.version, v.state, v.journal_id
FROM {part} v
WHERE NOT EXISTS (
    SELECT FROM game_versions n WHERE n.game_id = v.game_id AND n.recorded_at >= $1)
ORDER BY v.game_id, v.version DESC
"""
_CARRY_POSITIONS = """
INSERT INTO consumer_positions (group_id, topic, partition, "offset", journal_id)
SELECT DISTINCT ON (p.group_id, p.topic, p.partition)
    p.group_id, p.topic, p.partition, p."offset", p.journal_id
FROM {part} p
WHERE NOT EXISTS (
    SELECT FROM consumer_positions n
    WHERE n.group_id = p.group_id AND n.topic = p.topic AND n.partition = p.partition
        AND n.recorded_at >= $1)
ORDER BY p.group_id, p.topic, p.partition, p."offset" DESC
"""
# A game without a winner, or one whose last event is recent ($1: now less the time prints
# are kept), may still receive a redelivered event: the prints of its archived places are
# kept, so it is told from a conflicting one without the archive.
_CARRY_PRINTS = """
INSERT INTO carried_prints (game_id, seq, event_id, fingerprint, journal_id)
SELECT j.game_id, j.seq, j.event_id, j.fingerprint, j.id
FROM {part} j
WHERE j.took_place AND j.game_id IN (
    SELECT g.game_id FROM (
        SELECT DISTINCT ON (game_id) game_id, state, recorded_at FROM game_versions
        WHERE game_id IN (SELECT game_id FROM {part} WHERE took_place)
        ORDER BY game_id, version DESC, recorded_at
    ) g
    WHERE (g.state::jsonb ->> 'winner') IS NULL OR g.recorded_at >= $1)
ON CONFLICT DO NOTHING
"""


class TablesBusy(RuntimeError):  # noqa: N818 - what the run reports
    """The detach (or the drop) never found its tables free within its bounded wait: a
    reader or a writer held them every time. Run again."""


@dataclass(frozen=True, slots=True)
class Carried:
    """What detaching a segment carried into the live partitions."""

    states: int
    positions: int
    prints: int


async def carry_and_detach(
    driver: Any,
    segment: StoreSegment,
    prints_since: datetime,
    patience: LockPatience = DDL_PATIENCE,
) -> Carried:
    """In one transaction: carries into the live partitions the newest state of every game,
    the newest position of every input partition (each whose rows are in the segment and
    nowhere later), and the prints of every game still going on or active since
    ``prints_since``; then detaches the segment's five partitions. Nothing judged later needs
    their rows again (but a redelivery of an event of a game finished before
    ``prints_since``: docs/archive.md).

    The detach takes ``ACCESS EXCLUSIVE`` locks on the five tables: it waits at most
    ``patience.wait`` for all of them together, so the service's inserts wait no longer
    behind it, and the transaction is tried again until it finds them free."""
    try:
        return await with_lock_timeout(
            driver,
            lambda conn: _carry_and_detach(conn, segment, prints_since, patience),
            patience,
            what=f"detaching segment {segment.name}",
        )
    except LocksBusy:
        raise TablesBusy(
            f"segment {segment.name} waits: its tables were never free for "
            f"{patience.milliseconds} ms in {patience.tries} tries (a reader or writers held "
            "them; run again)"
        ) from None


async def _carry_and_detach(
    driver: Any, segment: StoreSegment, prints_since: datetime, patience: LockPatience
) -> Carried:
    states = await driver.execute(
        _CARRY_STATES.format(part=segment.partition("game_versions")), segment.end
    )
    positions = await driver.execute(
        _CARRY_POSITIONS.format(part=segment.partition("consumer_positions")), segment.end
    )
    prints = await driver.execute(
        _CARRY_PRINTS.format(part=segment.partition("journal")), prints_since
    )
    # Every lock the five detaches need, taken at once within one bounded wait (after the
    # carrying, which needs none of them): the first taken is held while the others are
    # waited for, and the inserts queue behind it until the transaction ends.
    tables = ", ".join(f"ONLY {t}, ONLY {segment.partition(t)}" for t in PARTITIONED)
    await bounded_lock(driver, f"LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE", patience)
    for table in PARTITIONED:
        await driver.execute(f"ALTER TABLE {table} DETACH PARTITION {segment.partition(table)}")
    return Carried(_count(states), _count(positions), _count(prints))


async def drop_detached(
    driver: Any, segment_name: str, tables: Sequence[str], patience: LockPatience = DDL_PATIENCE
) -> None:
    """Drops a segment's detached partitions (refusing one still attached), each lock waited
    for a bounded time; raises TablesBusy if a reader of them held them through every try."""

    async def drop(conn: Any) -> None:
        for table in tables:
            name = f"{table}_{segment_name}"
            attached = await conn.fetchval(
                "SELECT relispartition FROM pg_class WHERE oid = to_regclass($1)", name
            )
            if attached:
                raise RuntimeError(f"{name} is still attached: it is not dropped")
            if attached is not None:
                await conn.execute(f"DROP TABLE {name}")

    try:
        await with_lock_timeout(driver, drop, patience, what=f"dropping segment {segment_name}")
    except LocksBusy:
        raise TablesBusy(
            f"segment {segment_name} is detached, not dropped: a reader held its partitions "
            "(the next run drops them)"
        ) from None


def _count(status: str) -> int:
    """The row count of an INSERT's status (``INSERT 0 <n>``)."""
    return int(status.rsplit(" ", 1)[-1])
