"""Relay checkpoints: how far each outbox is known to be published.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

APP_ROLE = "referee_app"


def upgrade() -> None:
    op.create_table(
        "relay_checkpoints",
        sa.Column("outbox", sa.Text(), nullable=False, comment="verdicts or dead_letters"),
        sa.Column(
            "position",
            sa.BigInteger(),
            nullable=False,
            comment="every outbox row up to here is on its topic",
        ),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("outbox", "position"),
        comment="Relay progress, appended as it goes; the newest row per outbox counts.",
    )
    op.execute(
        "CREATE TRIGGER relay_checkpoints_append_only BEFORE UPDATE OR DELETE ON "
        "relay_checkpoints FOR EACH ROW EXECUTE FUNCTION referee_append_only()"
    )
    op.execute(
        "CREATE TRIGGER relay_checkpoints_no_truncate BEFORE TRUNCATE ON relay_checkpoints "
        "FOR EACH STATEMENT EXECUTE FUNCTION referee_append_only()"
    )
    op.execute(
        f"""
        DO $$ BEGIN
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                GRANT SELECT, INSERT ON relay_checkpoints TO {APP_ROLE};
            END IF;
        END $$
        """
    )


def downgrade() -> None:
    op.drop_table("relay_checkpoints")
