"""Scenario: the operations port attacked while the referee referees a paced stream.

``referee serve`` runs on the real broker and PostgreSQL with the default bounds of its
operations port (``REFEREE_HTTP_MAX_CLIENTS``, ``REFEREE_HTTP_REQUEST_SECONDS``). A simulated
log is fed at a steady pace; after a while, a process of its own (``ops_attack.py``) attacks
the port for 30 s: thousands of slow clients that send a header line every 3 s and never
finish (and come back when closed), request lines over 64 KiB, garbage. Meanwhile the test
asks a fresh client's ``/readyz`` every second, reads what the port holds from ``/metrics``,
and times each verdict from its event's production to its reading (read_committed).

It asserts the bounds: the port holds no more than its bound (and the one turn of the loop a
burst of accepted connections may take before they are read), none of its connections
older than the deadline, every probe answered, no ERROR line from the port; and ends in the
harness's ``verify``. The verdict latency before and during the attack is reported, never
asserted (speed is for the benchmarks).
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from referee.service.bounded_uvicorn import BACKLOG
from referee.service.settings import Settings
from referee.service.tails import partition_ids
from tests.integration.kafka.test_service import http_get, wait_ready
from tests.reliability.conftest import MakeStack, Simulated
from tests.reliability.harness import SOAK, Figures, spread, verify
from tools.testkit.kafkatools import keyed_lines

pytestmark = [pytest.mark.reliability, pytest.mark.kafka]

GAMES = 270 if SOAK else 90  # about 13,000 events in the short form
RATE = 300
"""Events a second fed to the referee."""
BEFORE_SECONDS = 10.0
ATTACK_SECONDS = 30
SLOW_CLIENTS = 3000
OVERSIZED = 100
GARBAGE = 100
SCHEDULING_SLACK = 2.0
"""What the two busy processes' scheduling may add to the age of a connection closed at its
deadline, as the attacker sees it (2 shared cores)."""

OPS_LOGGERS = ("referee.ops", "uvicorn", "asyncio")
"""Where a line about the operations port would come from."""


Records = list[tuple[bytes | None, bytes]]


async def feed(bootstrap: str, topic: str, records: Records, produced: dict[str, float]) -> None:
    """Publishes the records at ``RATE`` a second; notes when each event was acknowledged."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, linger_ms=5)
    await producer.start()
    chunk = RATE // 10
    started = time.monotonic()
    try:
        for n, i in enumerate(range(0, len(records), chunk)):
            part = records[i : i + chunk]
            await asyncio.gather(*[await producer.send(topic, v, key=k) for k, v in part])
            now = time.monotonic()
            for _, value in part:
                produced.setdefault(json.loads(value)["event_id"], now)
            await asyncio.sleep(max(0.0, started + (n + 1) * chunk / RATE - time.monotonic()))
    finally:
        await producer.stop()


async def read_verdicts(bootstrap: str, topic: str, seen: dict[str, float]) -> None:
    """Reads the verdict topic (read_committed) until cancelled; notes when the first verdict
    of each event was read."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        parts = await partition_ids({"bootstrap_servers": bootstrap}, topic)
        consumer.assign([TopicPartition(topic, p) for p in parts])
        while True:
            batch = await consumer.getmany(timeout_ms=100)
            now = time.monotonic()
            for records in batch.values():
                for r in records:
                    seen.setdefault(json.loads(r.value or b"{}")["cause_event_id"], now)
    finally:
        await consumer.stop()


def sample(text: str, name: str) -> float:
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert found is not None, name
    return float(found.group(1))


async def probe(port: int) -> tuple[int | None, float]:
    """A fresh client's /readyz: its status (None: no answer) and how long it took."""
    started = time.monotonic()
    try:
        status, _ = await asyncio.to_thread(http_get, port, "/readyz")
    except OSError:
        status = None
    return status, time.monotonic() - started


def latencies(
    produced: dict[str, float], read: dict[str, float], start: float, end: float
) -> dict[str, float]:
    """Event produced → its first verdict read, for the events produced in [start, end)."""
    xs = sorted(read[e] - t for e, t in produced.items() if e in read and start <= t < end)
    figures = spread(xs)
    if xs:
        figures["p95"] = round(xs[int(len(xs) * 0.95)], 3)
        figures["median"] = round(statistics.median(xs), 3)
    return figures


def log_lines(path: Path) -> list[dict[str, Any]]:
    lines = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            continue
    return lines


async def test_the_operations_port_stays_bounded_and_answerable_under_attack(
    make_stack: MakeStack, simulated: Simulated, tmp_path: Path
) -> None:
    figures = Figures("ops_port")
    settings = Settings()
    bound, deadline = settings.http_max_clients, settings.http_request_seconds
    stack = await make_stack(partitions=4)
    log = simulated(GAMES, 41, "--foul-rate", "0.05")
    records = keyed_lines(log)
    process, port = stack.start("referee")
    await wait_ready(port)

    produced: dict[str, float] = {}
    read: dict[str, float] = {}
    reader = asyncio.create_task(read_verdicts(stack.bootstrap, stack.topics.verdicts, read))
    feeding = asyncio.create_task(feed(stack.bootstrap, stack.topics.input, records, produced))
    await asyncio.sleep(BEFORE_SECONDS)
    _, text = await asyncio.to_thread(http_get, port, "/metrics")
    figures["open_fds_before"] = sample(text, "process_open_fds")

    attack_started = time.monotonic()
    attacker = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.reliability.ops_attack",
        str(port),
        "--slow", str(SLOW_CLIENTS),
        "--oversized", str(OVERSIZED),
        "--garbage", str(GARBAGE),
        "--seconds", str(ATTACK_SECONDS),
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    probes: list[tuple[int | None, float]] = []
    held: list[float] = []
    fds: list[float] = []
    for second in range(1, ATTACK_SECONDS + 1):
        probes.append(await probe(port))
        _, text = await asyncio.to_thread(http_get, port, "/metrics")
        held.append(sample(text, "referee_ops_connections"))
        fds.append(sample(text, "process_open_fds"))
        await asyncio.sleep(max(0.0, attack_started + second - time.monotonic()))
    out, _ = await attacker.communicate()
    attack_ended = time.monotonic()
    seen = json.loads(out)
    await feeding
    await verify(stack, log, tmp_path, figures)
    reader.cancel()
    await asyncio.gather(reader, return_exceptions=True)

    _, text = await asyncio.to_thread(http_get, port, "/metrics")
    assert process.poll() is None, "the referee died under the attack"
    rejected = {
        reason: int(float(n))
        for reason, n in re.findall(
            r'^referee_ops_rejected_total\{reason="(\w+)"\} (\S+)$', text, re.MULTILINE
        )
    }
    # a stop writes the summary of the minute under way: every client turned away is in one
    process.send_signal(signal.SIGTERM)
    figures["exit_code"] = await asyncio.to_thread(process.wait, 60)
    lines = log_lines(stack.workdir / "referee.log")
    errors = [x for x in lines if x.get("level") == "ERROR"]
    ops_errors = [x for x in errors if str(x.get("logger", "")).startswith(OPS_LOGGERS)]
    summaries = [x for x in lines if x.get("logger") == "referee.ops"]
    summed: Counter[str] = Counter()
    for line in summaries:
        summed.update(line["rejected"])
    at_30 = seen["samples"][-1]  # (second, held, age of the oldest), the attacker's view
    answered = [t for status, t in probes if status == 200]

    figures["bound"] = bound
    figures["deadline_s"] = deadline
    figures["events_per_s"] = RATE
    figures["slow_clients"] = SLOW_CLIENTS
    figures["attack_connections"] = seen["connections"]
    figures["closed_by_server"] = seen["closed_by_server"]
    figures["held_at_30s_port"] = held[-1]
    figures["held_at_30s_attacker"] = at_30[1]
    figures["held_port"] = {"median": statistics.median(held), "max": max(held)}
    figures["held_attacker"] = {
        "median": statistics.median(s[1] for s in seen["samples"]),
        "max": max(s[1] for s in seen["samples"]),
    }
    figures["oldest_held_s"] = max(s[2] for s in seen["samples"])
    figures["open_fds_during"] = {"median": statistics.median(fds), "max": max(fds)}
    figures["readyz_during_attack_s"] = spread(answered)
    figures["readyz_unanswered"] = len(probes) - len(answered)
    figures["oversized"] = seen["oversized"]
    figures["garbage"] = seen["garbage"]
    figures["rejected"] = rejected
    figures["error_lines"] = len(errors)
    figures["error_lines_ops_port"] = len(ops_errors)
    figures["summary_lines"] = len(summaries)
    figures["verdict_latency_before_s"] = latencies(produced, read, 0.0, attack_started)
    figures["verdict_latency_during_s"] = latencies(produced, read, attack_started, attack_ended)
    figures.emit()

    assert figures["exit_code"] == 0, "the referee died under the attack, or at its stop"
    assert seen["connections"] > SLOW_CLIENTS, "the slow clients came back when closed"
    assert all(n <= bound + BACKLOG for n in held), (
        f"the port held more than {bound} connections and one accepted burst: {held}"
    )
    assert max(s[2] for s in seen["samples"]) <= deadline + SCHEDULING_SLACK, (
        "a connection outlived its deadline"
    )
    assert seen["answered_slow_clients"] == 0, "a slow client was answered before it finished"
    assert len(answered) == len(probes), f"a fresh client's /readyz went unanswered: {probes}"
    assert ops_errors == [], ops_errors
    assert len(summaries) <= 2, "the clients turned away are summed up once a minute at most"
    assert summed == {reason: n for reason, n in rejected.items() if n}, (
        "the summaries cover every client turned away"
    )
    assert Counter(seen["oversized"]).keys() <= {"431", "cut"}
    assert Counter(seen["garbage"]).keys() <= {"400", "cut"}
    assert rejected["too_large"] >= seen["oversized"].get("431", 0)
    assert rejected["malformed"] >= seen["garbage"].get("400", 0)
