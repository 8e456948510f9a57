"""Scenario 2: the broker and PostgreSQL restart mid-stream; the referee recovers by itself.

These restart the test services (``scripts/kafka.sh restart``, ``scripts/postgres.sh
restart``) on the ports of $REFEREE_TEST_KAFKA and $REFEREE_TEST_DATABASE_URL: every other
test using those services at the same moment sees the outage too.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.reliability.conftest import MakeStack, Simulated
from tests.reliability.harness import (
    SOAK,
    Figures,
    RssWatch,
    StallWatch,
    Store,
    count_in_logs,
    produce_paced,
    restart_service,
    verify,
)
from tools.testkit.kafkatools import keyed_lines, produce

pytestmark = [pytest.mark.reliability, pytest.mark.kafka]

GAMES = 1500 if SOAK else 320  # about 35,000 events in the short form


async def test_broker_restart_mid_stream(
    make_stack: MakeStack, simulated: Simulated, tmp_path: Path
) -> None:
    stack = await make_stack(partitions=4)
    log = simulated(GAMES, 21, "--bad-rate", "0.005", "--duplicate-rate", "0.005")
    records = keyed_lines(log)
    cut = len(records) * 6 // 10
    figures = Figures("broker_restart")
    store = Store(stack.database_url)
    rss = RssWatch()
    try:
        await produce(stack.bootstrap, stack.topics.input, records[:cut])
        process, _ = stack.start("referee")
        rss.watch(process.pid)
        stall = StallWatch(stack.database_url)
        await store.wait_until(len(records) // 5)
        at_restart = await store.journaled()
        figures["journaled_at_restart"] = at_restart
        stall.start()
        figures["broker_restart_s"] = round(await restart_service("kafka.sh"), 1)
        back = time.monotonic()
        feeding = asyncio.create_task(
            produce_paced(stack.bootstrap, stack.topics.input, records[cut:], seconds=10)
        )
        progress = await store.wait_progress(await store.journaled(), limit=120)
        figures["broker_back_to_first_commit_s"] = None if progress is None else round(progress, 2)
        await feeding
        figures["longest_stall_s"] = await stall.stop()
        await verify(stack, log, tmp_path, figures)
        figures["broker_back_to_caught_up_s"] = round(time.monotonic() - back, 1)
        figures["referee_survived"] = process.poll() is None
        assert process.poll() is None, "the referee died with the broker"
        assert progress is not None
    finally:
        figures["batch_failures"] = count_in_logs(stack, "batch failed")
        figures["publisher_failures"] = count_in_logs(stack, "publisher failed")
        figures["peak_rss_mb"] = await rss.stop()
        await store.close()
        figures.emit()


async def test_postgres_restart_mid_stream(
    make_stack: MakeStack, simulated: Simulated, tmp_path: Path
) -> None:
    stack = await make_stack(partitions=4)
    log = simulated(GAMES, 22, "--bad-rate", "0.005", "--duplicate-rate", "0.005")
    records = keyed_lines(log)
    figures = Figures("postgres_restart")
    store = Store(stack.database_url)
    rss = RssWatch()
    try:
        feeding = asyncio.create_task(
            produce_paced(stack.bootstrap, stack.topics.input, records, seconds=20)
        )
        process, _ = stack.start("referee")
        rss.watch(process.pid)
        stall = StallWatch(stack.database_url)
        await store.wait_until(len(records) // 4)
        figures["journaled_at_restart"] = await store.journaled()
        stall.start()
        figures["postgres_restart_s"] = round(await restart_service("postgres.sh"), 1)
        back = time.monotonic()
        progress = await store.wait_progress(await store.journaled(), limit=120)
        figures["postgres_back_to_first_commit_s"] = (
            None if progress is None else round(progress, 2)
        )
        await feeding
        figures["longest_stall_s"] = await stall.stop()
        await verify(stack, log, tmp_path, figures)
        figures["postgres_back_to_caught_up_s"] = round(time.monotonic() - back, 1)
        figures["referee_survived"] = process.poll() is None
        assert process.poll() is None, "the referee died with PostgreSQL"
        assert progress is not None
    finally:
        figures["batch_failures"] = count_in_logs(stack, "batch failed")
        figures["publisher_failures"] = count_in_logs(stack, "publisher failed")
        figures["peak_rss_mb"] = await rss.stop()
        await store.close()
        figures.emit()
