"""Rules revisions: the revision each game is judged under, pinned at its ``GameStarted``.

- ``game_revisions``: one row per game that started (its ``GameStarted`` applied), written
  in the batch that started it: the rules revision the game is judged under from its first
  event to its last, the referee version that pinned it and the journal row of its
  ``GameStarted``. A game without a row started before this revision, under rules
  revision 1 (docs/rules.md, "Rules revisions").

A new, empty table: no existing row is read or rewritten, nothing the service writes is
locked beyond the catalogue change.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

APP_ROLE = "referee_app"
READER_ROLE = "referee_reader"
TABLE = "game_revisions"


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("game_id", sa.Text(), nullable=False),
        sa.Column(
            "rules_revision",
            sa.Integer(),
            nullable=False,
            comment="the rules revision the game is judged under",
        ),
        sa.Column(
            "referee_version",
            sa.Text(),
            nullable=False,
            comment="the version of the referee that started the game",
        ),
        sa.Column(
            "journal_id",
            sa.BigInteger(),
            nullable=False,
            comment="the journal row of the game's GameStarted",
        ),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("game_id"),
        comment="The rules revision each game was pinned to at its GameStarted (none: "
        "started before migration 0009, revision 1).",
    )
    op.execute(
        f"CREATE TRIGGER {TABLE}_append_only BEFORE UPDATE OR DELETE ON {TABLE} "
        "FOR EACH ROW EXECUTE FUNCTION referee_append_only()"
    )
    op.execute(
        f"CREATE TRIGGER {TABLE}_no_truncate BEFORE TRUNCATE ON {TABLE} "
        "FOR EACH STATEMENT EXECUTE FUNCTION referee_append_only()"
    )
    op.execute(
        f"""
        DO $$ BEGIN
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                GRANT SELECT, INSERT ON {TABLE} TO {APP_ROLE};
            END IF;
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{READER_ROLE}') THEN
                GRANT SELECT ON {TABLE} TO {READER_ROLE};
            END IF;
        END $$
        """
    )


def downgrade() -> None:
    op.drop_table(TABLE)
