"""Scenario 3: a rebalance storm: instances join and leave every few seconds over 6 partitions.

Up to three instances cycle for about 40 s (soak: 3 minutes) while the stream flows; each
departure is a graceful SIGTERM or a SIGKILL, at random. Partitions move constantly, each
partition's publishing moves with it (the new owner fences the old one's transactional id),
and an old owner may still be committing while a new one starts: the per-partition fencing
must make one of them give up.
"""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.reliability.conftest import MakeStack, Simulated
from tests.reliability.harness import (
    SOAK,
    Figures,
    RssWatch,
    count_in_logs,
    kill,
    produce_paced,
    verify,
)
from tools.testkit.kafkatools import keyed_lines

pytestmark = [pytest.mark.reliability, pytest.mark.kafka]

STORM_SECONDS = 180 if SOAK else 40
GAMES = 1800 if SOAK else 400


async def test_rebalance_storm(make_stack: MakeStack, simulated: Simulated, tmp_path: Path) -> None:
    stack = await make_stack(partitions=6)
    log = simulated(GAMES, 31, "--bad-rate", "0.005", "--duplicate-rate", "0.005")
    records = keyed_lines(log)
    figures = Figures("rebalance_storm")
    rng = random.Random(4242)
    rss = RssWatch()
    running: list[subprocess.Popen[bytes]] = []
    graceful: list[asyncio.Task[int]] = []
    joins = terms = kills = 0
    n = 0

    def join() -> None:
        nonlocal joins, n
        process, _ = stack.start(f"storm{n:03d}")
        n += 1
        rss.watch(process.pid)
        running.append(process)
        joins += 1

    async def stop_gracefully(process: subprocess.Popen[bytes]) -> int:
        process.send_signal(signal.SIGTERM)
        try:
            return await asyncio.to_thread(process.wait, 40)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait)
            return -999

    try:
        feeding = asyncio.create_task(
            produce_paced(stack.bootstrap, stack.topics.input, records, STORM_SECONDS)
        )
        join()
        join()
        started = time.monotonic()
        while time.monotonic() - started < STORM_SECONDS:
            await asyncio.sleep(rng.uniform(2.0, 5.0))
            if not running or (len(running) < 3 and rng.random() < 0.5):
                join()
                continue
            victim = running.pop(rng.randrange(len(running)))
            if rng.random() < 0.5:
                terms += 1
                rss.sample()
                graceful.append(asyncio.create_task(stop_gracefully(victim)))
            else:
                kills += 1
                await kill(victim, rss)
            if not running:
                join()
        await feeding
        if not running:
            join()
        settle = time.monotonic()
        exit_codes = await asyncio.gather(*graceful)
        figures["events"] = len(records)
        figures["storm_s"] = STORM_SECONDS
        figures["partitions"] = 6
        figures["joins"] = joins
        figures["graceful_stops"] = terms
        figures["kills"] = kills
        figures["graceful_exit_codes"] = dict(Counter(exit_codes))
        await verify(stack, log, tmp_path, figures)
        figures["after_storm_to_caught_up_s"] = round(time.monotonic() - settle, 1)
        # -15: the SIGTERM came before the app installed its handler (still starting up)
        assert all(code in (0, -15) for code in exit_codes), f"a SIGTERM stop failed: {exit_codes}"
        # every join moved partitions: each was taken (a term, a fence, its tails read)
        assert count_in_logs(stack, '"message": "partition taken"') >= figures["joins"]
    finally:
        figures["fencing_reseeks"] = count_in_logs(stack, "partition not as known")
        figures["partitions_taken"] = count_in_logs(stack, '"message": "partition taken"')
        figures["publishers_fenced"] = count_in_logs(stack, "publisher fenced by a partition")
        figures["batch_failures"] = count_in_logs(stack, "batch failed")
        figures["peak_rss_mb"] = await rss.stop()
        figures.emit()
