"""Scenario: oversized records on the way in, and a dead-letter topic that refuses what it gets.

Records with a 900,000-byte key, a body near the broker's megabyte, headers of 900 KB, sent
to one partition amid a game stream: each is dead-lettered (its key cut to what a dead letter
carries, marked ``key-cut``; the whole record stays in the store), and every later record of
the partition is judged and its rejections published. Then the dead-letter topic's
``max.message.bytes`` is lowered below a dead letter the referee must publish: the broker
refuses it, the row is withheld (recorded, counted), never retried for ever, and the
partition's later dead letters are published all the same.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from tests.integration.kafka.checks import by_game
from tests.integration.kafka.conftest import Stack
from tests.integration.kafka.test_service import http_get
from tests.reliability.conftest import MakeStack, Simulated
from tests.reliability.harness import Figures, Store, replay
from tools.testkit.kafkatools import drain, keyed_lines, produce

pytestmark = [pytest.mark.reliability, pytest.mark.kafka]

KEY_CUT = 16 * 1024


async def send(
    bootstrap: str,
    topic: str,
    records: list[tuple[bytes | None, bytes, list[tuple[str, bytes]]]],
    partition: int,
) -> None:
    """Sends records with keys and headers to one partition (up to the broker's limit)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_request_size=1_040_000)
    await producer.start()
    try:
        for key, value, headers in records:
            await (await producer.send(topic, value, key=key, partition=partition, headers=headers))
    finally:
        await producer.stop()


async def limit_topic(bootstrap: str, topic: str, max_bytes: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.alter_configs(
            [
                ConfigResource(
                    ConfigResourceType.TOPIC, topic, configs={"max.message.bytes": str(max_bytes)}
                )
            ]
        )
    finally:
        await admin.close()


async def test_oversized_records_never_stop_a_partitions_output(
    make_stack: MakeStack, simulated: Simulated, tmp_path: Path
) -> None:
    stack: Stack = await make_stack(partitions=2)
    log = simulated(120, 81, "--bad-rate", "0.01")
    records = keyed_lines(log)
    want = replay(log, tmp_path)
    figures = Figures("oversized_records")
    huge_key = b"k" * 900_000
    hostile: list[tuple[bytes | None, bytes, list[tuple[str, bytes]]]] = [
        # control characters, escaped six bytes each: a 1.41 MB dead letter before 0.5.0
        (huge_key, b"\x01" * 85_000, []),
        (b"t-1", b"{" * 1_000_000, []),  # a body near the broker's megabyte
        (b"t-2", b'{"type": "Passed"}', [(f"h{i}", b"v" * 90_000) for i in range(10)]),
        (huge_key[:20_000], b"not json", []),
    ]
    half = len(records) // 2
    process, port = stack.start("referee")
    store = Store(stack.database_url)
    try:
        await produce(stack.bootstrap, stack.topics.input, records[:half])
        await send(stack.bootstrap, stack.topics.input, hostile, partition=0)
        await produce(stack.bootstrap, stack.topics.input, records[half:])
        await store.wait_until(len(records) + len(hostile), limit=180)
        dead = await drain(
            stack.bootstrap,
            stack.topics.dlq,
            expect=len(want.rejections) + len(hostile),
            quiet_seconds=3,
        )
        keys = {len(k or b""): h for _, _, k, _, h in dead}
        figures["dead_letters"] = len(dead)
        figures["longest_dead_letter_bytes"] = max(len(v) + len(k or b"") for _, _, k, v, _ in dead)
        assert len(dead) == len(want.rejections) + len(hostile), "each once, none stuck"
        assert max(keys) == KEY_CUT, "the key cut to what a dead letter carries"
        assert keys[KEY_CUT]["key-cut"] in (b"900000", b"20000")
        assert figures["longest_dead_letter_bytes"] < 1_000_000
        verdicts = await drain(
            stack.bootstrap, stack.topics.verdicts, expect=len(want.verdicts), quiet_seconds=3
        )
        published = [v.decode() for *_, v, _ in verdicts]
        assert by_game(published) == by_game(want.verdicts), "every later record judged"
        stored_key = await store_key_length(stack)
        assert stored_key == 900_000, "the whole key stays in the store"

        # the dead-letter topic now refuses what a dead letter of 200 KB is
        await limit_topic(stack.bootstrap, stack.topics.dlq, 100_000)
        await asyncio.sleep(1.0)
        more: list[tuple[bytes | None, bytes, list[tuple[str, bytes]]]] = [
            (b"t-3", b"y" * 200_000, []),  # too_large: carried whole, 200 KB of JSON
            (b"t-4", b"not json either", []),  # a small one after it, same partition
        ]
        await send(stack.bootstrap, stack.topics.input, more, partition=0)
        after = await drain(
            stack.bootstrap, stack.topics.dlq, expect=len(dead) + 1, quiet_seconds=3
        )
        figures["dead_letters_after_the_limit"] = len(after) - len(dead)
        assert len(after) == len(dead) + 1, "the small one published, the refused one not"
        assert json.loads(after[-1][3])["raw"] == "not json either"
        _, metrics = await asyncio.to_thread(http_get, port, "/metrics")
        withheld = [
            line for line in metrics.splitlines() if line.startswith("referee_withheld_rows_total")
        ]
        figures["withheld_metric"] = withheld
        assert 'referee_withheld_rows_total{outbox="dead_letters"} 1.0' in withheld
        assert await withheld_rows(stack) == 1
        status, why = await asyncio.to_thread(http_get, port, "/readyz")
        assert status == 200, why
        assert process.poll() is None
    finally:
        await store.close()
        figures.emit()


async def store_key_length(stack: Stack) -> int:
    store = Store(stack.database_url)
    try:
        conn = await store._connection()
        return int(await conn.fetchval("SELECT max(length(key)) FROM dead_letters"))
    finally:
        await store.close()


async def withheld_rows(stack: Stack) -> int:
    store = Store(stack.database_url)
    try:
        conn = await store._connection()
        return int(await conn.fetchval("SELECT count(*) FROM withheld_rows"))
    finally:
        await store.close()
