"""Partition owners: each input partition's terms of ownership, and a fence that checks them.

- ``partition_owners``: one row each time an instance takes an input partition (``event`` 1,
  with the next ``epoch`` of the partition) and, when it gives the partition back cleanly, one
  row for that (``event`` 2, the same epoch). Appended only, like every table of the store.
- ``withheld_rows``: outbox rows the broker refused for good (too large for the topic, say):
  not published, kept here with the reason, so an audit of the topics expects them absent.
- ``input_gaps``: input records an operator accepted as lost (deleted by retention before the
  referee processed them, or needed again after the store lost commits): the partition goes on
  from ``next_offset`` (``referee partitions --accept-gap``).
- ``referee_take(group, topic, partitions, locks, owner, transactional_ids)``: for each
  partition in the order given, takes the partition's transaction lock (the one the write
  fence takes, so it waits for a batch another writer has in flight), appends the next term,
  and returns it with the stored position and the term before it. Once it commits, no writer
  of an earlier term can commit a batch of the partition (its fence finds the term moved).
- ``referee_fence_owned(...)``: ``referee_fence`` (migration 0006) with each partition's term:
  after the lock, the stored position must be the one expected and the partition's newest
  term the writer's own and not given back. It returns NULL, or ``{index, stored position,
  newest epoch (0: none), given back (0 or 1)}`` (index 1-based) of the first that is not.
  A NULL term is not checked (a replay of a file has no owner).

``referee_fence`` stays for instances of an earlier release running beside this one during a
rolling upgrade; they write no terms and check none. docs/design.md, "A partition's life",
says how the terms are used.

Time partitions attached, not created in place, so making one no longer stops the writers:
``referee_create_partitions(step, ahead)`` (migration 0010) made each partition with
``CREATE TABLE ... PARTITION OF``, which takes an ``ACCESS EXCLUSIVE`` lock on the partitioned
table: it waits for every transaction that has read the table (an analyst's, ``referee
audit``), and every insert waits behind it. It now makes each partition as a table of its
own, ``CREATE TABLE ... (LIKE <table> ...)`` (an ``ACCESS SHARE`` lock on the partitioned
table, to read its columns), then ``ALTER TABLE <table> ATTACH PARTITION`` (a ``SHARE UPDATE
EXCLUSIVE`` lock on it, which neither reads nor inserts conflict with; the new table's own
``ACCESS EXCLUSIVE``). The partition is the same: the same columns, defaults and
constraints, and ATTACH builds the same indexes under the same names and clones the same
triggers as ``PARTITION OF`` did (``tests/integration/store/test_partition_maker.py``
compares the catalogue of both). Same name, arguments and result: releases that call it
from their write path get the lighter lock too.

New tables and functions, and a function body replaced: safe with the service running
(docs/store.md).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

APP_ROLE = "referee_app"
READER_ROLE = "referee_reader"
NEW_TABLES = ("partition_owners", "withheld_rows", "input_gaps")

# What migration 0010 made each partition with.
CREATED_IN_PLACE = """
            EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                part, t, start_at, stop_at);"""

# The partition as a table of its own (every column's type, collation, NOT NULL, default,
# storage, compression and statistics target; the CHECK constraints), then attached: ATTACH
# builds the indexes and clones the row triggers, as PARTITION OF does.
ATTACHED = """
            EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                'INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING STATISTICS '
                'INCLUDING GENERATED INCLUDING IDENTITY)', part, t);
            EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                t, part, start_at, stop_at);"""

FUNCTION = """
CREATE OR REPLACE FUNCTION referee_create_partitions(step interval, ahead interval)
RETURNS timestamptz
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog AS $$
DECLARE
    t text;
    part text;
    last_upper timestamptz;
    start_at timestamptz;
    stop_at timestamptz;
    horizon timestamptz := clock_timestamp() + ahead;
    covered timestamptz;
BEGIN
    IF step < interval '1 minute' OR step > interval '31 days' THEN
        RAISE EXCEPTION 'partition interval % is not between a minute and 31 days', step
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF ahead < interval '0' OR ahead > interval '366 days' THEN
        RAISE EXCEPTION 'partitions ahead % is not between 0 and 366 days', ahead
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- one creator at a time; the others find the partitions made
    PERFORM pg_advisory_xact_lock(hashtextextended('referee_create_partitions', 0));
    FOREACH t IN ARRAY ARRAY['journal', 'game_versions', 'verdicts', 'dead_letters',
                             'consumer_positions'] LOOP
        SELECT max(b.upper_bound) INTO last_upper
        FROM pg_inherits i, LATERAL referee_partition_bounds(i.inhrelid::regclass) b
        WHERE i.inhparent = t::regclass;
        start_at := coalesce(last_upper, date_bin(step, now(), timestamptz '2000-01-01 UTC'));
        WHILE start_at < horizon LOOP
            stop_at := date_bin(step, start_at, timestamptz '2000-01-01 UTC') + step;
            part := t || '_p' || to_char(start_at AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS');
            {make}
            start_at := stop_at;
        END LOOP;
        covered := least(covered, greatest(start_at, last_upper));
    END LOOP;
    RETURN covered;
END $$
"""


def upgrade() -> None:
    op.execute(FUNCTION.replace("{make}", ATTACHED.strip()))
    op.create_table(
        "partition_owners",
        sa.Column("group_id", sa.Text(), nullable=False),
        sa.Column("topic", sa.Text(), nullable=False, comment="the input topic"),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False, comment="the term, from 1"),
        sa.Column(
            "event", sa.SmallInteger(), nullable=False, comment="1: taken, 2: given back cleanly"
        ),
        sa.Column("owner", sa.Text(), nullable=False, comment="the instance, for people"),
        sa.Column(
            "transactional_id",
            sa.Text(),
            nullable=False,
            comment="the Kafka transactional id the owner publishes the partition with",
        ),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("group_id", "topic", "partition", "epoch", "event"),
        comment="Each input partition's terms of ownership, appended as instances take and "
        "give back partitions; the newest term counts.",
    )
    op.create_table(
        "withheld_rows",
        sa.Column("outbox", sa.Text(), nullable=False, comment="verdicts or dead_letters"),
        sa.Column("topic", sa.Text(), nullable=False, comment="the input topic"),
        sa.Column("partition", sa.Integer(), nullable=False, comment="the input partition"),
        sa.Column("position", sa.BigInteger(), nullable=False, comment="the row's position"),
        sa.Column("cause", sa.BigInteger(), nullable=True, comment="its input record's offset"),
        sa.Column("reason", sa.Text(), nullable=False, comment="what the broker said"),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("outbox", "topic", "partition", "position"),
        comment="Outbox rows the broker refused for good: kept in the store, not published.",
    )
    op.create_table(
        "input_gaps",
        sa.Column("group_id", sa.Text(), nullable=False),
        sa.Column("topic", sa.Text(), nullable=False, comment="the input topic"),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column(
            "first_missing", sa.BigInteger(), nullable=False, comment="the first offset lost"
        ),
        sa.Column(
            "next_offset",
            sa.BigInteger(),
            nullable=False,
            comment="the offset the partition goes on from (the log start when accepted)",
        ),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("group_id", "topic", "partition", "next_offset"),
        comment="Input records an operator accepted as lost: the partition goes on after them.",
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
        """
        CREATE FUNCTION referee_take(
            take_group text,
            take_topic text,
            take_partitions integer[],
            take_locks text[],
            take_owner text,
            take_transactional_ids text[]
        ) RETURNS TABLE (
            partition integer,
            epoch bigint,
            stored bigint,
            previous_epoch bigint,
            previous_event smallint,
            previous_owner text,
            previous_transactional_id text
        ) LANGUAGE plpgsql VOLATILE AS $$
        DECLARE
            i integer;
            last record;
        BEGIN
            FOR i IN 1 .. coalesce(array_length(take_partitions, 1), 0) LOOP
                PERFORM pg_advisory_xact_lock(hashtextextended(take_locks[i], 0));
                -- a fresh snapshot after the wait: what the writer waited for committed
                SELECT o.epoch, o.event, o.owner, o.transactional_id INTO last
                FROM partition_owners o
                WHERE o.group_id = take_group AND o.topic = take_topic
                    AND o.partition = take_partitions[i]
                ORDER BY o.epoch DESC, o.event DESC LIMIT 1;
                partition := take_partitions[i];
                epoch := coalesce(last.epoch, 0) + 1;
                previous_epoch := coalesce(last.epoch, 0);
                previous_event := last.event;
                previous_owner := last.owner;
                previous_transactional_id := last.transactional_id;
                INSERT INTO partition_owners
                    (group_id, topic, partition, epoch, event, owner, transactional_id)
                VALUES (take_group, take_topic, take_partitions[i], epoch, 1, take_owner,
                    take_transactional_ids[i]);
                SELECT max(p."offset") INTO stored FROM consumer_positions p
                WHERE p.group_id = take_group AND p.topic = take_topic
                    AND p.partition = take_partitions[i];
                stored := coalesce(stored, -1);
                RETURN NEXT;
            END LOOP;
        END $$
        """
    )
    op.execute(
        """
        CREATE FUNCTION referee_fence_owned(
            fence_group text,
            fence_topics text[],
            fence_partitions integer[],
            fence_expected bigint[],
            fence_locks text[],
            fence_epochs bigint[]
        ) RETURNS bigint[] LANGUAGE plpgsql VOLATILE AS $$
        DECLARE
            i integer;
            stored bigint;
            last record;
        BEGIN
            FOR i IN 1 .. coalesce(array_length(fence_topics, 1), 0) LOOP
                PERFORM pg_advisory_xact_lock(hashtextextended(fence_locks[i], 0));
                SELECT max(p."offset") INTO stored FROM consumer_positions p
                WHERE p.group_id = fence_group AND p.topic = fence_topics[i]
                    AND p.partition = fence_partitions[i];
                IF fence_epochs[i] IS NOT NULL THEN
                    SELECT o.epoch, o.event INTO last FROM partition_owners o
                    WHERE o.group_id = fence_group AND o.topic = fence_topics[i]
                        AND o.partition = fence_partitions[i]
                    ORDER BY o.epoch DESC, o.event DESC LIMIT 1;
                    IF last.epoch IS DISTINCT FROM fence_epochs[i] OR last.event <> 1 THEN
                        RETURN ARRAY[i, coalesce(stored, -1), coalesce(last.epoch, 0),
                            CASE WHEN last.event = 2 THEN 1 ELSE 0 END];
                    END IF;
                END IF;
                IF coalesce(stored, -1) <> fence_expected[i] THEN
                    RETURN ARRAY[i, coalesce(stored, -1), coalesce(fence_epochs[i], 0), 0];
                END IF;
            END LOOP;
            RETURN NULL;
        END $$
        """
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


def downgrade() -> None:
    op.execute(FUNCTION.replace("{make}", CREATED_IN_PLACE.strip()))
    # The terms are lost; an earlier release fences by positions alone.
    op.execute(
        "DROP FUNCTION referee_fence_owned(text, text[], integer[], bigint[], text[], bigint[])"
    )
    op.execute("DROP FUNCTION referee_take(text, text, integer[], text[], text, text[])")
    for table in reversed(NEW_TABLES):
        op.drop_table(table)
