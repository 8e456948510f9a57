"""Scenario 1: SIGKILL ``referee serve`` at random moments, 25+ times over 100,000 events.

The stream is fed in lockstep with the kills: before each life of the service the next slice
of the log is published, so every kill lands while the stream is flowing (most of them while
a backlog is being worked off, a few during start-up and partition assignment). At the end
one instance finishes the stream and the stored and published verdicts are compared with
``referee replay`` of the same log.
"""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import pytest

from tests.reliability.conftest import MakeStack, Simulated
from tests.reliability.harness import (
    SOAK,
    Figures,
    RssWatch,
    Store,
    count_in_logs,
    kill,
    spread,
    verify,
)
from tools.testkit.kafkatools import keyed_lines, produce

pytestmark = [pytest.mark.reliability, pytest.mark.kafka]

KILLS = 80 if SOAK else 25
GAMES = 2800 if SOAK else 930  # about 109 events a game: >= 100,000 events in the short form


async def test_crash_loop_sigkill_at_random_moments(
    make_stack: MakeStack, simulated: Simulated, tmp_path: Path
) -> None:
    stack = await make_stack(partitions=4)
    log = simulated(
        GAMES, 11, "--foul-rate", "0.02", "--bad-rate", "0.005", "--duplicate-rate", "0.005"
    )
    records = keyed_lines(log)
    assert len(records) >= 100_000
    slices = [
        records[i * len(records) // KILLS : (i + 1) * len(records) // KILLS] for i in range(KILLS)
    ]
    figures = Figures("crash_loop")
    rng = random.Random(20261130)
    store = Store(stack.database_url)
    rss = RssWatch()
    recover: list[float] = []
    produced = 0
    kills = early = backlog_kills = 0
    try:
        for i, chunk in enumerate(slices):
            await produce(stack.bootstrap, stack.topics.input, chunk)
            produced += len(chunk)
            before = await store.journaled()
            process, _ = stack.start(f"life{i:03d}")
            rss.watch(process.pid)
            if rng.random() < 0.3:
                # during start-up, group join or the first seek
                await asyncio.sleep(rng.uniform(0.5, 4.0))
                early += 1
            else:
                waited = await store.wait_progress(before, limit=60)
                assert waited is not None, f"life {i} made no progress:\n{stack.logs()}"
                recover.append(waited)
                await asyncio.sleep(rng.uniform(0.0, 1.2))
            if await store.journaled() < produced:
                backlog_kills += 1
            await kill(process, rss)
            kills += 1
        final, _ = stack.start("final")
        rss.watch(final.pid)
        started = time.monotonic()
        before = await store.journaled()
        finish = await store.wait_progress(before, limit=60)
        if finish is not None:
            recover.append(finish)
        figures["events"] = produced
        figures["kills"] = kills
        figures["kills_during_startup"] = early
        figures["kills_with_backlog"] = backlog_kills
        figures["restart_to_first_commit_s"] = spread(recover)
        await verify(stack, log, tmp_path, figures)
        figures["final_catch_up_s"] = round(time.monotonic() - started, 1)
    finally:
        figures["fencing_reseeks"] = count_in_logs(stack, "partition not as known")
        figures["batch_failures"] = count_in_logs(stack, "batch failed")
        figures["peak_rss_mb"] = await rss.stop()
        await store.close()
        figures.emit()
    assert kills >= 25
