"""Partitions added to the input topic (real broker): ``serve`` leaves the new partitions
unread while the old ones drain, nothing is lost, and ``referee partitions --accept`` records
the new count only once the old partitions are drained and the output topics follow
(docs/runbook.md, "Adding input partitions"). Output topics with fewer partitions than the
input are refused."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions

from tests.integration.kafka.checks import by_game
from tests.integration.kafka.conftest import Stack, close_stack, open_stack, replay_in_memory
from tests.reliability.harness import Store
from tools.testkit.kafkatools import drain, free_port, keyed_lines, produce

pytestmark = pytest.mark.kafka

UNAVAILABLE = 3


@pytest.fixture
async def two(bootstrap: str, admin_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    """A stack whose topics have two partitions."""
    s = await open_stack(bootstrap, admin_url, tmp_path, partitions=2)
    yield s
    await close_stack(s, admin_url)


def referee(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")},
        "REFEREE_DATABASE_URL": stack.database_url,
        "REFEREE_KAFKA_BOOTSTRAP_SERVERS": stack.bootstrap,
        "REFEREE_INPUT_TOPIC": stack.topics.input,
        "REFEREE_VERDICT_TOPIC": stack.topics.verdicts,
        "REFEREE_DLQ_TOPIC": stack.topics.dlq,
        "REFEREE_GROUP_ID": stack.group,
        "REFEREE_HTTP_HOST": "127.0.0.1",
        "REFEREE_HTTP_PORT": str(free_port()),
    }
    return subprocess.run(
        [sys.executable, "-m", "referee", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=env,
    )


async def grow(stack: Stack, topics: list[str], total: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=stack.bootstrap)
    await admin.start()
    try:
        await admin.create_partitions({t: NewPartitions(total_count=total) for t in topics})
    finally:
        await admin.close()


async def test_added_input_partitions_wait_unread_until_accepted_and_nothing_is_lost(
    two: Stack, simulated_log: Path, tmp_path: Path
) -> None:
    """An operator added a partition without draining first: the referee judges the old
    partitions only (the new one waits in Kafka, the instance not ready), ``--accept`` waits
    for the output topics and the drain, and after a restart every verdict is published once,
    as the in-memory replay gives them."""
    stack = two
    records = keyed_lines(simulated_log)
    half = len(records) // 2
    store = Store(stack.database_url)
    try:
        # given a referee that judged the first half on two partitions, and stopped
        await produce(stack.bootstrap, stack.topics.input, records[:half])
        process, _ = stack.start("first")
        await store.wait_until(half, limit=120)
        process.terminate()
        assert await asyncio.to_thread(process.wait, 60) == 0
        # when a partition is added to the input topic and the second half arrives
        await grow(stack, [stack.topics.input], 3)
        await produce(stack.bootstrap, stack.topics.input, records[half:])
        # then a referee judges the old partitions only, and says why it is not ready
        draining, port = stack.start("draining")
        await wait_for(lambda: readyz(port).startswith("the input topic"), 60)
        assert "has 3 partitions, the referee judges it under 2" in readyz(port)
        on_old = await offsets_on(stack, [0, 1])
        await store.wait_until(on_old, limit=120)
        await asyncio.sleep(2)
        assert await store.journaled() == on_old, "nothing of partition 2 is read"
        # and the new count is not accepted while the output topics have fewer partitions
        early = await asyncio.to_thread(referee, stack, "partitions", "--accept")
        assert early.returncode == 1
        assert "give both output topics as many first" in early.stderr
        # when they are grown too, it is accepted (the old partitions are drained)
        await grow(stack, [stack.topics.verdicts, stack.topics.dlq], 3)
        shown = await asyncio.to_thread(referee, stack, "partitions")
        assert "3 partitions in Kafka, 2 recorded" in shown.stdout
        accepted = await asyncio.to_thread(referee, stack, "partitions", "--accept")
        assert accepted.returncode == 0, accepted.stderr
        # and restarted, the referee judges partition 2 as well: every verdict once
        draining.terminate()
        assert await asyncio.to_thread(draining.wait, 60) == 0
        process, port = stack.start("after")
        await store.wait_until(len(records), limit=120)
        want = replay_in_memory(simulated_log, tmp_path)
        published = await drain(
            stack.bootstrap, stack.topics.verdicts, expect=len(want.verdicts), quiet_seconds=3
        )
        # each once; a game whose key moved has its verdicts on two partitions, each in order
        got = by_game([v.decode() for *_, v, _ in published])
        assert {g: sorted(vs) for g, vs in got.items()} == {
            g: sorted(vs) for g, vs in by_game(want.verdicts).items()
        }
        for partition in range(3):
            on_it = by_game([v.decode() for p, *_, v, _ in published if p == partition])
            for game, verdicts in on_it.items():
                assert verdicts == [v for v in by_game(want.verdicts)[game] if v in verdicts]
        await wait_for(lambda: readyz(port) == "ready", 30)
    finally:
        await store.close()


def readyz(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
            return str(r.read().decode()).strip()
    except urllib.error.HTTPError as failed:
        return str(failed.read().decode()).strip()
    except OSError:
        return ""


async def wait_for(done: Callable[[], bool], limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if await asyncio.to_thread(done):
            return
        await asyncio.sleep(0.2)
    raise AssertionError("not reached in time")


async def offsets_on(stack: Stack, partitions: list[int]) -> int:
    """How many records the input topic holds on these partitions."""
    consumer = AIOKafkaConsumer(bootstrap_servers=stack.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(stack.topics.input, p) for p in partitions]
        ends = await consumer.end_offsets(tps)
    finally:
        await consumer.stop()
    return int(sum(ends.values()))


async def test_a_new_count_is_accepted_once_the_old_partitions_are_drained(
    two: Stack, simulated_log: Path, tmp_path: Path
) -> None:
    stack = two
    records = keyed_lines(simulated_log)
    store = Store(stack.database_url)
    try:
        await produce(stack.bootstrap, stack.topics.input, records)
        process, _ = stack.start("first")
        await store.wait_until(len(records), limit=120)
        process.terminate()
        assert await asyncio.to_thread(process.wait, 60) == 0
        await grow(stack, [stack.topics.input, stack.topics.verdicts, stack.topics.dlq], 3)
        accepted = await asyncio.to_thread(referee, stack, "partitions", "--accept")
        assert accepted.returncode == 0, accepted.stderr
        assert "accepted: the referee judges" in accepted.stdout
        assert "under 3 partitions" in accepted.stdout
        # the referee goes on; every verdict once, as the in-memory replay gives them
        process, _ = stack.start("second")
        want = replay_in_memory(simulated_log, tmp_path)
        published = await drain(
            stack.bootstrap, stack.topics.verdicts, expect=len(want.verdicts), quiet_seconds=3
        )
        assert sorted(v.decode() for *_, v, _ in published) == sorted(want.verdicts)
        assert process.poll() is None
    finally:
        await store.close()


async def test_output_topics_with_fewer_partitions_than_the_input_are_refused(
    bootstrap: str, admin_url: str, tmp_path: Path
) -> None:
    stack = await open_stack(bootstrap, admin_url, tmp_path, partitions=1)
    try:
        await grow(stack, [stack.topics.input, stack.topics.dlq], 2)
        refused = await asyncio.to_thread(referee, stack, "serve")
    finally:
        await close_stack(stack, admin_url)
    assert refused.returncode == UNAVAILABLE, refused.stderr
    message = json.loads(refused.stderr.splitlines()[-1])["message"]
    assert f"topic {stack.topics.verdicts!r} has 1 partitions" in message
    assert "needs as many" in message
