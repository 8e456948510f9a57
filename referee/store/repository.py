"""Reading and appending the store's rows; the hot path appends with COPY in one transaction."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from sqlalchemy import select, text, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from referee.store.schema import journal

JOURNAL_COLUMNS = (
    "id",
    "source_topic",
    "source_partition",
    "source_offset",
    "game_id",
    "seq",
    "event_id",
    "event_type",
    "outcome",
    "reason",
    "took_place",
    "fingerprint",
    "raw",
    "max_event_bytes",
)
VERSION_COLUMNS = ("game_id", "version", "state", "journal_id")
VERDICT_COLUMNS = ("verdict_id", "game_id", "type", "cause_seq", "journal_id", "body")
DEAD_LETTER_COLUMNS = ("journal_id", "key", "reason", "body")
POSITION_COLUMNS = ("group_id", "topic", "partition", "offset", "journal_id")


class StoredGame(NamedTuple):
    """A game's newest projection version."""

    game_id: str
    last_seq: int
    state: str


class StoredPrint(NamedTuple):
    """What took a place in a game: its seq, event id and fingerprint."""

    game_id: str
    seq: int
    event_id: str | None
    fingerprint: bytes


class Rows(NamedTuple):
    """Everything one processing step appends, in one transaction."""

    journal: list[tuple[Any, ...]]
    versions: list[tuple[Any, ...]]
    verdicts: list[tuple[Any, ...]]
    dead_letters: list[tuple[Any, ...]]
    positions: list[tuple[Any, ...]]


async def load_positions(
    conn: AsyncConnection, group_id: str, topic: str, partitions: Iterable[int]
) -> dict[int, int]:
    """Returns the last processed offset of each partition that has one."""
    wanted = list(partitions)
    if not wanted:
        return {}
    result = await conn.execute(
        text(
            'SELECT partition, max("offset") FROM consumer_positions '
            "WHERE group_id = :g AND topic = :t AND partition = ANY(:p) GROUP BY partition"
        ),
        {"g": group_id, "t": topic, "p": wanted},
    )
    return {int(p): int(o) for p, o in result.all()}


async def lock_position(conn: AsyncConnection, group_id: str, topic: str, partition: int) -> int:
    """Takes the partition's transaction lock; returns its stored offset (-1 if none)."""
    await conn.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"),
        {"k": f"{group_id}\x1f{topic}\x1f{partition}"},
    )
    result = await conn.execute(
        text(
            'SELECT max("offset") FROM consumer_positions '
            "WHERE group_id = :g AND topic = :t AND partition = :p"
        ),
        {"g": group_id, "t": topic, "p": partition},
    )
    stored = result.scalar()
    return -1 if stored is None else int(stored)


async def load_games(conn: AsyncConnection, game_ids: Sequence[str]) -> list[StoredGame]:
    """Returns the newest version of each of these games that has one."""
    if not game_ids:
        return []
    result = await conn.execute(
        text(
            "SELECT DISTINCT ON (game_id) game_id, version, state::text FROM game_versions "
            "WHERE game_id = ANY(:ids) ORDER BY game_id, version DESC"
        ),
        {"ids": list(game_ids)},
    )
    return [StoredGame(g, int(v), s) for g, v, s in result.all()]


async def load_prints(
    conn: AsyncConnection,
    seqs: Sequence[tuple[str, int]],
    event_ids: Sequence[tuple[str, str]],
) -> list[StoredPrint]:
    """Returns the journal's fingerprints of these (game, seq) and (game, event id) places."""
    rows: list[StoredPrint] = []
    columns = (journal.c.game_id, journal.c.seq, journal.c.event_id, journal.c.fingerprint)
    if seqs:
        result = await conn.execute(
            select(*columns).where(
                journal.c.took_place, tuple_(journal.c.game_id, journal.c.seq).in_(seqs)
            )
        )
        rows += [StoredPrint(*r) for r in result.all()]
    if event_ids:
        result = await conn.execute(
            select(*columns).where(
                journal.c.took_place,
                tuple_(journal.c.game_id, journal.c.event_id).in_(event_ids),
            )
        )
        rows += [StoredPrint(*r) for r in result.all()]
    return rows


async def reserve_journal_ids(conn: AsyncConnection, count: int) -> list[int]:
    """Returns ``count`` fresh journal ids, ascending (arrival order)."""
    result = await conn.execute(
        text("SELECT array_agg(nextval('journal_id_seq')) FROM generate_series(1, :n)"),
        {"n": count},
    )
    ids: list[int] = result.scalar_one()
    return sorted(ids)


OUTBOX_LOCK = 0x5245_4645_5245_45  # "REFEREE": one lock for both outboxes


async def append(conn: AsyncConnection, rows: Rows) -> None:
    """Appends one step's rows with COPY, inside the caller's transaction.

    The outbox rows go last, under a transaction lock shared by every writer: outbox
    positions are then taken in commit order, so a relay reading positions in order never
    passes over a row that commits later.
    """
    raw = await conn.get_raw_connection()
    driver: Any = raw.driver_connection
    plain: tuple[tuple[str, tuple[str, ...], list[tuple[Any, ...]]], ...] = (
        ("journal", JOURNAL_COLUMNS, rows.journal),
        ("game_versions", VERSION_COLUMNS, rows.versions),
        ("consumer_positions", POSITION_COLUMNS, rows.positions),
    )
    for table, columns, records in plain:
        if records:
            await driver.copy_records_to_table(table, records=records, columns=columns)
    if not rows.verdicts and not rows.dead_letters:
        return
    await driver.execute("SELECT pg_advisory_xact_lock($1)", OUTBOX_LOCK)
    outboxes: tuple[tuple[str, tuple[str, ...], list[tuple[Any, ...]]], ...] = (
        ("verdicts", VERDICT_COLUMNS, rows.verdicts),
        ("dead_letters", DEAD_LETTER_COLUMNS, rows.dead_letters),
    )
    for table, columns, records in outboxes:
        if records:
            await driver.copy_records_to_table(table, records=records, columns=columns)
