"""A read-only role for analysts, and the verdict log as a view with its fields parsed.

- ``referee_reader`` (NOLOGIN): SELECT on every table and view, nothing else. An operator
  grants it to a login role: ``GRANT referee_reader TO alice``.
- ``verdict_log``: every verdict in outbox order with its envelope as columns and the whole
  verdict as ``jsonb``.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

APP_ROLE = "referee_app"
READER_ROLE = "referee_reader"
TABLES = (
    "journal",
    "game_versions",
    "verdicts",
    "dead_letters",
    "consumer_positions",
    "relay_checkpoints",
)
VIEWS = ("current_games", "standings", "player_fouls", "current_positions", "verdict_log")


def upgrade() -> None:
    op.execute(
        """
        CREATE VIEW verdict_log AS
        SELECT position, verdict_id, game_id, type, cause_seq,
               (body::jsonb ->> 'round')::bigint AS round,
               body::jsonb ->> 'cause_event_id' AS cause_event_id,
               body::jsonb ->> 'occurred_at' AS occurred_at,
               recorded_at,
               body::jsonb AS verdict
        FROM verdicts
        """
    )
    op.execute(
        f"""
        DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{READER_ROLE}') THEN
                CREATE ROLE {READER_ROLE} NOLOGIN;
            END IF;
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                GRANT SELECT ON verdict_log TO {APP_ROLE};
            END IF;
        END $$
        """
    )
    op.execute(f"GRANT SELECT ON {', '.join(TABLES + VIEWS)} TO {READER_ROLE}")


def downgrade() -> None:
    op.execute(f"REVOKE ALL ON {', '.join(TABLES + VIEWS)} FROM {READER_ROLE}")
    op.execute("DROP VIEW verdict_log")
    op.execute(
        f"""
        DO $$ BEGIN
            DROP ROLE IF EXISTS {READER_ROLE};
        EXCEPTION WHEN dependent_objects_still_exist THEN
            RAISE NOTICE 'role {READER_ROLE} is still used elsewhere; kept';
        END $$
        """
    )
