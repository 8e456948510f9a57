"""The append-only store: journal, projection, verdict and dead-letter outboxes, positions.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TABLES = ("journal", "game_versions", "verdicts", "dead_letters", "consumer_positions")
APP_ROLE = "referee_app"


def _now() -> sa.sql.elements.TextClause:
    return sa.text("now()")


def upgrade() -> None:
    op.create_table(
        "journal",
        sa.Column(
            "id", sa.BigInteger(), autoincrement=True, nullable=False, comment="arrival order"
        ),
        sa.Column("source_topic", sa.Text(), nullable=False, comment="Kafka topic, or file:<path>"),
        sa.Column("source_partition", sa.Integer(), nullable=False),
        sa.Column(
            "source_offset", sa.BigInteger(), nullable=False, comment="Kafka offset or line number"
        ),
        sa.Column("game_id", sa.Text(), nullable=True),
        sa.Column("seq", sa.Integer(), nullable=True),
        sa.Column("event_id", sa.Text(), nullable=True),
        sa.Column("event_type", sa.Text(), nullable=True),
        sa.Column(
            "outcome", sa.Text(), nullable=False, comment="applied, fouled, rejected, duplicate"
        ),
        sa.Column("reason", sa.Text(), nullable=True, comment="rejection reason code"),
        sa.Column(
            "took_place", sa.Boolean(), nullable=False, comment="took the next seq of its game"
        ),
        sa.Column("fingerprint", sa.LargeBinary(), nullable=False),
        sa.Column(
            "raw", sa.LargeBinary(), nullable=False, comment="the record exactly as received"
        ),
        sa.Column("recorded_at", sa.DateTime(timezone=True), server_default=_now(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        comment="Every input record received, in arrival order, with its outcome.",
    )
    op.create_index(
        "journal_game_seq",
        "journal",
        ["game_id", "seq"],
        unique=True,
        postgresql_where=sa.text("took_place"),
    )
    op.create_index(
        "journal_game_event",
        "journal",
        ["game_id", "event_id"],
        postgresql_where=sa.text("took_place"),
    )
    op.create_table(
        "game_versions",
        sa.Column("game_id", sa.Text(), nullable=False),
        sa.Column(
            "version", sa.Integer(), nullable=False, comment="the last seq folded into this state"
        ),
        sa.Column("state", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column(
            "journal_id", sa.BigInteger(), nullable=False, comment="the last journal row folded"
        ),
        sa.Column("recorded_at", sa.DateTime(timezone=True), server_default=_now(), nullable=False),
        sa.PrimaryKeyConstraint("game_id", "version"),
        comment="The projection: each game's folded state, a version per processed batch.",
    )
    op.create_table(
        "verdicts",
        sa.Column(
            "position", sa.BigInteger(), autoincrement=True, nullable=False, comment="outbox order"
        ),
        sa.Column("verdict_id", sa.Text(), nullable=False),
        sa.Column("game_id", sa.Text(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("cause_seq", sa.Integer(), nullable=False),
        sa.Column("journal_id", sa.BigInteger(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False, comment="the canonical JSON, byte for byte"),
        sa.Column("recorded_at", sa.DateTime(timezone=True), server_default=_now(), nullable=False),
        sa.PrimaryKeyConstraint("position"),
        sa.UniqueConstraint("verdict_id"),
        comment="Every verdict, in the order produced; also the outbox of the verdict topic.",
    )
    op.create_index("verdicts_game", "verdicts", ["game_id", "position"])
    op.create_table(
        "dead_letters",
        sa.Column(
            "position", sa.BigInteger(), autoincrement=True, nullable=False, comment="outbox order"
        ),
        sa.Column("journal_id", sa.BigInteger(), nullable=False),
        sa.Column("key", sa.Text(), nullable=True, comment="the input record's key (its game id)"),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False, comment="EventRejected, canonical JSON"),
        sa.Column("recorded_at", sa.DateTime(timezone=True), server_default=_now(), nullable=False),
        sa.PrimaryKeyConstraint("position"),
        sa.UniqueConstraint("journal_id"),
        comment="Every rejected input as EventRejected; the outbox of the dead-letter topic.",
    )
    op.create_table(
        "consumer_positions",
        sa.Column("group_id", sa.Text(), nullable=False),
        sa.Column("topic", sa.Text(), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("offset", sa.BigInteger(), nullable=False, comment="the last offset processed"),
        sa.Column("journal_id", sa.BigInteger(), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), server_default=_now(), nullable=False),
        sa.PrimaryKeyConstraint("group_id", "topic", "partition", "offset"),
        comment="Input positions processed, written with the rows they account for.",
    )

    # Append-only: no UPDATE, DELETE or TRUNCATE, for anyone, enforced by the database.
    op.execute(
        """
        CREATE FUNCTION referee_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'table % is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
                USING ERRCODE = 'insufficient_privilege';
        END
        $$
        """
    )
    for table in TABLES:
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION referee_append_only()"
        )
        op.execute(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION referee_append_only()"
        )

    # Read views for consumers of the store.
    op.execute(
        """
        CREATE VIEW current_games AS
        SELECT DISTINCT ON (game_id) game_id, version AS last_seq, state, journal_id, recorded_at
        FROM game_versions ORDER BY game_id, version DESC
        """
    )
    op.execute(
        """
        CREATE VIEW standings AS
        SELECT g.game_id, p.player, p.seat::int - 1 AS seat,
               (g.state -> 'scores' ->> (p.seat::int - 1))::int AS score,
               g.state ->> 'winner' AS game_winner,
               (g.state -> 'round' ->> 'number')::int AS round
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

    # The application's role: it may read and append, never change or remove.
    op.execute(
        f"""
        DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                CREATE ROLE {APP_ROLE} NOLOGIN;
            END IF;
        END $$
        """
    )
    tables = ", ".join(TABLES)
    views = "current_games, standings, player_fouls, current_positions"
    op.execute(f"GRANT SELECT, INSERT ON {tables} TO {APP_ROLE}")
    op.execute(f"GRANT SELECT ON {views} TO {APP_ROLE}")
    op.execute(
        f"GRANT USAGE ON SEQUENCE journal_id_seq, verdicts_position_seq, "
        f"dead_letters_position_seq TO {APP_ROLE}"
    )


def downgrade() -> None:
    tables = ", ".join(TABLES)
    views = "current_games, standings, player_fouls, current_positions"
    op.execute(
        f"""
        DO $$ BEGIN
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                REVOKE ALL ON {tables} FROM {APP_ROLE};
                REVOKE ALL ON {views} FROM {APP_ROLE};
                REVOKE ALL ON SEQUENCE journal_id_seq, verdicts_position_seq,
                    dead_letters_position_seq FROM {APP_ROLE};
            END IF;
        END $$
        """
    )
    for view in ("current_positions", "player_fouls", "standings", "current_games"):
        op.execute(f"DROP VIEW {view}")
    for table in reversed(TABLES):
        op.drop_table(table)
    op.execute("DROP FUNCTION referee_append_only()")
    # The role is cluster-wide and may serve other databases: drop it only when unused.
    op.execute(
        f"""
        DO $$ BEGIN
            DROP ROLE IF EXISTS {APP_ROLE};
        EXCEPTION WHEN dependent_objects_still_exist THEN
            RAISE NOTICE 'role {APP_ROLE} is still used elsewhere; kept';
        END $$
        """
    )
