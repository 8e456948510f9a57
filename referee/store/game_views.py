"""Reads of one game at a time, for the dispute desk (``referee desk``).

The desk finds games by id, player and foul, and folds one game's journal rows to draw its
page. Its sessions read as ``referee_reader`` in read-only transactions
(``as_reader``): whatever login its URL names, the desk can change nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, NamedTuple

from sqlalchemy import event, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from referee.store.schema import game_revisions, journal

READER_ROLE = "referee_reader"
"""The group role of the store's readers (migration 0004): SELECT, nothing else."""


def as_reader(engine: AsyncEngine) -> AsyncEngine:
    """Makes every new connection of ``engine`` act as ``referee_reader`` in read-only
    transactions; a login that is not a member of the role is refused at connect
    (``InsufficientPrivilegeError``)."""

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"SET ROLE {READER_ROLE}")
            cursor.execute("SET default_transaction_read_only = on")
        finally:
            cursor.close()
        # the settings are the session's from here on: the driver ran them in a
        # transaction of its own, which the first statement would otherwise continue
        dbapi_connection.commit()

    event.listen(engine.sync_engine, "connect", on_connect)
    return engine


class GameSummary(NamedTuple):
    """A game as the desk lists it."""

    game_id: str
    players: tuple[str, ...]
    last_seq: int
    winner: str | None
    fouls: int


class JournalRow(NamedTuple):
    """What folding one game needs of a journal row."""

    raw: bytes
    reason: str | None
    max_event_bytes: int | None
    source_topic: str
    source_partition: int
    source_offset: int


_FIND = text(
    """
    SELECT g.game_id, ARRAY(SELECT jsonb_array_elements_text(g.state -> 'players')) AS players,
           g.last_seq, g.state ->> 'winner',
           COALESCE(f.fouls, 0) AS fouls
    FROM current_games g
    LEFT JOIN (
        SELECT game_id, count(*) AS fouls FROM verdicts WHERE type = 'FoulRecorded'
        GROUP BY game_id
    ) f ON f.game_id = g.game_id
    WHERE (CAST(:game AS text) IS NULL OR strpos(g.game_id, CAST(:game AS text)) > 0)
      AND (CAST(:player AS text) IS NULL
           OR (g.state -> 'players') @> jsonb_build_array(CAST(:player AS text)))
      AND (CAST(:foul AS text) IS NULL OR EXISTS (
           SELECT 1 FROM verdicts v
           WHERE v.game_id = g.game_id AND v.type = 'FoulRecorded'
             AND v.body::jsonb ->> 'foul' = CAST(:foul AS text)
             AND (CAST(:player AS text) IS NULL
                  OR v.body::jsonb ->> 'player' = CAST(:player AS text))))
    ORDER BY g.game_id
    LIMIT :limit
    """
)

_FOULS = text(
    """
    SELECT DISTINCT body::jsonb ->> 'foul' AS foul FROM verdicts
    WHERE type = 'FoulRecorded' ORDER BY 1
    """
)


class GameViews:
    """One game's journal and revision, and the games found by id, player and foul."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def find(
        self,
        *,
        game: str | None = None,
        player: str | None = None,
        foul: str | None = None,
        limit: int = 200,
    ) -> list[GameSummary]:
        """Returns the games whose id contains ``game``, at which ``player`` sits, with a
        foul of kind ``foul`` (by ``player``, if given), by id; at most ``limit``."""
        async with self.engine.connect() as conn:
            result = await conn.execute(
                _FIND, {"game": game, "player": player, "foul": foul, "limit": limit}
            )
            return [
                GameSummary(g, tuple(players), int(last), winner, int(fouls))
                for g, players, last, winner, fouls in result.all()
            ]

    async def foul_kinds(self) -> list[str]:
        """Returns the kinds of foul the store has recorded."""
        async with self.engine.connect() as conn:
            return [str(f) for (f,) in (await conn.execute(_FOULS)).all()]

    async def revision(self, game_id: str) -> int | None:
        """Returns the rules revision the game is pinned to (``None``: no row, revision 1)."""
        async with self.engine.connect() as conn:
            found = await conn.scalar(
                select(game_revisions.c.rules_revision).where(game_revisions.c.game_id == game_id)
            )
            return None if found is None else int(found)

    async def game_journal(self, game_id: str) -> AsyncIterator[JournalRow]:
        """Yields the game's journal rows in arrival order (streamed)."""
        async with self.engine.connect() as conn:
            rows = await conn.stream(
                select(
                    journal.c.raw,
                    journal.c.reason,
                    journal.c.max_event_bytes,
                    journal.c.source_topic,
                    journal.c.source_partition,
                    journal.c.source_offset,
                )
                .where(journal.c.game_id == game_id)
                .order_by(journal.c.id)
            )
            async for row in rows:
                yield JournalRow(*row)
