"""The append-only tables of the referee (SQLAlchemy 2 Core); created only by migrations."""

from __future__ import annotations

import re
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    Table,
    Text,
    UniqueConstraint,
    func,
)

metadata = MetaData()

APPEND_ONLY_TABLES = (
    "journal",
    "game_versions",
    "verdicts",
    "dead_letters",
    "consumer_positions",
    "relay_checkpoints",
    "outbox_checkpoints",
    "input_partitions",
    "game_revisions",
    "carried_prints",
    "partition_owners",
    "withheld_rows",
    "input_gaps",
)
"""Tables no UPDATE, DELETE or TRUNCATE may touch (triggers raise)."""

APP_ROLE = "referee_app"
"""The application role: SELECT and INSERT only."""


def _source_columns() -> tuple[Column[str], Column[int]]:
    """The input partition an outbox row belongs to (migration 0008; NULL before it)."""
    return (
        Column(
            "source_topic",
            Text,
            comment="the input record's topic (NULL: before revision 0008, see journal)",
        ),
        Column(
            "source_partition",
            Integer,
            comment="the input record's partition: the outbox this row is in",
        ),
    )


def _outbox_indexes(table: Table) -> None:
    """An owner reads its partition's rows in position order; rows from before revision 0008
    (no partition) by position alone."""
    Index(
        f"{table.name}_outbox",
        table.c.source_topic,
        table.c.source_partition,
        table.c.position,
        postgresql_where=table.c.source_partition.isnot(None),
    )
    Index(
        f"{table.name}_legacy",
        table.c.position,
        postgresql_where=table.c.source_partition.is_(None),
    )


def _partition_key() -> Column[datetime]:
    """``recorded_at`` of a time-partitioned table: its transaction's start, part of its keys."""
    return Column(
        "recorded_at",
        DateTime(timezone=True),
        primary_key=True,
        nullable=False,
        server_default=func.now(),
        comment="the time partition key (migration 0010)",
    )


journal = Table(
    "journal",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True, comment="arrival order"),
    Column("source_topic", Text, nullable=False, comment="Kafka topic, or file:<path>"),
    Column("source_partition", Integer, nullable=False),
    Column("source_offset", BigInteger, nullable=False, comment="Kafka offset or line number"),
    Column("game_id", Text),
    Column("seq", BigInteger),
    Column("event_id", Text),
    Column("event_type", Text),
    Column("outcome", Text, nullable=False, comment="applied, fouled, rejected, duplicate"),
    Column("reason", Text, comment="rejection reason code"),
    Column("took_place", Boolean, nullable=False, comment="took the next seq of its game"),
    Column("fingerprint", LargeBinary, nullable=False),
    Column("raw", LargeBinary, nullable=False, comment="the record exactly as received"),
    _partition_key(),
    Column(
        "max_event_bytes",
        BigInteger,
        comment="the size limit the record was judged under (NULL: before revision 0003)",
    ),
    Column(
        "referee_version",
        Text,
        comment="the referee release that wrote the row (NULL: before migration 0011)",
    ),
    postgresql_partition_by="RANGE (recorded_at)",
    comment="Every input record received, in arrival order, with its outcome.",
)
# The prints' places, each by an 8-byte hash rather than its text (migration 0010); the
# lookups (store/step_store.py) check the place itself on the rows found.
Index("journal_game_seq", func.hashtextextended(journal.c.game_id, journal.c.seq))
Index(
    "journal_game_event",
    func.hashtextextended(journal.c.event_id, func.hashtextextended(journal.c.game_id, 0)),
)

game_versions = Table(
    "game_versions",
    metadata,
    Column("game_id", Text, primary_key=True),
    Column("version", BigInteger, primary_key=True, comment="the last seq folded into this state"),
    Column("state", Text, nullable=False),  # the state codec's JSON, as written (0007)
    Column("journal_id", BigInteger, nullable=False, comment="the last journal row folded"),
    _partition_key(),
    postgresql_partition_by="RANGE (recorded_at)",
    comment="The projection: each game's folded state, a version per processed batch.",
)

verdicts = Table(
    "verdicts",
    metadata,
    Column("position", BigInteger, primary_key=True, autoincrement=True, comment="outbox order"),
    Column("verdict_id", Text, nullable=False),
    Column("game_id", Text, nullable=False),
    Column("type", Text, nullable=False),
    Column("cause_seq", BigInteger, nullable=False),
    Column("journal_id", BigInteger, nullable=False),
    Column("body", Text, nullable=False, comment="the canonical JSON, byte for byte"),
    _partition_key(),
    *_source_columns(),
    UniqueConstraint("verdict_id", "recorded_at", name="verdicts_verdict_id_key"),
    postgresql_partition_by="RANGE (recorded_at)",
    comment="Every verdict, in the order produced; also the outbox of the verdict topic.",
)
Index("verdicts_game", verdicts.c.game_id, verdicts.c.position)
_outbox_indexes(verdicts)

dead_letters = Table(
    "dead_letters",
    metadata,
    Column("position", BigInteger, primary_key=True, autoincrement=True, comment="outbox order"),
    Column("journal_id", BigInteger, nullable=False),
    Column("key", LargeBinary, comment="the input record's key, as received"),
    Column("reason", Text, nullable=False),
    Column("body", Text, nullable=False, comment="EventRejected, canonical JSON"),
    _partition_key(),
    *_source_columns(),
    UniqueConstraint("journal_id", "recorded_at", name="dead_letters_journal_id_key"),
    postgresql_partition_by="RANGE (recorded_at)",
    comment="Every rejected input as EventRejected; the outbox of the dead-letter topic.",
)
_outbox_indexes(dead_letters)

consumer_positions = Table(
    "consumer_positions",
    metadata,
    Column("group_id", Text, primary_key=True),
    Column("topic", Text, primary_key=True),
    Column("partition", Integer, primary_key=True),
    Column("offset", BigInteger, primary_key=True, comment="the last offset processed"),
    Column("journal_id", BigInteger, nullable=False),
    _partition_key(),
    postgresql_partition_by="RANGE (recorded_at)",
    comment="Input positions processed, written with the rows they account for.",
)

relay_checkpoints = Table(
    "relay_checkpoints",
    metadata,
    Column("outbox", Text, primary_key=True, comment="verdicts or dead_letters"),
    Column(
        "position",
        BigInteger,
        primary_key=True,
        comment="every outbox row up to here is on its topic",
    ),
    Column("recorded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    comment="Relay progress, appended as it goes; the newest row per outbox counts.",
)

outbox_checkpoints = Table(
    "outbox_checkpoints",
    metadata,
    Column("outbox", Text, primary_key=True, comment="verdicts or dead_letters"),
    Column("topic", Text, primary_key=True, comment="the input topic"),
    Column(
        "partition",
        Integer,
        primary_key=True,
        comment="the input partition (-1: every partition)",
    ),
    Column(
        "position",
        BigInteger,
        primary_key=True,
        comment="every row of the partition's outbox up to here is on its topic",
    ),
    Column("recorded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    comment="Each input partition's publishing progress, appended as it goes; the newest row "
    "counts.",
)

input_partitions = Table(
    "input_partitions",
    metadata,
    Column("group_id", Text, primary_key=True),
    Column("topic", Text, primary_key=True),
    Column("partitions", Integer, primary_key=True, comment="the input topic's partitions"),
    Column("recorded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    comment="The partition count the referee judges the input topic under; the newest row counts.",
)

game_revisions = Table(
    "game_revisions",
    metadata,
    Column("game_id", Text, primary_key=True),
    Column(
        "rules_revision",
        Integer,
        nullable=False,
        comment="the rules revision the game is judged under",
    ),
    Column(
        "referee_version",
        Text,
        nullable=False,
        comment="the version of the referee that started the game",
    ),
    Column(
        "journal_id",
        BigInteger,
        nullable=False,
        comment="the journal row of the game's GameStarted",
    ),
    Column("recorded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    comment="The rules revision each game was pinned to at its GameStarted (none: started "
    "before migration 0009, revision 1).",
)

carried_prints = Table(
    "carried_prints",
    metadata,
    Column("game_id", Text, primary_key=True),
    Column("seq", BigInteger, primary_key=True),
    Column("event_id", Text),
    Column("fingerprint", LargeBinary, nullable=False),
    Column("journal_id", BigInteger, nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    comment="The prints (seq, event id, fingerprint) of the events of games still going on "
    "when their journal partition was archived.",
)
Index("carried_prints_event", carried_prints.c.game_id, carried_prints.c.event_id)

partition_owners = Table(
    "partition_owners",
    metadata,
    Column("group_id", Text, primary_key=True),
    Column("topic", Text, primary_key=True, comment="the input topic"),
    Column("partition", Integer, primary_key=True),
    Column("epoch", BigInteger, primary_key=True, comment="the term, from 1"),
    Column("event", SmallInteger, primary_key=True, comment="1: taken, 2: given back cleanly"),
    Column("owner", Text, nullable=False, comment="the instance, for people"),
    Column(
        "transactional_id",
        Text,
        nullable=False,
        comment="the Kafka transactional id the owner publishes the partition with",
    ),
    Column("recorded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    comment="Each input partition's terms of ownership, appended as instances take and give "
    "back partitions; the newest term counts.",
)

withheld_rows = Table(
    "withheld_rows",
    metadata,
    Column("outbox", Text, primary_key=True, comment="verdicts or dead_letters"),
    Column("topic", Text, primary_key=True, comment="the input topic"),
    Column("partition", Integer, primary_key=True, comment="the input partition"),
    Column("position", BigInteger, primary_key=True, comment="the row's position"),
    Column("cause", BigInteger, comment="its input record's offset"),
    Column("reason", Text, nullable=False, comment="what the broker said"),
    Column("recorded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    comment="Outbox rows the broker refused for good: kept in the store, not published.",
)

input_gaps = Table(
    "input_gaps",
    metadata,
    Column("group_id", Text, primary_key=True),
    Column("topic", Text, primary_key=True, comment="the input topic"),
    Column("partition", Integer, primary_key=True),
    Column("first_missing", BigInteger, nullable=False, comment="the first offset lost"),
    Column(
        "next_offset",
        BigInteger,
        primary_key=True,
        comment="the offset the partition goes on from (the log start when accepted)",
    ),
    Column("recorded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    comment="Input records an operator accepted as lost: the partition goes on after them.",
)

TIME_PARTITION_PATTERN = (
    "(journal|game_versions|verdicts|dead_letters|consumer_positions)_p(_legacy|[0-9]{8}t[0-9]{6})"
)
"""The name of a time partition, as Python's and PostgreSQL's regular expressions read it."""
_TIME_PARTITION = re.compile(TIME_PARTITION_PATTERN)


def is_time_partition(name: str | None) -> bool:
    """Checks if a table is one of the time partitions (made at run time, not modelled)."""
    return name is not None and _TIME_PARTITION.fullmatch(name) is not None


def include_object(
    obj: object,
    name: str | None,
    type_: str,
    reflected: bool,  # noqa: ARG001 - Alembic's signature
    compare_to: object,  # noqa: ARG001
) -> bool:
    """Alembic's filter: leaves the time partitions and their indexes out of comparisons."""
    if type_ == "table":
        return not is_time_partition(name)
    table = getattr(obj, "table", None)
    return not is_time_partition(getattr(table, "name", None))
