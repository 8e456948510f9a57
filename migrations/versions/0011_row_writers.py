"""Row writers: each journal row names the referee release that wrote it.

- ``journal.referee_version``: the version of the referee that judged the record and wrote
  the row, in the transaction of its batch. The verdicts, dead letters, states and positions
  of a batch are written in that same transaction and name their journal row, so the row's
  writer is theirs too. ``referee audit`` names the writer of every row it finds different
  (docs/releases.md, "What the audit says"). NULL: written before this migration, or by an
  earlier release still running beside this one during a rolling upgrade (it names the
  columns it writes and leaves this one out).

A nullable column with no default: PostgreSQL adds it to the catalogue only, rewriting and
scanning no row, on the partitioned table and every partition at once. It takes the journal's
``ACCESS EXCLUSIVE`` lock for that moment, so it waits for the batches in flight and the next
ones wait for it: milliseconds, with the service running (docs/store.md).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "journal",
        sa.Column(
            "referee_version",
            sa.Text(),
            nullable=True,
            comment="the referee release that wrote the row (NULL: before migration 0011)",
        ),
    )


def downgrade() -> None:
    # The writers are lost; the rows themselves are the bytes they were.
    op.drop_column("journal", "referee_version")
