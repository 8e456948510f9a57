"""An outbox per input partition: each verdict and dead letter names the input partition whose
batch wrote it, and the partition's owner publishes it.

- ``verdicts`` and ``dead_letters`` gain ``source_topic`` and ``source_partition`` (the input
  record's), indexed with ``position`` for the owner's reads of its partition. Rows written
  before this revision, or by an instance of an earlier release during a rolling upgrade,
  have them NULL: their partition is their journal row's (a partial index on ``position``
  keeps those reads short).
- ``outbox_checkpoints``: how far each input partition's outbox is known to be on its topics
  (``partition`` -1: every partition, the point the global relay of earlier releases reached
  when the first owner took over from it).
- ``input_partitions``: the input topic's partition count the referee judged under; a topic
  that grew since is refused (keys moved to other partitions: docs/runbook.md).

Nothing here rewrites a row: the columns are added NULL, the indexes of the legacy rows are
built ``CONCURRENTLY`` (no lock on the writers). docs/store.md gives the time per million
rows.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

APP_ROLE = "referee_app"
READER_ROLE = "referee_reader"
OUTBOXES = ("verdicts", "dead_letters")
NEW_TABLES = ("outbox_checkpoints", "input_partitions")


def upgrade() -> None:
    # The part in the migration's transaction commits whole before the index builds begin; if
    # a build was interrupted, a second `referee migrate` finds it done and only builds.
    if not sa.inspect(op.get_bind()).has_table("outbox_checkpoints"):
        _columns_and_tables()
    _indexes()


def _columns_and_tables() -> None:
    for table in OUTBOXES:
        op.add_column(
            table,
            sa.Column(
                "source_topic",
                sa.Text(),
                nullable=True,
                comment="the input record's topic (NULL: before revision 0008, see journal)",
            ),
        )
        op.add_column(
            table,
            sa.Column(
                "source_partition",
                sa.Integer(),
                nullable=True,
                comment="the input record's partition: the outbox this row is in",
            ),
        )
    op.create_table(
        "outbox_checkpoints",
        sa.Column("outbox", sa.Text(), nullable=False, comment="verdicts or dead_letters"),
        sa.Column("topic", sa.Text(), nullable=False, comment="the input topic"),
        sa.Column(
            "partition",
            sa.Integer(),
            nullable=False,
            comment="the input partition (-1: every partition)",
        ),
        sa.Column(
            "position",
            sa.BigInteger(),
            nullable=False,
            comment="every row of the partition's outbox up to here is on its topic",
        ),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("outbox", "topic", "partition", "position"),
        comment="Each input partition's publishing progress, appended as it goes; the newest "
        "row counts.",
    )
    op.create_table(
        "input_partitions",
        sa.Column("group_id", sa.Text(), nullable=False),
        sa.Column("topic", sa.Text(), nullable=False),
        sa.Column(
            "partitions", sa.Integer(), nullable=False, comment="the input topic's partitions"
        ),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("group_id", "topic", "partitions"),
        comment="The partition count the referee judges the input topic under; the newest "
        "row counts.",
    )
    for table in NEW_TABLES:
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION referee_append_only()"
        )
        op.execute(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION referee_append_only()"
        )
    op.execute(
        f"""
        DO $$ BEGIN
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                GRANT SELECT, INSERT ON {", ".join(NEW_TABLES)} TO {APP_ROLE};
            END IF;
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{READER_ROLE}') THEN
                GRANT SELECT ON {", ".join(NEW_TABLES)} TO {READER_ROLE};
            END IF;
        END $$
        """
    )


def _indexes() -> None:
    """Built without blocking the writers of an earlier release still running (a rolling
    upgrade): CONCURRENTLY cannot run inside the migration's transaction. A build that was
    interrupted leaves its index INVALID: it is dropped and built again."""
    definitions = {
        "outbox": "(source_topic, source_partition, position) WHERE source_partition IS NOT NULL",
        "legacy": "(position) WHERE source_partition IS NULL",
    }
    with op.get_context().autocommit_block():
        for table in OUTBOXES:
            for suffix, definition in definitions.items():
                name = f"{table}_{suffix}"
                invalid = op.get_bind().scalar(
                    sa.text(
                        "SELECT NOT indisvalid FROM pg_index WHERE indexrelid = to_regclass(:name)"
                    ),
                    {"name": name},
                )
                if invalid:
                    op.execute(f"DROP INDEX CONCURRENTLY {name}")
                op.execute(
                    f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} {definition}"
                )


def downgrade() -> None:
    for table in OUTBOXES:
        op.drop_index(f"{table}_legacy", table_name=table)
        op.drop_index(f"{table}_outbox", table_name=table)
        op.drop_column(table, "source_partition")
        op.drop_column(table, "source_topic")
    for table in reversed(NEW_TABLES):
        op.drop_table(table)
