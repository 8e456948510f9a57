"""``referee audit --topics``: the store compared with the output topics (Kafka read with the
service's settings), by ``processing/topics_audit.py``."""

from __future__ import annotations

from referee.cli.errors import UnavailableError
from referee.service.settings import Settings
from referee.store.database import create_engine
from referee.store.outbox_store import PostgresOutboxStore
from referee.usecases.topics_audit import (
    PublishedRecord,
    StoredRow,
    TopicsReport,
    compare_outbox,
)


async def audit_topics(url: str, settings: Settings) -> TopicsReport:
    """Compares both outboxes of the input topic with the verdict and dead-letter topics."""
    from aiokafka.errors import KafkaError

    from referee.service.kafka_options import consumer_options, kafka_security
    from referee.service.tails import read_topic

    options = consumer_options(settings, kafka_security(settings))
    report = TopicsReport()
    engine = create_engine(url, settings.db_pool_size, settings.db_max_overflow)
    try:
        store = PostgresOutboxStore(engine)
        for outbox, topic in (
            ("verdicts", settings.verdict_topic),
            ("dead_letters", settings.dlq_topic),
        ):
            rows = [
                StoredRow(p, position, body, withheld)
                for p, position, body, withheld in await store.every_row(
                    outbox, settings.input_topic
                )
            ]
            try:
                records = [
                    PublishedRecord(p, offset, value)
                    for p, offset, value in await read_topic(options, topic)
                ]
            except KafkaError as kafka:
                raise UnavailableError(
                    f"Kafka at {settings.kafka_bootstrap_servers}: {type(kafka).__name__}: {kafka}"
                ) from kafka
            compare_outbox(outbox, rows, records, report)
    finally:
        await engine.dispose()
    return report
