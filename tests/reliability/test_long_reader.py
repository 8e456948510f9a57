"""Scenario 11: a long reader beside the live service stops no writer.

``referee serve`` judges a paced stream into a store of one-minute time partitions, so that
partitions are made every minute of the test. Once its verdicts flow, an analyst opens a
repeatable-read transaction, reads the journal and keeps it open while the next partition
is made (each waits for such a reader when it is made with ``CREATE TABLE ... PARTITION
OF``, and every insert after it waits too); meanwhile ``referee audit`` reads the store and
``referee archive`` tries to detach the oldest segment (an ``ACCESS EXCLUSIVE`` lock the
reader keeps it from: it waits a bounded time, tries again, and leaves the segment for its
next run). Then the reader ends and the archive runs again.

What is asserted: a partition was made while the reader was open; no lock wait of the
service's sessions (sampled from ``pg_locks`` every 50 ms) lasted a second; the archive's
detach was tried and refused while the reader was open, then done after; and every verdict
once, as ``referee replay`` gives them (``verify``). The slowest verdicts with and without
the reader (produced to read by a ``read_committed`` consumer) go in the figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from referee.service.tails import partition_ids
from referee.store.database import migrate
from referee.store.partitions import PartitionPolicy, list_partitions
from tests.integration.kafka.test_service import wait_ready
from tests.reliability.conftest import MakeStack, Simulated
from tests.reliability.harness import SOAK, Figures, plain, verify
from tools.testkit.kafkatools import keyed_lines

pytestmark = [pytest.mark.reliability, pytest.mark.kafka]

GAMES = 600 if SOAK else 120
FEED_SECONDS = 300 if SOAK else 110
INTERVAL = "1 minute"
AHEAD = 2
"""Partitions ahead: the service makes one every minute, each two minutes ahead."""
BASELINE_SECONDS = 20.0
READER_LONGEST = 100.0
"""The analyst's transaction ends after a partition was made and the archive gave up, or
after this long whatever happened (the code before 0.4.2 made no partition beside it)."""
APPLICATION = "referee-serve-under-test"
LOCK_WAIT_BOUND = 1.0


class VerdictClock:
    """When each cause was produced, and when its verdicts were read (read_committed)."""

    def __init__(self) -> None:
        self.sent: dict[tuple[str, int], float] = {}
        self.read: list[tuple[str, int, float]] = []

    async def feed(
        self, bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes]]
    ) -> None:
        """Produces the records paced over FEED_SECONDS, noting when each cause went out."""
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
        await producer.start()
        try:
            started = time.monotonic()
            chunks = int(FEED_SECONDS * 4)
            size = len(records) // chunks + 1
            for n, i in enumerate(range(0, len(records), size)):
                for key, value in records[i : i + size]:
                    with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                        line = json.loads(value)
                        self.sent.setdefault((line["game_id"], int(line["seq"])), time.monotonic())
                    await producer.send(topic, value, key=key)
                await producer.flush()
                await asyncio.sleep(max(0.0, started + (n + 1) / 4 - time.monotonic()))
        finally:
            await producer.stop()

    async def watch(self, bootstrap: str, topic: str) -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=20,
            isolation_level="read_committed",
        )
        await consumer.start()
        try:
            parts = await partition_ids({"bootstrap_servers": bootstrap}, topic)
            consumer.assign([TopicPartition(topic, p) for p in parts])
            while True:
                got = await consumer.getmany(timeout_ms=50)
                now = time.monotonic()
                for records in got.values():
                    for r in records:
                        v = json.loads(r.value or b"{}")
                        self.read.append((v["game_id"], int(v["cause_seq"]), now))
        finally:
            await consumer.stop()

    def slowest(self, start: float, end: float) -> dict[str, float]:
        """Latencies of the verdicts whose cause was produced in [start, end) (seconds)."""
        took = sorted(
            at - self.sent[g, s]
            for g, s, at in self.read
            if (g, s) in self.sent and start <= self.sent[g, s] < end
        )
        if not took:
            return {"n": 0}
        return {
            "n": len(took),
            "median": round(statistics.median(took), 3),
            "p99": round(took[int(len(took) * 0.99)], 3),
            "max": round(took[-1], 3),
        }


class LockWaits:
    """Samples every 50 ms the locks the service's sessions wait for (``pg_locks``): the
    longest wait seen, by what was waited for."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.longest: dict[str, float] = {}

    async def run(self) -> None:
        conn = await asyncpg.connect(plain(self.url))
        try:
            while True:
                for what, waited in await conn.fetch(
                    "SELECT l.locktype || ' ' || l.mode || coalesce(' on '"
                    " || l.relation::regclass::text, ''),"
                    " extract(epoch FROM clock_timestamp() - l.waitstart)::float8"
                    " FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                    " WHERE NOT l.granted AND a.application_name = $1",
                    APPLICATION,
                ):
                    self.longest[what] = max(self.longest.get(what, 0.0), waited or 0.0)
                await asyncio.sleep(0.05)
        finally:
            await conn.close()


async def newest_partition_end(url: str) -> datetime:
    conn = await asyncpg.connect(plain(url))
    try:
        return max(p.upper for p in await list_partitions(conn) if p.table == "journal")
    finally:
        await conn.close()


def referee(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "referee", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "REFEREE_PARTITION_INTERVAL": INTERVAL},
        check=False,
    )


def _audit_figures(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    try:
        differences = json.loads(done.stdout)["differences"]
    except (ValueError, KeyError):
        return {"exit": done.returncode}
    return {"exit": done.returncode, "differences": len(differences), "first": differences[:1]}


async def test_a_long_reader_beside_serve_stops_no_writer(
    make_stack: MakeStack, simulated: Simulated, tmp_path: Path
) -> None:
    stack = await make_stack(partitions=4, migrated=False)
    url = stack.database_url
    policy = PartitionPolicy(timedelta(minutes=1), AHEAD)
    await asyncio.to_thread(migrate, url, "head", policy)  # minute partitions from now on
    log = simulated(GAMES, 61, "--bad-rate", "0.005", "--duplicate-rate", "0.005")
    records = keyed_lines(log)
    figures = Figures("long_reader")
    clock = VerdictClock()
    waits = LockWaits(url)
    watching = [
        asyncio.create_task(clock.watch(stack.bootstrap, stack.topics.verdicts)),
        asyncio.create_task(waits.run()),
    ]
    analyst = await asyncpg.connect(plain(url))
    archive = str(tmp_path / "archive")
    try:
        _, port = stack.start(
            extra_env={
                "REFEREE_DATABASE_URL": f"{url}?application_name={APPLICATION}",
                "REFEREE_PARTITION_INTERVAL": INTERVAL,
                "REFEREE_PARTITIONS_AHEAD": str(AHEAD),
            }
        )
        await wait_ready(port)
        fed_from = await analyst.fetchval("SELECT clock_timestamp()")
        feeding = asyncio.create_task(clock.feed(stack.bootstrap, stack.topics.input, records))
        while not clock.read:
            assert not feeding.done(), f"no verdict while the feed ran:\n{stack.logs()}"
            await asyncio.sleep(0.2)
        baseline_from = time.monotonic()
        await asyncio.sleep(BASELINE_SECONDS)

        # the analyst: a repeatable-read transaction that read the journal and stays open
        reading = analyst.transaction(isolation="repeatable_read", readonly=True)
        await reading.start()
        await analyst.fetchval("SELECT count(*) FROM journal")
        await analyst.fetchval("SELECT count(*) FROM verdict_log")
        opened = time.monotonic()
        reach_at_open = await newest_partition_end(url)
        audit = await asyncio.to_thread(referee, "audit", "--database", url, "--json")
        archive_args = ("archive", "--database", url, "--to", archive, "--before")
        archiving = asyncio.create_task(
            asyncio.to_thread(referee, *archive_args, fed_from.isoformat())
        )
        reach = reach_at_open
        while time.monotonic() - opened < READER_LONGEST:
            reach = await newest_partition_end(url)
            if reach > reach_at_open and archiving.done():
                break
            await asyncio.sleep(0.5)
        await reading.rollback()
        closed = time.monotonic()
        refused = await archiving
        after = await asyncio.to_thread(referee, *archive_args, fed_from.isoformat())
        await feeding

        figures["events"] = len(records)
        figures["reader_open_s"] = round(closed - opened, 1)
        figures["partitions_made_while_open"] = int((reach - reach_at_open).total_seconds() // 60)
        figures["audit_while_open"] = _audit_figures(audit)
        figures["archive_while_open"] = refused.stderr.strip().splitlines()[-1:]
        figures["archive_after"] = [ln for ln in after.stderr.splitlines() if "archived" in ln]
        figures["service_lock_waits_s"] = {k: round(v, 3) for k, v in waits.longest.items()}
        await verify(stack, log, tmp_path, figures)
        figures["verdicts_without_reader"] = clock.slowest(baseline_from, opened)
        figures["verdicts_with_reader"] = clock.slowest(opened, closed)
        audit_after = await asyncio.to_thread(referee, "audit", "--database", url, "--json")
        figures["audit_after"] = _audit_figures(audit_after)

        assert reach > reach_at_open, "no partition was made while the reader was open"
        # the audit reads each table in a statement of its own: beside live writes it may
        # find rows written between two of them; caught up, it finds nothing
        assert audit.returncode in (0, 1), audit.stderr
        assert audit_after.returncode == 0, audit_after.stdout + audit_after.stderr
        assert refused.returncode == 0, refused.stderr
        assert "waits" in refused.stderr, refused.stderr  # tried the detach, left it
        assert after.returncode == 0, after.stderr
        assert re.search(r"archived [1-9]\d* segment\(s\) \(p_legacy", after.stderr), after.stderr
        longest = max(waits.longest.values(), default=0.0)
        assert longest < LOCK_WAIT_BOUND, f"the service waited on a lock: {waits.longest}"
    finally:
        for task in watching:
            task.cancel()
        await asyncio.gather(*watching, return_exceptions=True)
        await analyst.close()
        figures.emit()
