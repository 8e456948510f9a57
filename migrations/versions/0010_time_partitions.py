"""Time partitions: the five tables that grow with every record become partitioned tables.

- ``journal``, ``game_versions``, ``verdicts``, ``dead_letters`` and ``consumer_positions``
  are partitioned by range of ``recorded_at`` (declarative partitioning, no extension). A row
  takes ``recorded_at`` from its transaction's start (``now()``), so every row of one batch
  lands in one partition. The rows already stored are not rewritten: each old table becomes
  the partition ``<table>_p_legacy`` (from ``MINVALUE`` to the moment of this migration), after
  a scan that proves its rows lie below that moment.
- Partitions after it are made by ``referee_create_partitions(step, ahead)``, a function every
  role may execute, run with its owner's rights: it creates each table's partitions of
  ``step`` (aligned on multiples of it since 2000-01-01 UTC) up to ``now() + ahead``. It is
  the only way the application role touches the catalogue: it still may only SELECT and
  INSERT on the tables. ``referee migrate``, ``serve``, ``replay --database`` and
  ``maintain`` call it.
- ``carried_prints``: the fingerprints of the events of games still going on when their
  journal partition was archived, so a redelivered event is still told from a conflicting
  one without reading the archive (``referee archive``, docs/archive.md).
- Primary keys and unique constraints of a partitioned table must hold its partition key:
  they are now unique per ``(key, recorded_at)``; ``journal_game_seq`` is a plain index. The
  referee never relied on them to refuse a second write: the fence of ``referee_fence``
  decides that, under the partition's lock (docs/design.md).
- The journal's two prints indexes hold an 8-byte hash of each place instead of its text:
  ``journal_game_seq`` is on ``hashtextextended(game_id, seq)`` and ``journal_game_event`` on
  ``hashtextextended(event_id, hashtextextended(game_id, 0))``, neither partial (a partial
  index's statistics are not used to estimate its expression), and the step's lookups check
  the place itself on the rows found. A third of the journal's index bytes
  (docs/store.md, "Bytes an event").

Views are dropped and made again over the new tables (same definitions, same grants). The
whole migration is one transaction and takes ``ACCESS EXCLUSIVE`` locks on the five tables
while the legacy rows are scanned and the new unique indexes built on them: run it with the
service stopped (docs/store.md has its time per million rows).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

APP_ROLE = "referee_app"
READER_ROLE = "referee_reader"

# table -> (primary key, unique constraints, other indexes as "name (columns) [WHERE ...]")
TABLES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "journal": (
        "id",
        (),
        (
            "journal_game_seq ON {t} (hashtextextended(game_id, seq))",
            "journal_game_event ON {t} (hashtextextended(event_id, hashtextextended(game_id, 0)))",
        ),
    ),
    "game_versions": ("game_id, version", (), ()),
    "verdicts": (
        "position",
        ("verdict_id",),
        (
            "verdicts_game ON {t} (game_id, position)",
            (
                "verdicts_outbox ON {t} (source_topic, source_partition, position) "
                "WHERE source_partition IS NOT NULL"
            ),
            "verdicts_legacy ON {t} (position) WHERE source_partition IS NULL",
        ),
    ),
    "dead_letters": (
        "position",
        ("journal_id",),
        (
            (
                "dead_letters_outbox ON {t} (source_topic, source_partition, position) "
                "WHERE source_partition IS NOT NULL"
            ),
            "dead_letters_legacy ON {t} (position) WHERE source_partition IS NULL",
        ),
    ),
    "consumer_positions": ('group_id, topic, partition, "offset"', (), ()),
}
SEQUENCES = {"journal": "id", "verdicts": "position", "dead_letters": "position"}
# The indexes of 0009 that 0010 replaces by others of the same name (the journal's prints:
# an 8-byte hash of each place rather than its text, docs/store.md "Bytes an event"); the
# downgrade makes them again.
REPLACED = {
    "journal": (
        "UNIQUE INDEX journal_game_seq ON {t} (game_id, seq) WHERE took_place",
        "INDEX journal_game_event ON {t} (game_id, event_id) WHERE took_place",
    ),
}
VIEWS = ("current_games", "current_positions", "standings", "player_fouls", "verdict_log")

BOUNDS_FUNCTION = """
CREATE FUNCTION referee_partition_bounds(part regclass, OUT lower_bound timestamptz,
                                         OUT upper_bound timestamptz)
LANGUAGE sql STABLE SET search_path = pg_catalog AS $$
    SELECT (regexp_match(b, 'FROM \\(''([^'']*)''\\)'))[1]::timestamptz,
           (regexp_match(b, 'TO \\(''([^'']*)''\\)'))[1]::timestamptz
    FROM (SELECT pg_get_expr(c.relpartbound, c.oid) AS b FROM pg_class c WHERE c.oid = part) s
$$
"""

CREATE_FUNCTION = """
CREATE FUNCTION referee_create_partitions(step interval, ahead interval) RETURNS timestamptz
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog AS $$
DECLARE
    t text;
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
            EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                t || '_p' || to_char(start_at AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS'),
                t, start_at, stop_at);
            start_at := stop_at;
        END LOOP;
        covered := least(covered, greatest(start_at, last_upper));
    END LOOP;
    RETURN covered;
END $$
"""


def _views() -> list[tuple[str, str]]:
    rows = op.get_bind().execute(
        text(
            "SELECT c.relname, pg_get_viewdef(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind = 'v' AND n.nspname = current_schema()"
        )
    )
    found = dict(rows.all())
    ordered = [v for v in VIEWS if v in found] + sorted(set(found) - set(VIEWS))
    return [(v, found[v]) for v in ordered]


def _grant(objects: str, app: str, reader: str) -> None:
    op.execute(
        f"""
        DO $$ BEGIN
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                GRANT {app} ON {objects} TO {APP_ROLE};
            END IF;
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{READER_ROLE}') THEN
                GRANT {reader} ON {objects} TO {READER_ROLE};
            END IF;
        END $$
        """
    )


def _append_only(table: str) -> None:
    op.execute(
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
        "FOR EACH ROW EXECUTE FUNCTION referee_append_only()"
    )
    op.execute(
        f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
        "FOR EACH STATEMENT EXECUTE FUNCTION referee_append_only()"
    )


def _keys(table: str, key: str, uniques: tuple[str, ...], indexes: tuple[str, ...]) -> None:
    with_time = ", recorded_at" if key else ""
    op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY ({key}{with_time})")
    for column in uniques:
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT {table}_{column}_key UNIQUE ({column}{with_time})"
        )
    for index in indexes:
        op.execute("CREATE INDEX " + index.format(t=table))


def upgrade() -> None:
    bind = op.get_bind()
    views = _views()
    for name, _ in reversed(views):
        op.execute(f"DROP VIEW {name}")
    cut = bind.execute(text("SELECT quote_literal(now())")).scalar_one()  # DDL takes no parameters
    for table, (key, uniques, indexes) in TABLES.items():
        legacy = f"{table}_p_legacy"
        op.execute(f"ALTER TABLE {table} RENAME TO {legacy}")
        for old in bind.execute(
            text("SELECT conname FROM pg_constraint WHERE conrelid = CAST(:t AS regclass)"),
            {"t": legacy},
        ).scalars():
            op.execute(f"ALTER TABLE {legacy} RENAME CONSTRAINT {old} TO {old}_legacy")
        for old in bind.execute(
            text(
                "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
                "WHERE x.indrelid = CAST(:t AS regclass) AND NOT EXISTS ("
                "SELECT FROM pg_constraint c WHERE c.conindid = x.indexrelid)"
            ),
            {"t": legacy},
        ).scalars():
            op.execute(f"ALTER INDEX {old} RENAME TO {old}_legacy")
        for index in REPLACED.get(table, ()):  # the partition takes the new ones instead
            op.execute(f"DROP INDEX {index.split(' ON ', 1)[0].split()[-1]}_legacy")
        op.execute(f"DROP TRIGGER {table}_append_only ON {legacy}")
        op.execute(f"DROP TRIGGER {table}_no_truncate ON {legacy}")
        op.execute(
            f"CREATE TABLE {table} (LIKE {legacy} INCLUDING DEFAULTS INCLUDING COMMENTS "
            "INCLUDING STORAGE) PARTITION BY RANGE (recorded_at)"
        )
        if table in SEQUENCES:
            op.execute(
                f"ALTER SEQUENCE {table}_{SEQUENCES[table]}_seq OWNED BY {table}.{SEQUENCES[table]}"
            )
        op.execute(
            f"COMMENT ON TABLE {table} IS "
            + bind.execute(
                text("SELECT quote_literal(obj_description(CAST(:t AS regclass), 'pg_class'))"),
                {"t": legacy},
            ).scalar_one()
        )
        _keys(table, key, uniques, indexes)
        op.execute(
            f"COMMENT ON COLUMN {table}.recorded_at IS 'the time partition key (migration 0010)'"
        )
        # a partition takes the parent's primary key (built on it as it is attached)
        op.execute(f"ALTER TABLE {legacy} DROP CONSTRAINT {table}_pkey_legacy")
        # the scan that lets ATTACH skip its own: every legacy row lies below the cut
        op.execute(
            f"ALTER TABLE {legacy} ADD CONSTRAINT {legacy}_range CHECK (recorded_at < {cut})"
        )
        op.execute(
            f"ALTER TABLE {table} ATTACH PARTITION {legacy} FOR VALUES FROM (MINVALUE) TO ({cut})"
        )
        _append_only(table)
        _grant(table, "SELECT, INSERT", "SELECT")
    for name, definition in views:
        op.execute(f"CREATE VIEW {name} AS {definition}")
        _grant(name, "SELECT", "SELECT")
    op.execute(BOUNDS_FUNCTION)
    op.execute(
        "COMMENT ON FUNCTION referee_partition_bounds(regclass) IS 'The [lower, upper) "
        "recorded_at range of a time partition (lower NULL: from MINVALUE).'"
    )
    op.execute(CREATE_FUNCTION)
    op.execute(
        "COMMENT ON FUNCTION referee_create_partitions(interval, interval) IS 'Creates the "
        "time partitions of the five partitioned tables up to now() + ahead; returns how far "
        "they all reach.'"
    )
    op.execute(
        "CREATE TABLE carried_prints ("
        "game_id text NOT NULL, seq bigint NOT NULL, event_id text, fingerprint bytea NOT NULL,"
        " journal_id bigint NOT NULL, recorded_at timestamptz NOT NULL DEFAULT now(),"
        " PRIMARY KEY (game_id, seq))"
    )
    op.execute("CREATE INDEX carried_prints_event ON carried_prints (game_id, event_id)")
    op.execute(
        "COMMENT ON TABLE carried_prints IS 'The prints (seq, event id, fingerprint) of the "
        "events of games still going on when their journal partition was archived.'"
    )
    _append_only("carried_prints")
    _grant("carried_prints", "SELECT", "SELECT")


def downgrade() -> None:
    """Back to plain tables: every row is copied (a rewrite; the archive is not read back)."""
    bind = op.get_bind()
    views = _views()
    for name, _ in reversed(views):
        op.execute(f"DROP VIEW {name}")
    op.execute("DROP TABLE carried_prints")
    op.execute("DROP FUNCTION referee_create_partitions(interval, interval)")
    for table, (key, uniques, indexes) in TABLES.items():
        partitioned = f"{table}_partitioned"
        op.execute(f"ALTER TABLE {table} RENAME TO {partitioned}")
        for old in bind.execute(
            text("SELECT conname FROM pg_constraint WHERE conrelid = CAST(:t AS regclass)"),
            {"t": partitioned},
        ).scalars():
            op.execute(f"ALTER TABLE {partitioned} RENAME CONSTRAINT {old} TO {old}_partitioned")
        for index in indexes:
            name = index.split(" ", 1)[0]
            op.execute(f"ALTER INDEX {name} RENAME TO {name}_partitioned")
        op.execute(
            f"CREATE TABLE {table} (LIKE {partitioned} INCLUDING DEFAULTS INCLUDING COMMENTS)"
        )
        op.execute(f"INSERT INTO {table} SELECT * FROM {partitioned}")
        if table in SEQUENCES:
            op.execute(
                f"ALTER SEQUENCE {table}_{SEQUENCES[table]}_seq OWNED BY {table}.{SEQUENCES[table]}"
            )
        op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY ({key})")
        for column in uniques:
            op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_{column}_key UNIQUE ({column})")
        for index in REPLACED.get(table, tuple(f"INDEX {i}" for i in indexes)):
            op.execute("CREATE " + index.format(t=table))
        op.execute(f"DROP TABLE {partitioned} CASCADE")
        _append_only(table)
        _grant(table, "SELECT, INSERT", "SELECT")
    op.execute("DROP FUNCTION referee_partition_bounds(regclass)")
    for name, definition in views:
        op.execute(f"CREATE VIEW {name} AS {definition}")
        _grant(name, "SELECT", "SELECT")
