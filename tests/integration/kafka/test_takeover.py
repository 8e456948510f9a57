"""The takeover from release 0.1's global relay, on the real broker: every partition of each
output topic is read, not only as many as the input has (0.1 published by key, to any
partition of the output topics)."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from referee.service.kafka_options import publisher_producers
from referee.service.settings import Settings
from referee.service.tails import POSITION_HEADER, TopicTails
from referee.service.takeover import Preflight
from referee.store.database import create_engine
from referee.store.outbox_store import PostgresOutboxStore
from tests.integration.conftest import fetch
from tools.testkit.kafkatools import Topics

pytestmark = pytest.mark.kafka


async def test_the_takeover_reads_every_partition_of_the_output_topics(
    bootstrap: str, migrated_database: str, tmp_path: Path
) -> None:
    topics = Topics.fresh()
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        # the input has 2 partitions, the output topics 6 (release 0.1 allowed it)
        await admin.create_topics(
            [
                NewTopic(topics.input, 2, 1),
                NewTopic(topics.verdicts, 6, 1),
                NewTopic(topics.dlq, 6, 1),
            ]
        )
    finally:
        await admin.close()
    relay = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await relay.start()
    try:  # the global relay's records, by key: the furthest one on partition 5
        for partition, position in ((0, 10), (1, 12), (5, 40)):
            await (
                await relay.send(
                    topics.verdicts,
                    b"{}",
                    partition=partition,
                    headers=[(POSITION_HEADER, str(position).encode())],
                )
            )
    finally:
        await relay.stop()
    engine = create_engine(migrated_database)
    settings = Settings(group_id="g", kafka_bootstrap_servers=bootstrap)
    options = {"bootstrap_servers": bootstrap}
    try:
        preflight = Preflight(
            group_id="g",
            input_topic=topics.input,
            verdict_topic=topics.verdicts,
            dlq_topic=topics.dlq,
            transactional_prefix=f"referee-relay.{topics.input}",
            kafka_options=options,
            store=PostgresOutboxStore(engine),
            make_producer=publisher_producers(settings, None),
            tails=TopicTails(options),
        )
        await preflight.take_over()
    finally:
        await engine.dispose()
    recorded = await fetch(
        migrated_database,
        "SELECT outbox, position FROM outbox_checkpoints WHERE partition = -1 ORDER BY outbox",
    )
    assert {r["outbox"]: r["position"] for r in recorded} == {"dead_letters": 0, "verdicts": 40}
