"""Time partitions attached, not created in place: making one no longer stops the writers.

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

It replaces a function body only: safe with the service running (docs/store.md).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-08
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

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


def downgrade() -> None:
    op.execute(FUNCTION.replace("{make}", CREATED_IN_PLACE.strip()))
