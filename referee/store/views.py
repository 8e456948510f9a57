"""Reads of the store for people and for the audit (in the spirit of cosmicpython's views).

The processing step writes through its port (``step_store.py``); everything that only reads
what was stored (the audit, the demo's report, the standings) reads it here, so that all the
referee's SQL lives in ``referee/store/``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import NamedTuple

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from referee.store.schema import dead_letters, game_revisions, journal, verdicts


class JournalEntry(NamedTuple):
    """What the audit needs of one journal row."""

    id: int
    source_topic: str
    source_partition: int
    source_offset: int
    raw: bytes
    outcome: str
    reason: str | None
    max_event_bytes: int | None
    referee_version: str | None
    """The release that wrote the row (None: not recorded, before migration 0011)."""


class Standing(NamedTuple):
    """Where a player stands in a game (the ``standings`` and ``player_fouls`` views)."""

    game_id: str
    player: str
    score: int
    fouls: int
    round: int | None
    game_winner: str | None


class StoreViews:
    """The stored journal, verdicts, dead letters and projection, read back."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def journal(self) -> AsyncIterator[JournalEntry]:
        """Yields every journal row in arrival order (streamed, not loaded at once)."""
        async with self.engine.connect() as conn:
            rows = await conn.stream(
                select(
                    journal.c.id,
                    journal.c.source_topic,
                    journal.c.source_partition,
                    journal.c.source_offset,
                    journal.c.raw,
                    journal.c.outcome,
                    journal.c.reason,
                    journal.c.max_event_bytes,
                    journal.c.referee_version,
                ).order_by(journal.c.id)
            )
            async for row in rows:
                yield JournalEntry(*row)

    async def verdict_bodies(self) -> list[tuple[str, str, int]]:
        """Returns (game id, canonical JSON, journal row) of every verdict, in outbox order."""
        async with self.engine.connect() as conn:
            result = await conn.execute(
                select(verdicts.c.game_id, verdicts.c.body, verdicts.c.journal_id).order_by(
                    verdicts.c.position
                )
            )
            return [(g, b, int(j)) for g, b, j in result.all()]

    async def positioned_verdicts(self) -> list[tuple[int, str, str, int]]:
        """Returns (outbox position, game id, canonical JSON, journal row) of every verdict,
        unordered."""
        async with self.engine.connect() as conn:
            result = await conn.execute(
                select(
                    verdicts.c.position, verdicts.c.game_id, verdicts.c.body, verdicts.c.journal_id
                )
            )
            return [(int(p), g, b, int(j)) for p, g, b, j in result.all()]

    async def dead_letter_bodies(self) -> dict[int, str]:
        """Returns each dead letter's ``EventRejected`` JSON by its journal row."""
        async with self.engine.connect() as conn:
            result = await conn.execute(select(dead_letters.c.journal_id, dead_letters.c.body))
            return dict(result.all())

    async def game_revisions(self) -> dict[str, tuple[int, str]]:
        """Returns each pinned game's rules revision and the referee version that pinned it
        (table ``game_revisions``; a game without a row started before migration 0009)."""
        async with self.engine.connect() as conn:
            result = await conn.execute(
                select(
                    game_revisions.c.game_id,
                    game_revisions.c.rules_revision,
                    game_revisions.c.referee_version,
                )
            )
            return {g: (int(r), v) for g, r, v in result.all()}

    async def current_states(self) -> dict[str, str]:
        """Returns each game's newest stored state (the ``current_games`` view)."""
        async with self.engine.connect() as conn:
            result = await conn.execute(text("SELECT game_id, state::text FROM current_games"))
            return dict(result.all())

    async def standings(self) -> list[Standing]:
        """Returns every player's score, fouls, round and game winner, by game and score."""
        async with self.engine.connect() as conn:
            result = await conn.execute(
                text(
                    "SELECT s.game_id, s.player, s.score, "
                    "COALESCE(sum(f.fouls), 0) AS fouls, s.round, s.game_winner "
                    "FROM standings s LEFT JOIN player_fouls f "
                    "ON f.game_id = s.game_id AND f.player = s.player "
                    "GROUP BY s.game_id, s.player, s.score, s.round, s.game_winner, s.seat "
                    "ORDER BY s.game_id, s.score DESC, s.seat"
                )
            )
            return [Standing(g, p, int(sc), int(f), r, w) for g, p, sc, f, r, w in result.all()]
