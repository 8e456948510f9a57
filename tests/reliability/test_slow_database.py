"""Scenario 5: a slow database: commits crawl and stall while the stream keeps flowing.

Two kinds of slowness, installed only in this test's database: first a statement trigger on
``consumer_positions`` that sleeps in every commit of the processing step, then a test
connection that repeatedly holds an ACCESS EXCLUSIVE lock on ``consumer_positions`` for a few
seconds. The consumer must wait (no batch commits while the lock is held: back-pressure,
not buffering), its memory must stay bounded, and nothing may be lost or doubled.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import asyncpg
import pytest

from tests.reliability.conftest import MakeStack, Simulated
from tests.reliability.harness import (
    SOAK,
    Figures,
    RssWatch,
    Store,
    plain,
    produce_paced,
    rss_mb,
    verify,
)
from tools.testkit.kafkatools import keyed_lines

pytestmark = [pytest.mark.reliability, pytest.mark.kafka]

GAMES = 1500 if SOAK else 300
FEED_SECONDS = 90 if SOAK else 24
SLEEP_PER_COMMIT = 0.3
LOCK_SECONDS = 3.0
RSS_BOUND_MB = 600

SLOW_TRIGGER = f"""
CREATE FUNCTION reliability_slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep({SLEEP_PER_COMMIT}); RETURN NULL; END $$;
CREATE TRIGGER reliability_slow_commit AFTER INSERT ON consumer_positions
FOR EACH STATEMENT EXECUTE FUNCTION reliability_slow_commit();
"""


async def test_slow_database_applies_back_pressure(
    make_stack: MakeStack, simulated: Simulated, tmp_path: Path
) -> None:
    stack = await make_stack(partitions=4)
    log = simulated(GAMES, 51, "--bad-rate", "0.005", "--duplicate-rate", "0.005")
    records = keyed_lines(log)
    figures = Figures("slow_database")
    store = Store(stack.database_url)
    rss = RssWatch()
    admin = await asyncpg.connect(plain(stack.database_url))
    current_rss: list[float] = []
    try:
        await admin.execute(SLOW_TRIGGER)
        feeding = asyncio.create_task(
            produce_paced(stack.bootstrap, stack.topics.input, records, FEED_SECONDS)
        )
        process, _ = stack.start("referee")
        rss.watch(process.pid)

        async def sample_rss() -> None:
            while True:
                value = rss_mb(process.pid)
                if value is not None:
                    current_rss.append(value)
                await asyncio.sleep(0.25)

        sampler = asyncio.create_task(sample_rss())
        # phase 1: every commit of the step sleeps
        assert await store.wait_progress(0, limit=60) is not None
        phase = time.monotonic()
        start_n = await store.journaled()
        await asyncio.sleep(FEED_SECONDS / 3)
        figures["slow_commit_phase_events_per_s"] = round(
            (await store.journaled() - start_n) / (time.monotonic() - phase), 1
        )
        await admin.execute("DROP TRIGGER reliability_slow_commit ON consumer_positions")
        # phase 2: the positions table is locked for seconds at a time
        windows = stalled = 0
        held = 0.0
        while not feeding.done() or windows < 3:
            async with admin.transaction():
                await admin.execute("LOCK TABLE consumer_positions IN ACCESS EXCLUSIVE MODE")
                locked_at = time.monotonic()
                before = await store.journaled()
                await asyncio.sleep(LOCK_SECONDS)
                after = await store.journaled()
                held += time.monotonic() - locked_at
            windows += 1
            stalled += after == before
            await asyncio.sleep(1.0)
        await feeding
        lag_at_end = len(records) - await store.journaled()
        released = time.monotonic()
        figures["events"] = len(records)
        figures["lock_windows"] = windows
        figures["lock_windows_without_commit"] = stalled
        figures["lock_held_s"] = round(held, 1)
        figures["backlog_when_feed_ended"] = lag_at_end
        await verify(stack, log, tmp_path, figures)
        figures["catch_up_after_slowness_s"] = round(time.monotonic() - released, 1)
        sampler.cancel()
        figures["rss_max_sampled_mb"] = round(max(current_rss), 1)
        figures["peak_rss_mb"] = await rss.stop()
        assert stalled == windows, "a batch committed while its positions were locked"
        assert figures["peak_rss_mb"] < RSS_BOUND_MB, "memory grew under back-pressure"
        assert process.poll() is None
    finally:
        figures["peak_rss_mb"] = await rss.stop()
        await admin.close()
        await store.close()
        figures.emit()
