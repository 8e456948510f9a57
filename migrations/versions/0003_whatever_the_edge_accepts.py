"""The store takes whatever the edge accepts; the journal records each record's size limit.

- ``seq`` (journal), ``version`` (game_versions) and ``cause_seq`` (verdicts) become bigint:
  EVENTS.md bounds seq and round at 2^53 - 1, and a seq of 2^31 used to stop the store.
- ``dead_letters.key`` becomes bytea: a Kafka key is bytes (a NUL byte included), published
  back exactly as it came.
- ``journal.max_event_bytes``: the size limit the record was judged under, so that an audit
  judges every record exactly as it was judged (NULL for rows written before this revision).
- The read views cast round numbers and scores to bigint.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

APP_ROLE = "referee_app"
VIEWS = ("current_positions", "player_fouls", "standings", "current_games")


def _create_views(number: str) -> None:
    op.execute(
        """
        CREATE VIEW current_games AS
        SELECT DISTINCT ON (game_id) game_id, version AS last_seq, state, journal_id, recorded_at
        FROM game_versions ORDER BY game_id, version DESC
        """
    )
    op.execute(
        f"""
        CREATE VIEW standings AS
        SELECT g.game_id, p.player, p.seat::int - 1 AS seat,
               (g.state -> 'scores' ->> (p.seat::int - 1))::{number} AS score,
               g.state ->> 'winner' AS game_winner,
               (g.state -> 'round' ->> 'number')::{number} AS round
        FROM current_games g,
             jsonb_array_elements_text(g.state -> 'players') WITH ORDINALITY AS p(player, seat)
        """
    )
    op.execute(
        """
        CREATE VIEW player_fouls AS
        SELECT game_id, body::jsonb ->> 'player' AS player, body::jsonb ->> 'foul' AS foul,
               count(*) AS fouls,
               sum((body::jsonb ->> 'penalty')::int) AS penalty
        FROM verdicts WHERE type = 'FoulRecorded'
        GROUP BY 1, 2, 3
        """
    )
    op.execute(
        """
        CREATE VIEW current_positions AS
        SELECT group_id, topic, partition, max("offset") AS "offset"
        FROM consumer_positions GROUP BY 1, 2, 3
        """
    )
    op.execute(
        f"""
        DO $$ BEGIN
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                GRANT SELECT ON {", ".join(VIEWS)} TO {APP_ROLE};
            END IF;
        END $$
        """
    )


def _drop_views() -> None:
    for view in VIEWS:
        op.execute(f"DROP VIEW {view}")


def upgrade() -> None:
    # The views depend on the columns whose type changes: they are made again afterwards.
    _drop_views()
    op.alter_column("journal", "seq", type_=sa.BigInteger(), existing_nullable=True)
    op.alter_column(
        "game_versions",
        "version",
        type_=sa.BigInteger(),
        existing_nullable=False,
        existing_comment="the last seq folded into this state",
    )
    op.alter_column("verdicts", "cause_seq", type_=sa.BigInteger(), existing_nullable=False)
    op.alter_column(
        "dead_letters",
        "key",
        type_=sa.LargeBinary(),
        postgresql_using="convert_to(key, 'UTF8')",
        existing_nullable=True,
        comment="the input record's key, as received",
        existing_comment="the input record's key (its game id)",
    )
    op.add_column(
        "journal",
        sa.Column(
            "max_event_bytes",
            sa.BigInteger(),
            nullable=True,
            comment="the size limit the record was judged under (NULL: before revision 0003)",
        ),
    )
    _create_views("bigint")


def downgrade() -> None:
    _drop_views()
    op.drop_column("journal", "max_event_bytes")
    op.alter_column(
        "dead_letters",
        "key",
        type_=sa.Text(),
        postgresql_using="convert_from(key, 'UTF8')",
        existing_nullable=True,
        comment="the input record's key (its game id)",
        existing_comment="the input record's key, as received",
    )
    op.alter_column("verdicts", "cause_seq", type_=sa.Integer(), existing_nullable=False)
    op.alter_column(
        "game_versions",
        "version",
        type_=sa.Integer(),
        existing_nullable=False,
        existing_comment="the last seq folded into this state",
    )
    op.alter_column("journal", "seq", type_=sa.Integer(), existing_nullable=True)
    _create_views("int")
