"""The probes of ``referee serve`` on the real broker: readiness that a rolling update can
pass, liveness that fails when the consumer is stuck."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from tests.integration.conftest import _plain
from tests.integration.kafka.conftest import Stack
from tests.integration.kafka.test_service import http_get, wait_ready
from tools.testkit.kafkatools import keyed_lines, produce

pytestmark = pytest.mark.kafka


async def probe(port: int, path: str) -> tuple[int, str]:
    return await asyncio.to_thread(http_get, port, path)


async def until(port: int, path: str, status: int, limit: float = 60) -> str:
    deadline = time.monotonic() + limit
    last = (0, "")
    while time.monotonic() < deadline:
        try:
            last = await probe(port, path)
        except OSError:
            last = (0, "not listening")
        if last[0] == status:
            return last[1]
        await asyncio.sleep(0.3)
    raise AssertionError(f"{path} never answered {status}; last: {last}")


def assigned(metrics: str) -> int:
    found = re.search(r"^referee_assigned_partitions (\S+)$", metrics, re.MULTILINE)
    assert found is not None
    return int(float(found.group(1)))


@pytest.fixture
async def one_partition(bootstrap: str, admin_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    from tests.integration.kafka.conftest import close_stack, open_stack

    stack = await open_stack(bootstrap, admin_url, tmp_path, partitions=1)
    yield stack
    await close_stack(stack, admin_url)


async def test_a_surge_instance_with_no_partition_to_take_becomes_ready(
    one_partition: Stack,
) -> None:
    stack = one_partition
    # replicas >= partitions: the chart renders REFEREE_READY_REQUIRES_PARTITION=false
    idle_ok = {"REFEREE_READY_REQUIRES_PARTITION": "false"}
    _, first = stack.start("first", extra_env=idle_ok)
    await wait_ready(first)
    # A rolling update's surge pod joins: the group has one partition for two members.
    _, surge = stack.start("surge", extra_env=idle_ok)
    await until(surge, "/readyz", 200)
    deadline = time.monotonic() + 60
    owned: list[int] = []
    while time.monotonic() < deadline:
        owned = [assigned((await probe(p, "/metrics"))[1]) for p in (first, surge)]
        statuses = [(await probe(p, "/readyz"))[0] for p in (first, surge)]
        if sorted(owned) == [0, 1] and statuses == [200, 200]:
            break
        await asyncio.sleep(0.5)
    assert sorted(owned) == [0, 1], "one member owns the partition, the other none"
    assert statuses == [200, 200], "both ready: the idle one joined and was given nothing"


async def test_liveness_fails_while_records_wait_and_no_batch_commits(
    stack: Stack, simulated_log: Path
) -> None:
    _, port = stack.start(extra_env={"REFEREE_LIVENESS_STALL_SECONDS": "3"})
    await wait_ready(port)
    assert (await probe(port, "/livez"))[0] == 200
    holder = await asyncpg.connect(_plain(stack.database_url))
    try:
        # Every batch's fence waits on this lock: the consumer cannot commit anything.
        await holder.execute("BEGIN; LOCK TABLE consumer_positions IN ACCESS EXCLUSIVE MODE")
        await produce(stack.bootstrap, stack.topics.input, keyed_lines(simulated_log)[:500])
        body = await until(port, "/livez", 503, limit=60)
        assert "consumer stuck" in body
        assert "records wait" in body
    finally:
        await holder.execute("ROLLBACK")
        await holder.close()
    await until(port, "/livez", 200, limit=60)  # it catches up and is alive again
