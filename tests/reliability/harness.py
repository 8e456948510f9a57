"""Shared machinery of the reliability scenarios: figures, progress, RSS, final verification."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import re
import signal
import statistics
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

from tests.integration.kafka.checks import by_game
from tests.integration.kafka.conftest import ROOT, Replay, Stack, replay_in_memory
from tools.testkit.kafkatools import drain, keyed_lines, produce

SOAK = os.environ.get("REFEREE_SOAK") == "1"


def plain(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


# ---------------------------------------------------------------------------- figures


@dataclass
class Figures:
    """What a scenario measured; printed and appended to $REFEREE_RELIABILITY_REPORT."""

    scenario: str
    started: float = field(default_factory=time.monotonic)
    values: dict[str, Any] = field(default_factory=dict)

    def __setitem__(self, key: str, value: Any) -> None:
        self.values[key] = value

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def emit(self) -> None:
        line = {
            "scenario": self.scenario,
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "soak": SOAK,
            "seconds": round(time.monotonic() - self.started, 1),
            **self.values,
        }
        text = json.dumps(line, sort_keys=False)
        print(f"\nRELIABILITY {text}")
        target = os.environ.get("REFEREE_RELIABILITY_REPORT")
        if target:
            with Path(target).open("a", encoding="utf-8") as f:
                f.write(text + "\n")


def spread(xs: list[float]) -> dict[str, float]:
    """Median and max of a list of durations (seconds, rounded)."""
    if not xs:
        return {"n": 0}
    return {
        "n": len(xs),
        "median": round(statistics.median(xs), 2),
        "max": round(max(xs), 2),
    }


# ---------------------------------------------------------------------------- processes


def peak_rss_mb(pid: int) -> float | None:
    """The process's peak resident set (VmHWM) in MB, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    m = re.search(r"^VmHWM:\s+(\d+) kB", text, re.MULTILINE)
    return None if m is None else int(m.group(1)) / 1024


def rss_mb(pid: int) -> float | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    m = re.search(r"^VmRSS:\s+(\d+) kB", text, re.MULTILINE)
    return None if m is None else int(m.group(1)) / 1024


class RssWatch:
    """Samples the peak RSS of every process it is given, until stopped."""

    def __init__(self) -> None:
        self.peak = 0.0
        self.pids: set[int] = set()
        self._task: asyncio.Task[None] | None = None

    def watch(self, pid: int) -> None:
        self.pids.add(pid)
        if self._task is None:
            self._task = asyncio.create_task(self._run())

    def sample(self) -> None:
        for pid in list(self.pids):
            value = peak_rss_mb(pid)
            if value is None:
                self.pids.discard(pid)
            else:
                self.peak = max(self.peak, value)

    async def _run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(0.25)

    async def stop(self) -> float:
        self.sample()
        if self._task is not None:
            self._task.cancel()
        return round(self.peak, 1)


async def kill(process: subprocess.Popen[bytes], rss: RssWatch | None = None) -> None:
    """SIGKILL and reap (sampling its peak RSS first)."""
    if rss is not None:
        rss.sample()
    process.send_signal(signal.SIGKILL)
    await asyncio.to_thread(process.wait)


def service_env() -> dict[str, str]:
    """Environment for scripts/{kafka,postgres}.sh that targets the services of this run."""
    env = dict(os.environ)
    kafka = os.environ.get("REFEREE_TEST_KAFKA", "")
    if ":" in kafka:
        env["KAFKA_PORT"] = kafka.rsplit(":", 1)[1]
    db = os.environ.get("REFEREE_TEST_DATABASE_URL", "")
    if db:
        port = make_url(db).port
        if port:
            env["PG_PORT"] = str(port)
    return env


async def restart_service(script: str) -> float:
    """Runs scripts/<script> restart on the test services; returns how long it took."""
    started = time.monotonic()
    await asyncio.to_thread(
        subprocess.run,
        ["bash", str(ROOT / "scripts" / script), "restart"],
        check=True,
        capture_output=True,
        env=service_env(),
    )
    return time.monotonic() - started


# ---------------------------------------------------------------------------- progress


class Store:
    """One persistent connection for polling a stack's database."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.conn: asyncpg.Connection | None = None

    async def _connection(self) -> asyncpg.Connection:
        if self.conn is None or self.conn.is_closed():
            self.conn = await asyncpg.connect(plain(self.url))
        return self.conn

    async def journaled(self) -> int:
        """Rows in the journal (retries through a restarting server)."""
        for _ in range(200):
            try:
                conn = await self._connection()
                return int(await conn.fetchval("SELECT count(*) FROM journal"))
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                self.conn = None
                await asyncio.sleep(0.3)
        raise AssertionError("the database did not answer")

    async def counts(self) -> tuple[int, int]:
        conn = await self._connection()
        row = await conn.fetchrow(
            "SELECT (SELECT count(*) FROM journal) AS j, (SELECT count(*) FROM verdicts) AS v"
        )
        return int(row["j"]), int(row["v"])

    async def wait_progress(self, beyond: int, limit: float) -> float | None:
        """Waits until the journal holds more than ``beyond`` rows; returns the wait or None."""
        started = time.monotonic()
        while time.monotonic() - started < limit:
            if await self.journaled() > beyond:
                return time.monotonic() - started
            await asyncio.sleep(0.1)
        return None

    async def wait_until(self, rows: int, limit: float = 120) -> None:
        """Waits until the journal holds at least ``rows`` rows."""
        started = time.monotonic()
        while await self.journaled() < rows:
            assert time.monotonic() - started < limit, f"journal stuck below {rows} rows"
            await asyncio.sleep(0.1)

    async def close(self) -> None:
        if self.conn is not None and not self.conn.is_closed():
            await self.conn.close()


async def produce_paced(
    bootstrap: str,
    topic: str,
    records: list[tuple[bytes | None, bytes]],
    seconds: float,
    chunks: int = 40,
) -> None:
    """Publishes the records spread over about ``seconds``."""
    size = max(1, len(records) // chunks + 1)
    started = time.monotonic()
    for n, i in enumerate(range(0, len(records), size)):
        await produce(bootstrap, topic, records[i : i + size])
        delay = started + seconds * (n + 1) / chunks - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)


# ---------------------------------------------------------------------------- verification


def replay(log: Path, workdir: Path, name: str = "replay") -> Replay:
    """``referee replay`` of a log (in memory): verdicts, rejections, duplicate count."""
    return replay_in_memory(log, workdir, name)


def _extra_copies(items: list[str]) -> int:
    return sum(n - 1 for n in Counter(items).values() if n > 1)


async def verify(
    stack: Stack,
    log: Path,
    workdir: Path,
    figures: Figures,
    *,
    expected: Replay | None = None,
    catch_up_limit: float = 300,
) -> Replay:
    """Waits for the stack to catch up, records the figures, then asserts every guarantee.

    No verdict lost or duplicated in PostgreSQL or on the verdict topic; byte-identical to
    ``referee replay`` in each game's order; every rejection on the DLQ exactly once; the
    journal holds every record exactly once; duplicates counted as replay counts them.
    """
    want = expected or replay(log, workdir)
    records = len(keyed_lines(log))
    store = Store(stack.database_url)
    started = time.monotonic()
    caught_up = False
    try:
        while time.monotonic() - started < catch_up_limit:
            # verdicts are written in the transaction of their journal rows: a complete
            # journal means the store holds every verdict it ever will
            journaled, _ = await store.counts()
            if journaled >= records:
                caught_up = True
                break
            await asyncio.sleep(0.5)
        conn = await store._connection()
        stored = [
            r["body"] for r in await conn.fetch("SELECT body FROM verdicts ORDER BY position")
        ]
        stored_ids = [r["verdict_id"] for r in await conn.fetch("SELECT verdict_id FROM verdicts")]
        journal = await conn.fetchrow(
            "SELECT count(*) AS n, count(DISTINCT (source_partition, source_offset)) AS d "
            "FROM journal"
        )
        outcomes = {
            r["outcome"]: int(r["n"])
            for r in await conn.fetch("SELECT outcome, count(*) AS n FROM journal GROUP BY 1")
        }
        dead_rows = int(await conn.fetchval("SELECT count(*) FROM dead_letters"))
    finally:
        await store.close()
    out = await drain(
        stack.bootstrap, stack.topics.verdicts, expect=len(want.verdicts), quiet_seconds=3
    )
    published = [v.decode() for *_, v, _ in out]
    published_ids = [json.loads(v)["verdict_id"] for v in published]
    dead = await drain(
        stack.bootstrap, stack.topics.dlq, expect=len(want.rejections), quiet_seconds=3
    )
    dead_raws = [json.loads(v)["raw"] for *_, v, _ in dead]
    dead_bodies = [v.decode() for *_, v, _ in dead]
    expected_set = set(want.verdicts)
    figures["records"] = records
    figures["verdicts_expected"] = len(want.verdicts)
    figures["verdicts_stored"] = len(stored)
    figures["verdicts_published"] = len(published)
    figures["lost_in_postgres"] = len(expected_set - set(stored))
    figures["lost_on_topic"] = len(expected_set - set(published))
    figures["unexpected_on_topic"] = len(set(published) - expected_set)
    figures["duplicates_in_postgres"] = _extra_copies(stored_ids)
    figures["duplicates_on_topic"] = _extra_copies(published_ids)
    figures["journal_rows"] = int(journal["n"])
    figures["journal_outcomes"] = outcomes
    figures["duplicates_counted"] = outcomes.get("duplicate", 0)
    figures["duplicates_in_replay"] = want.duplicates
    figures["dlq_expected"] = len(want.rejections)
    figures["dlq_published"] = len(dead)
    figures["dlq_duplicates"] = _extra_copies(dead_bodies)
    figures["dlq_reasons"] = dict(
        sorted(Counter(json.loads(v)["reason"] for v in dead_bodies).items())
    )

    assert caught_up, f"not caught up after {catch_up_limit} s; logs:\n{stack.logs()}"
    assert figures["journal_rows"] == records, f"journal holds {journal['n']}, {records} produced"
    assert int(journal["d"]) == records, "a record was journaled twice"
    assert figures["duplicates_in_postgres"] == 0
    assert figures["lost_in_postgres"] == 0
    assert stored == want.verdicts or by_game(stored) == by_game(want.verdicts), (
        "the stored verdicts differ from the replay"
    )
    assert figures["duplicates_on_topic"] == 0, "verdicts duplicated on the topic"
    assert figures["lost_on_topic"] == 0, "verdicts missing on the topic"
    assert figures["unexpected_on_topic"] == 0
    assert by_game(published) == by_game(want.verdicts), "a game's verdict order differs"
    assert outcomes.get("duplicate", 0) == want.duplicates
    assert dead_rows == len(want.rejections)
    assert figures["dlq_duplicates"] == 0, "rejections duplicated on the DLQ"
    assert Counter(json.loads(v)["reason"] for *_, v, _ in dead) == Counter(
        r["reason"] for r in want.rejections
    )
    assert Counter(dead_raws) == Counter(r["raw"] for r in want.rejections), (
        "a rejected line is missing from the DLQ"
    )
    return want


def count_in_logs(stack: Stack, needle: str) -> int:
    return sum(p.read_text(errors="replace").count(needle) for p in stack.workdir.glob("*.log"))


class StallWatch:
    """Samples the journal size; the longest time it stood still is the outage seen."""

    def __init__(self, url: str) -> None:
        self.store = Store(url)
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        last, since = -1, time.monotonic()
        while True:
            n = await self.store.journaled()
            now = time.monotonic()
            if n != last:
                last, since = n, now
            else:
                self.longest = max(self.longest, now - since)
            await asyncio.sleep(0.2)

    async def stop(self) -> float:
        if self._task is not None:
            self._task.cancel()
        await self.store.close()
        return round(self.longest, 1)
