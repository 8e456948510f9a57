"""The write fence as one function: a batch's position locks and checks, its outbox lock and
notification in one round trip, and a small batch written whole by one statement.

``referee_fence`` takes each partition's transaction lock in the order given, then reads the
partition's stored position: in PL/pgSQL every statement of a volatile function takes a fresh
snapshot, so the read after a lock wait sees what the transaction it waited for committed
(one statement doing both would read with the snapshot it began with). It returns NULL when
every position is the one expected, and ``{index, stored}`` (1-based) of the first that is not,
before taking the outbox lock; otherwise it takes the outbox lock when asked and notifies the
relay's channel (delivered when the transaction commits). docs/design.md, "Pipelining" and
"The write of a batch", says why this keeps the guarantees.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE FUNCTION referee_fence(
            fence_group text,
            fence_topics text[],
            fence_partitions integer[],
            fence_expected bigint[],
            fence_locks text[],
            fence_outbox_lock bigint,
            fence_channel text
        ) RETURNS bigint[] LANGUAGE plpgsql VOLATILE AS $$
        DECLARE
            i integer;
            stored bigint;
        BEGIN
            FOR i IN 1 .. coalesce(array_length(fence_topics, 1), 0) LOOP
                PERFORM pg_advisory_xact_lock(hashtextextended(fence_locks[i], 0));
                SELECT max(p."offset") INTO stored FROM consumer_positions p
                WHERE p.group_id = fence_group AND p.topic = fence_topics[i]
                    AND p.partition = fence_partitions[i];
                IF coalesce(stored, -1) <> fence_expected[i] THEN
                    RETURN ARRAY[i, coalesce(stored, -1)];
                END IF;
            END LOOP;
            IF fence_outbox_lock IS NOT NULL THEN
                PERFORM pg_advisory_xact_lock(fence_outbox_lock);
                PERFORM pg_notify(fence_channel, '');
            END IF;
            RETURN NULL;
        END $$
        """
    )


def downgrade() -> None:
    op.execute(
        "DROP FUNCTION referee_fence(text, text[], integer[], bigint[], text[], bigint, text)"
    )
