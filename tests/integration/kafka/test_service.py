"""``referee serve`` end to end on a real Apache Kafka broker and a real PostgreSQL.

Each scenario publishes a simulated log to a fresh input topic, runs the service as a
subprocess, and reads the output topics until quiet: the verdicts must equal ``referee
replay`` of the same log, byte for byte, with no duplicate, in PostgreSQL and on the topic,
and every bad line must be on the dead-letter topic.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.conftest import fetch
from tests.integration.kafka.checks import (
    assert_journal_complete,
    assert_same_verdicts,
    stored_verdicts,
)
from tests.integration.kafka.conftest import ROOT, Stack, replay_in_memory
from tools.testkit.kafkatools import drain, keyed_lines, produce

pytestmark = pytest.mark.kafka


async def produce_paced(
    bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes]], seconds: float
) -> None:
    """Publishes the records spread over about ``seconds``."""
    chunks = 40
    size = max(1, len(records) // chunks + 1)
    for i in range(0, len(records), size):
        await produce(bootstrap, topic, records[i : i + size])
        await asyncio.sleep(seconds / chunks)


async def wait_until_caught_up(stack: Stack, records: int, verdicts: int, limit: float) -> None:
    """Waits until the store has journaled every record and holds every verdict."""
    from tests.integration.conftest import fetch

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        rows = await fetch(
            stack.database_url,
            "SELECT (SELECT count(*) FROM journal) AS j, (SELECT count(*) FROM verdicts) AS v",
        )
        if rows[0]["j"] >= records and rows[0]["v"] >= verdicts:
            return
        await asyncio.sleep(0.5)
    raise AssertionError(f"not caught up after {limit} s; logs:\n{stack.logs()}")


async def final_checks(stack: Stack, log: Path, tmp_path: Path) -> None:
    replayed = replay_in_memory(log, tmp_path)
    expected, rejections = replayed.verdicts, replayed.rejections
    records = len(keyed_lines(log))
    await wait_until_caught_up(stack, records, len(expected), limit=180)
    await assert_journal_complete(stack.database_url, records)
    assert_same_verdicts(await stored_verdicts(stack.database_url), expected, "in PostgreSQL")
    out = await drain(stack.bootstrap, stack.topics.verdicts, expect=len(expected), quiet_seconds=3)
    assert_same_verdicts([v.decode() for *_, v, _ in out], expected, "on the verdict topic")
    dead = await drain(stack.bootstrap, stack.topics.dlq, expect=len(rejections), quiet_seconds=3)
    reasons = Counter(json.loads(v)["reason"] for *_, v, _ in dead)
    assert reasons == Counter(r["reason"] for r in rejections)
    assert len(dead) == len(rejections)
    raws = Counter(json.loads(v)["raw"] for *_, v, _ in dead)
    assert raws == Counter(r["raw"] for r in rejections), "a bad line is missing from the DLQ"


def http_get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=3) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def wait_ready(port: int, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            status, _ = await asyncio.to_thread(http_get, port, "/readyz")
            if status == 200:
                return
        except OSError:
            pass
        await asyncio.sleep(0.3)
    raise AssertionError("the referee never became ready")


async def test_end_to_end_verdicts_equal_replay_and_bad_lines_reach_the_dlq(
    stack: Stack, simulated_log: Path, tmp_path: Path
) -> None:
    await produce(stack.bootstrap, stack.topics.input, keyed_lines(simulated_log))
    process, port = stack.start()
    await wait_ready(port)
    await final_checks(stack, simulated_log, tmp_path)

    status, body = await asyncio.to_thread(http_get, port, "/healthz")
    assert (status, body.strip()) == (200, "ok")
    status, body = await asyncio.to_thread(http_get, port, "/readyz")
    assert (status, body.strip()) == (200, "ready")
    status, metrics = await asyncio.to_thread(http_get, port, "/metrics")
    assert status == 200
    assert 'referee_verdicts_total{type="RoundScored"}' in metrics
    assert 'referee_rejections_total{reason="malformed_json"}' in metrics
    assert "referee_duplicates_total" in metrics
    assert "referee_batch_seconds_count" in metrics

    process.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(process.wait, 30) == 0
    lines = [
        json.loads(x)
        for x in (tmp_path / "referee.log").read_text().splitlines()
        if x.startswith("{")
    ]
    assert any(entry["message"] == "stopped" for entry in lines), "no graceful stop logged"


async def test_an_edition_2_log_of_every_family_through_serve_equals_replay(
    stack: Stack, edition2_log: Path, tmp_path: Path
) -> None:
    await produce(stack.bootstrap, stack.topics.input, keyed_lines(edition2_log))
    process, port = stack.start()
    await wait_ready(port)
    await final_checks(stack, edition2_log, tmp_path)

    # The log really is edition 2's: its verdicts carry what only edition 2 announces.
    verdicts = [json.loads(v) for v in await stored_verdicts(stack.database_url)]
    kinds = Counter(v["type"] for v in verdicts)
    assert kinds["PointsScored"] > 0
    assert any("mexican" in v.get("open_ends", {}) for v in verdicts)
    assert any(v.get("scoring") == "penalty" for v in verdicts)
    assert any("team_awards" in v for v in verdicts)
    fouls = {v["foul"] for v in verdicts if v["type"] == "FoulRecorded"}
    assert {"end_not_available", "train_closed"} <= fouls
    process.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(process.wait, 30) == 0


async def test_a_partition_whose_oldest_records_are_deleted_starts_at_its_earliest(
    stack: Stack, simulated_log: Path
) -> None:
    """Nothing stored and the log start past offset 0 (retention deleted the oldest records):
    every partition is read from its earliest record on, none stalls on offset 0."""
    from aiokafka import TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

    from tests.integration.conftest import fetch

    lines = keyed_lines(simulated_log)[:400]
    await produce(stack.bootstrap, stack.topics.input, lines)
    deleted = 7
    admin = AIOKafkaAdminClient(bootstrap_servers=stack.bootstrap)
    await admin.start()
    try:
        await admin.delete_records(
            {TopicPartition(stack.topics.input, p): RecordsToDelete(deleted) for p in range(4)}
        )
    finally:
        await admin.close()
    process, port = stack.start()
    await wait_ready(port)
    await wait_until_caught_up(stack, len(lines) - 4 * deleted, 0, limit=60)
    rows = await fetch(
        stack.database_url,
        "SELECT source_partition AS p, min(source_offset) AS first, count(*) AS n FROM journal"
        " GROUP BY source_partition ORDER BY source_partition",
    )
    assert [r["first"] for r in rows] == [deleted] * 4, "not started at each log start"
    assert sum(r["n"] for r in rows) == len(lines) - 4 * deleted
    process.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(process.wait, 30) == 0


async def test_sigkill_ten_times_mid_stream_loses_and_doubles_nothing(
    stack: Stack, simulated_log: Path, tmp_path: Path
) -> None:
    records = keyed_lines(simulated_log)
    feeding = asyncio.create_task(
        produce_paced(stack.bootstrap, stack.topics.input, records, seconds=35)
    )
    rng = random.Random(7)
    kills = 0
    while kills < 10:
        process, _ = stack.start(f"run{kills}")
        await asyncio.sleep(rng.uniform(2.5, 4.5))
        process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(process.wait)
        kills += 1
    await feeding
    stack.start("final")
    await final_checks(stack, simulated_log, tmp_path)


async def test_broker_restart_mid_stream_recovers_by_itself(
    stack: Stack, simulated_log: Path, tmp_path: Path
) -> None:
    records = keyed_lines(simulated_log)
    half = len(records) // 2
    await produce(stack.bootstrap, stack.topics.input, records[:half])
    process, port = stack.start()
    await wait_ready(port)
    await asyncio.to_thread(
        subprocess.run,
        ["bash", str(ROOT / "scripts" / "kafka.sh"), "restart"],
        check=True,
        capture_output=True,
        env={**os.environ},
    )
    await produce(stack.bootstrap, stack.topics.input, records[half:])
    await final_checks(stack, simulated_log, tmp_path)
    assert process.poll() is None, "the referee died with the broker"


async def test_postgres_restart_mid_stream_recovers_by_itself(
    stack: Stack, simulated_log: Path, tmp_path: Path
) -> None:
    records = keyed_lines(simulated_log)
    feeding = asyncio.create_task(
        produce_paced(stack.bootstrap, stack.topics.input, records, seconds=12)
    )
    process, port = stack.start()
    await wait_ready(port)
    await asyncio.sleep(2)
    journaled = await _journaled(stack.database_url)
    await asyncio.to_thread(
        subprocess.run,
        ["bash", str(ROOT / "scripts" / "postgres.sh"), "restart"],
        check=True,
        capture_output=True,
    )
    # Mid-stream: records judged before the restart, and records still to come after it.
    # (Whether a batch was cut, or the pool only found its connections dead and opened new
    # ones, depends on where the restart fell; either way every session was ended.)
    assert 0 < journaled < len(records), f"{journaled} of {len(records)} journaled at the restart"
    await feeding
    await final_checks(stack, simulated_log, tmp_path)
    assert process.poll() is None, "the referee died with PostgreSQL"


async def _journaled(url: str) -> int:
    rows = await fetch(url, "SELECT count(*) AS n FROM journal")
    return int(rows[0]["n"])


async def test_two_instances_share_partitions_and_one_stops_mid_stream(
    stack: Stack, simulated_log: Path, tmp_path: Path
) -> None:
    records = keyed_lines(simulated_log)
    feeding = asyncio.create_task(
        produce_paced(stack.bootstrap, stack.topics.input, records, seconds=20)
    )
    first, port_a = stack.start("a")
    second, port_b = stack.start("b")
    await wait_ready(port_a)
    await wait_ready(port_b)
    await asyncio.sleep(5)
    first.send_signal(signal.SIGKILL)
    await asyncio.to_thread(first.wait)
    await feeding
    await final_checks(stack, simulated_log, tmp_path)
    assert second.poll() is None
