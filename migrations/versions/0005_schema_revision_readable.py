"""The schema revision readable by both roles: ``serve`` and ``audit`` check it at start.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

ROLES = ("referee_app", "referee_reader")


def upgrade() -> None:
    for role in ROLES:
        op.execute(
            f"""
            DO $$ BEGIN
                IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
                    GRANT SELECT ON alembic_version TO {role};
                END IF;
            END $$
            """
        )


def downgrade() -> None:
    for role in ROLES:
        op.execute(
            f"""
            DO $$ BEGIN
                IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
                    REVOKE SELECT ON alembic_version FROM {role};
                END IF;
            END $$
            """
        )
