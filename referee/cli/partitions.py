"""``referee partitions [--accept]``: the input topic's partitions, as Kafka and the store see
them; ``--accept`` records a new count once every old partition is drained.

A game's events stay in one input partition only while the partition count stays the same.
``serve`` refuses an input topic whose count differs from the one recorded; after partitions
were added (docs/runbook.md, "Adding input partitions"), this command accepts the new count,
but only when every record of the old partitions has been processed: then no game has
earlier events waiting behind later ones.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from referee.cli.args import Commands
from referee.cli.database import (
    Database,
    choose_database,
    database_flags,
    engine_of,
    probe_schema,
    reaching,
    settings_or_exit,
)
from referee.cli.errors import EXIT_DIFFERENCE, EXIT_OK, UnavailableError

if TYPE_CHECKING:
    from referee.service.settings import Settings


@dataclass(slots=True)
class PartitionsReport:
    """What Kafka and the store say of the input topic's partitions."""

    topic: str
    recorded: int | None
    counts: dict[str, int]
    """The partition count of the input, verdict and dead-letter topics."""
    waiting: dict[int, int]
    """Records not yet processed, per partition of the input topic (those with some)."""

    @property
    def input_count(self) -> int:
        return self.counts[self.topic]

    def lines(self) -> list[str]:
        """Returns the printed report."""
        lines = [
            f"input topic {self.topic!r}: {self.input_count} partitions in Kafka, "
            + (
                "none recorded yet (serve records them at its first start)"
                if self.recorded is None
                else f"{self.recorded} recorded"
            )
        ]
        lines += [f"topic {t!r}: {n} partitions" for t, n in self.counts.items() if t != self.topic]
        if self.waiting:
            shown = ", ".join(f"{p}: {n}" for p, n in sorted(self.waiting.items()))
            lines.append(f"records waiting, by partition: {shown}")
        else:
            lines.append("every record of every partition is processed")
        return lines


def add(commands: Commands) -> None:
    """Adds ``referee partitions``."""
    partitions = commands.add(
        "partitions",
        "the input topic's partitions in Kafka and in the store; --accept records a new count",
        run,
    )
    database_flags(partitions)
    partitions.add_argument(
        "--accept",
        action="store_true",
        help="record the input topic's partition count (after partitions were added), once "
        "every record of the old partitions is processed (docs/runbook.md)",
    )
    partitions.add_argument(
        "--accept-gap",
        type=int,
        metavar="P",
        help="accept that input partition P's records between its stored position and the "
        "oldest Kafka still holds are lost (deleted before the referee processed them): a "
        "refused partition goes on from there (docs/runbook.md, 'A partition refused')",
    )


def run(args: argparse.Namespace) -> int:
    """Prints the partitions' state; with ``--accept``, records the input topic's count; with
    ``--accept-gap P``, accepts that partition P's missing input is lost."""
    import asyncio

    settings = settings_or_exit()
    db = choose_database(args.database, embedded=args.embedded, settings=settings)
    probe_schema(db, settings, "reads")
    if args.accept_gap is not None:
        with reaching(db):
            said = asyncio.run(_accept_gap(db, settings, args.accept_gap))
        print(said)
        return EXIT_OK
    with reaching(db):
        report = asyncio.run(_report(db, settings))
    for line in report.lines():
        print(line)
    if not args.accept:
        return EXIT_OK
    refusal = _refusal(report)
    if refusal is not None:
        print(f"not accepted: {refusal}", file=sys.stderr)
        return EXIT_DIFFERENCE
    if report.recorded == report.input_count:
        print(f"{report.input_count} partitions were recorded already")
        return EXIT_OK
    asyncio.run(_record(db, settings, report.input_count))
    print(f"accepted: the referee judges {report.topic!r} under {report.input_count} partitions")
    return EXIT_OK


def _refusal(report: PartitionsReport) -> str | None:
    """Says why the new count cannot be accepted yet (None: it can)."""
    for topic, count in report.counts.items():
        if count != report.input_count:
            return (
                f"topic {topic!r} has {count} partitions, the input topic {report.input_count}: "
                "give both output topics as many first"
            )
    if report.recorded is not None and report.input_count < report.recorded:
        return f"the input topic has fewer partitions than recorded ({report.recorded})"
    old = report.recorded if report.recorded is not None else report.input_count
    undrained = {p: n for p, n in report.waiting.items() if p < old}
    if undrained:
        shown = ", ".join(f"{p} ({n})" for p, n in sorted(undrained.items()))
        return (
            f"records of the old partitions are not all processed yet: {shown}. Stop the "
            "producers, let the referee drain them, then run this again"
        )
    return None


async def _report(db: Database, settings: Settings) -> PartitionsReport:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.errors import KafkaError

    from referee.service.kafka_options import consumer_options, kafka_security
    from referee.service.tails import partition_counts
    from referee.store.outbox_store import PostgresOutboxStore

    options = consumer_options(settings, kafka_security(settings))
    topics = [settings.input_topic, settings.verdict_topic, settings.dlq_topic]
    engine = engine_of(db, settings)
    try:
        store = PostgresOutboxStore(engine)
        recorded = await store.input_partitions(settings.group_id, settings.input_topic)
        try:
            counts = await partition_counts(options, topics)
            tps = [TopicPartition(settings.input_topic, p) for p in range(counts[topics[0]])]
            consumer = AIOKafkaConsumer(enable_auto_commit=False, group_id=None, **options)
            await consumer.start()
            try:
                ends = await consumer.end_offsets(tps) if tps else {}
            finally:
                await consumer.stop()
        except KafkaError as kafka:
            raise UnavailableError(
                f"Kafka at {settings.kafka_bootstrap_servers}: {type(kafka).__name__}: {kafka}"
            ) from kafka
        waiting: dict[int, int] = {}
        for tp, end in ends.items():
            done = await store.stored_position(settings.group_id, tp.topic, tp.partition) + 1
            if end > done:
                waiting[tp.partition] = end - done
    finally:
        await engine.dispose()
    return PartitionsReport(settings.input_topic, recorded, counts, waiting)


async def _accept_gap(db: Database, settings: Settings, partition: int) -> str:
    """Records that the partition's input from its stored position + 1 to the oldest record
    Kafka holds is lost; returns what was accepted."""
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.errors import KafkaError

    from referee.service.kafka_options import consumer_options, kafka_security
    from referee.store.outbox_store import PostgresOutboxStore

    options = consumer_options(settings, kafka_security(settings))
    tp = TopicPartition(settings.input_topic, partition)
    try:
        consumer = AIOKafkaConsumer(enable_auto_commit=False, group_id=None, **options)
        await consumer.start()
        try:
            start: int = (await consumer.beginning_offsets([tp]))[tp]
        finally:
            await consumer.stop()
    except KafkaError as kafka:
        raise UnavailableError(
            f"Kafka at {settings.kafka_bootstrap_servers}: {type(kafka).__name__}: {kafka}"
        ) from kafka
    engine = engine_of(db, settings)
    try:
        store = PostgresOutboxStore(engine)
        stored = await store.stored_position(settings.group_id, settings.input_topic, partition)
        needed = stored + 1
        if start <= needed:
            return (
                f"nothing to accept: partition {partition}'s input from offset {needed} is "
                f"still in Kafka (it starts at {start})"
            )
        await store.accept_gap(settings.group_id, settings.input_topic, partition, needed, start)
    finally:
        await engine.dispose()
    return (
        f"accepted: offsets {needed} to {start - 1} of partition {partition} of "
        f"{settings.input_topic!r} are lost; the referee goes on from {start} (games whose "
        "events were lost reject their later events as seq_gap)"
    )


async def _record(db: Database, settings: Settings, count: int) -> None:
    from referee.store.outbox_store import PostgresOutboxStore

    engine = engine_of(db, settings)
    try:
        store = PostgresOutboxStore(engine)
        await store.record_input_partitions(settings.group_id, settings.input_topic, count)
    finally:
        await engine.dispose()
