"""What a partition's publisher reads and appends, in PostgreSQL (the publishers' port,
implemented), and the one-time takeover from the global relay of earlier releases.

An input partition's outbox is its rows of ``verdicts`` and ``dead_letters``: those that name
the partition (migration 0008), and those written before that revision or by an instance of
an earlier release during a rolling upgrade, which name none and belong to their journal
row's partition.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

from sqlalchemy.ext.asyncio import AsyncEngine

from referee.store.locks import TAKEOVER_LOCK

OUTBOXES = ("verdicts", "dead_letters")
"""The outbox tables."""

OUTBOX_KEYS = {"verdicts": "game_id", "dead_letters": "key"}
"""The column each outbox's Kafka key is taken from."""

EVERY_PARTITION = -1
"""The partition of a checkpoint that holds for every partition of the topic (the takeover's)."""

RETIRED = 2**63 - 1
"""The checkpoint that retires the global relay of releases up to 0.1: a relay of theirs that
takes the lead resumes after it, so it never publishes again."""


class OutboxRow(NamedTuple):
    """One row of an outbox, as it is published."""

    position: int
    key: bytes | None
    body: bytes
    cause: int | None = None
    """The input offset of the record that gave the row (None: not known, a row of release
    0.1 whose journal row was archived)."""


class PostgresOutboxStore:
    """The publishers' store on PostgreSQL."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def stored_position(self, group_id: str, topic: str, partition: int) -> int:
        """Returns the partition's last processed offset (-1: none)."""
        async with self._driver() as driver:
            found = await driver.fetchval(_STORED_POSITION, group_id, topic, partition)
        return -1 if found is None else int(found)

    async def rows_after(
        self, outbox: str, topic: str, partition: int, after: int, limit: int
    ) -> list[OutboxRow]:
        """Returns up to ``limit`` rows of the partition's outbox past ``after``, in position
        order (its rows from before revision 0008 found through their journal rows)."""
        async with self._driver() as driver:
            rows = await driver.fetch(_ROWS_AFTER[_table(outbox)], topic, partition, after, limit)
        return [
            OutboxRow(int(p), _key_bytes(k), str(b).encode(), None if c is None else int(c))
            for p, k, b, c in rows
        ]

    async def published_position(
        self, outbox: str, topic: str, partition: int, cause: int, hint: int
    ) -> int:
        """Returns the position of the partition's last outbox row whose input record is at or
        before offset ``cause`` (0: none): the store's own numbering of what the output topic
        holds when its last record came from input offset ``cause``. ``hint``, the position
        that record carries, is tried first: it is the answer unless the store numbered its
        rows differently since (it went back in time and judged again)."""
        table = _table(outbox)
        async with self._driver() as driver:
            at_hint = await driver.fetchval(_CAUSE_AT[table], topic, partition, hint)
            if at_hint is not None and int(at_hint) == cause:
                return hint
            found = await driver.fetchval(_LAST_CAUSED[table], topic, partition, cause)
        return 0 if found is None else int(found)

    async def withhold(
        self, outbox: str, topic: str, partition: int, row: OutboxRow, reason: str
    ) -> None:
        """Records that a row of the partition's outbox is not published: the broker refused
        it for good (it stays in the store; ``rows_after`` no longer returns it)."""
        async with self._driver() as driver:
            await driver.execute(
                "INSERT INTO withheld_rows (outbox, topic, partition, position, cause, reason)"
                " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
                _table(outbox),
                topic,
                partition,
                row.position,
                row.cause,
                reason,
            )

    async def accepted_gap(
        self, group_id: str, topic: str, partition: int, first_missing: int, next_offset: int
    ) -> bool:
        """Checks if an operator accepted that the partition's input from ``first_missing``
        up to ``next_offset`` is lost (``referee partitions --accept-gap``)."""
        async with self._driver() as driver:
            found = await driver.fetchval(
                "SELECT count(*) FROM input_gaps WHERE group_id = $1 AND topic = $2"
                " AND partition = $3 AND first_missing <= $4 AND next_offset >= $5",
                group_id,
                topic,
                partition,
                first_missing,
                next_offset,
            )
        return bool(found)

    async def accept_gap(
        self, group_id: str, topic: str, partition: int, first_missing: int, next_offset: int
    ) -> None:
        """Records that the partition's input from ``first_missing`` up to ``next_offset`` is
        accepted as lost: the partition goes on from ``next_offset``."""
        async with self._driver() as driver:
            await driver.execute(
                "INSERT INTO input_gaps (group_id, topic, partition, first_missing, next_offset)"
                " VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                group_id,
                topic,
                partition,
                first_missing,
                next_offset,
            )

    async def every_row(self, outbox: str, topic: str) -> list[tuple[int, int, bytes, bool]]:
        """Returns every row of the input topic's outboxes: (input partition, position, body,
        withheld), the rows from before revision 0008 by their journal row's partition."""
        table = _table(outbox)
        async with self._driver() as driver:
            rows = await driver.fetch(_EVERY_ROW[table], topic)
        return [(int(p), int(pos), str(b).encode(), bool(w)) for p, pos, b, w in rows]

    async def processed_record(
        self, group_id: str, topic: str, partition: int, offset: int
    ) -> bytes | None:
        """Returns the bytes the journal holds of the partition's record at ``offset`` when that
        is its stored position (the last record processed), None when not found."""
        async with self._driver() as driver:
            found = await driver.fetchval(_PROCESSED_RECORD, group_id, topic, partition, offset)
        return None if found is None else bytes(found)

    async def checkpoint(self, outbox: str, topic: str, partition: int) -> int:
        """Returns how far the partition's outbox is known to be published (0: nothing
        known), counting the takeover's checkpoint for every partition."""
        async with self._driver() as driver:
            found = await driver.fetchval(
                "SELECT max(position) FROM outbox_checkpoints WHERE outbox = $1 AND topic = $2"
                " AND partition = ANY($3::integer[])",
                _table(outbox),
                topic,
                [partition, EVERY_PARTITION],
            )
        return int(found or 0)

    async def save_checkpoints(self, topic: str, partition: int, positions: dict[str, int]) -> None:
        """Appends that the partition's outboxes are published up to these positions."""
        async with self._driver() as driver:
            await driver.executemany(
                "INSERT INTO outbox_checkpoints (outbox, topic, partition, position) "
                "VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                [(_table(o), topic, partition, p) for o, p in positions.items()],
            )

    async def backlog(self, topic: str, partition: int, after: dict[str, int]) -> int:
        """Returns how many rows of the partition's outboxes are past these positions."""
        total = 0
        async with self._driver() as driver:
            for outbox, position in after.items():
                total += int(
                    await driver.fetchval(_BACKLOG[_table(outbox)], topic, partition, position)
                )
        return total

    async def input_partitions(self, group_id: str, topic: str) -> int | None:
        """Returns the input topic's partition count last recorded (None: never)."""
        async with self._driver() as driver:
            found = await driver.fetchval(
                "SELECT partitions FROM input_partitions WHERE group_id = $1 AND topic = $2"
                " ORDER BY recorded_at DESC, partitions DESC LIMIT 1",
                group_id,
                topic,
            )
        return None if found is None else int(found)

    async def record_input_partitions(self, group_id: str, topic: str, partitions: int) -> None:
        """Records the partition count the referee judges the input topic under."""
        async with self._driver() as driver:
            await driver.execute(
                "INSERT INTO input_partitions (group_id, topic, partitions) VALUES ($1, $2, $3)"
                " ON CONFLICT DO NOTHING",
                group_id,
                topic,
                partitions,
            )

    @asynccontextmanager
    async def takeover(self) -> AsyncIterator[Takeover]:
        """A session holding the takeover lock (instances starting together take over once)."""
        async with self._driver() as driver:
            await driver.execute("SELECT pg_advisory_lock($1)", TAKEOVER_LOCK)
            try:
                yield Takeover(driver)
            finally:
                await driver.execute("SELECT pg_advisory_unlock($1)", TAKEOVER_LOCK)

    @asynccontextmanager
    async def _driver(self) -> AsyncIterator[Any]:
        """The pooled connection's asyncpg connection; each statement stands alone."""
        async with self.engine.connect() as conn:
            raw = await conn.get_raw_connection()
            yield raw.driver_connection


class Takeover:
    """The steps of the takeover from the global relay, on the session holding its lock."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver

    async def done(self, topic: str) -> bool:
        """Checks if the takeover was recorded for this input topic."""
        found = await self.driver.fetchval(
            "SELECT count(*) FROM outbox_checkpoints WHERE topic = $1 AND partition = $2",
            topic,
            EVERY_PARTITION,
        )
        return bool(found)

    async def retire_relay(self) -> dict[str, int]:
        """Retires the global relay (every term it starts from now publishes nothing) and
        returns how far its checkpoints said it got, per outbox."""
        reached: dict[str, int] = {}
        for outbox in OUTBOXES:
            await self.driver.execute(
                "INSERT INTO relay_checkpoints (outbox, position) VALUES ($1, $2) "
                "ON CONFLICT DO NOTHING",
                outbox,
                RETIRED,
            )
            found = await self.driver.fetchval(
                "SELECT max(position) FROM relay_checkpoints WHERE outbox = $1 AND position < $2",
                outbox,
                RETIRED,
            )
            reached[outbox] = int(found or 0)
        return reached

    async def record(self, topic: str, published: dict[str, int]) -> None:
        """Records how far the global relay published each outbox, for every partition."""
        await self.driver.executemany(
            "INSERT INTO outbox_checkpoints (outbox, topic, partition, position) "
            "VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
            [(_table(o), topic, EVERY_PARTITION, p) for o, p in published.items()],
        )


def _rows_after(table: str) -> str:
    key = OUTBOX_KEYS[table]
    return (
        f"(SELECT o.position, o.{key}, o.body, j.source_offset FROM {table} o"  # noqa: S608 - known names
        f" LEFT JOIN LATERAL ({_CAUSE_OF}) j ON true WHERE o.source_topic = $1"
        " AND o.source_partition = $2 AND o.position > $3"
        f" AND NOT EXISTS (SELECT FROM withheld_rows w WHERE w.outbox = '{table}'"
        " AND w.topic = $1 AND w.partition = $2 AND w.position = o.position)"
        " ORDER BY o.position LIMIT $4)"
        f" UNION ALL (SELECT o.position, o.{key}, o.body, j.source_offset FROM {table} o"
        " JOIN journal j ON j.id = o.journal_id WHERE o.source_partition IS NULL"
        " AND o.position > $3 AND j.source_topic = $1 AND j.source_partition = $2"
        " ORDER BY o.position LIMIT $4) ORDER BY position LIMIT $4"
    )


# The input offset of an outbox row's record: its journal row was written in the same
# transaction, so it has the same recorded_at (one time partition, one index probe).
_CAUSE_OF = (
    "SELECT jr.source_offset FROM journal jr WHERE jr.id = o.journal_id"
    " AND jr.recorded_at = o.recorded_at OFFSET 0"
)


def _cause_at(table: str) -> str:
    return (
        f"SELECT j.source_offset FROM {table} o, LATERAL ({_CAUSE_OF}) j"  # noqa: S608 - known names
        " WHERE o.source_topic = $1 AND o.source_partition = $2 AND o.position = $3"
    )


def _last_caused(table: str) -> str:
    # walks back from the newest row: as many rows as were judged after that record
    return (
        f"SELECT o.position FROM {table} o, LATERAL ({_CAUSE_OF}) j"  # noqa: S608 - known names
        " WHERE o.source_topic = $1 AND o.source_partition = $2 AND j.source_offset <= $3"
        " ORDER BY o.position DESC LIMIT 1"
    )


def _backlog(table: str) -> str:
    return (
        f"SELECT (SELECT count(*) FROM {table} WHERE source_topic = $1"  # noqa: S608 - known names
        " AND source_partition = $2 AND position > $3)"
        f" + (SELECT count(*) FROM {table} o JOIN journal j ON j.id = o.journal_id"
        " WHERE o.source_partition IS NULL AND o.position > $3 AND j.source_topic = $1"
        " AND j.source_partition = $2)"
    )


_ROWS_AFTER = {table: _rows_after(table) for table in OUTBOXES}
_CAUSE_AT = {table: _cause_at(table) for table in OUTBOXES}
_EVERY_ROW = {
    table: (
        "SELECT coalesce(o.source_partition, j.source_partition), o.position, o.body,"  # noqa: S608 - known names
        " EXISTS (SELECT FROM withheld_rows w WHERE w.outbox = '" + table + "'"
        " AND w.topic = $1 AND w.partition = coalesce(o.source_partition, j.source_partition)"
        f" AND w.position = o.position) FROM {table} o"
        " LEFT JOIN journal j ON o.source_partition IS NULL AND j.id = o.journal_id"
        " WHERE coalesce(o.source_topic, j.source_topic) = $1"
    )
    for table in OUTBOXES
}
_LAST_CAUSED = {table: _last_caused(table) for table in OUTBOXES}
_PROCESSED_RECORD = (
    "SELECT j.raw FROM consumer_positions p JOIN journal j ON j.id = p.journal_id"
    " AND j.recorded_at = p.recorded_at WHERE p.group_id = $1 AND p.topic = $2"
    ' AND p.partition = $3 AND p."offset" = $4 LIMIT 1'
)
_BACKLOG = {table: _backlog(table) for table in OUTBOXES}
_STORED_POSITION = (
    'SELECT max("offset") FROM consumer_positions WHERE group_id = $1 AND topic = $2'
    " AND partition = $3"
)


def _table(outbox: str) -> str:
    if outbox not in OUTBOX_KEYS:
        raise ValueError(f"no outbox {outbox!r}")
    return outbox


def _key_bytes(key: object) -> bytes | None:
    if key is None or isinstance(key, bytes):
        return key
    if isinstance(key, memoryview):
        return key.tobytes()
    return str(key).encode()
