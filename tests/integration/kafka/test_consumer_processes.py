"""More than one consumer process per instance (``REFEREE_CONSUMER_PROCESSES``), on a real
Apache Kafka broker and a real PostgreSQL: the consumer processes share the partitions and
publish what one process publishes, exactly once; the instance's probes and /metrics speak for
all of them; one that dies ends the instance; an instance killed takes them with it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.kafka.conftest import Stack
from tests.integration.kafka.test_relay_process import running, wait_for
from tests.integration.kafka.test_service import final_checks, http_get, wait_ready
from tools.testkit.kafkatools import keyed_lines, produce

pytestmark = pytest.mark.kafka

TWO = {"REFEREE_CONSUMER_PROCESSES": "2"}


def consumer_pids(pid: int) -> list[int]:
    """The consumer processes of instance ``pid``: its forked children (its relay processes
    are theirs, started by ``python -m referee.service.relay_process``)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if b"referee.service.relay_process" not in cmdline and running(int(child)):
                found.append(int(child))
    return sorted(found)


def by_consumer(port: int, name: str) -> dict[str, float]:
    """The samples called ``name`` on the instance's /metrics, by their ``consumer`` label."""
    status, text = http_get(port, "/metrics")
    assert status == 200
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name:
                out[s.labels["consumer"]] = out.get(s.labels["consumer"], 0.0) + s.value
    return out


async def start_two(stack: Stack, name: str) -> tuple[subprocess.Popen[bytes], int]:
    """Starts an instance of two consumer processes; returns it once both run and it is ready."""
    process, port = stack.start(name, extra_env=TWO)
    await wait_ready(port)
    await wait_for("two consumer processes", lambda: len(consumer_pids(process.pid)) == 2)
    return process, port


async def test_two_consumer_processes_share_the_partitions_and_publish_everything_once(
    stack: Stack, simulated_log: Path, tmp_path: Path
) -> None:
    process, port = await start_two(stack, "referee")

    def owned() -> list[float]:
        return sorted(by_consumer(port, "referee_assigned_partitions").values())

    # produced once the group has settled: each consumer process owns two partitions
    await wait_for("the partitions shared two and two", lambda: owned() == [2.0, 2.0])
    await produce(stack.bootstrap, stack.topics.input, keyed_lines(simulated_log))
    await final_checks(stack, simulated_log, tmp_path)

    judged = await asyncio.to_thread(by_consumer, port, "referee_events_consumed_total")
    assert set(judged) == {"0", "1"}
    assert all(n > 0 for n in judged.values()), f"one process judged nothing: {judged}"
    assert sum(judged.values()) == len(keyed_lines(simulated_log))
    leaders = await asyncio.to_thread(by_consumer, port, "referee_relay_leader")
    assert sorted(leaders.values()) == [0.0, 1.0], "one relay leads, in one of the two"
    for path, word in (("/readyz", "ready"), ("/livez", "alive")):
        status, body = await asyncio.to_thread(http_get, port, path)
        assert (status, body.strip()) == (200, word)

    pids = consumer_pids(process.pid)
    process.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(process.wait, 60) == 0
    assert not any(running(p) for p in pids), "the instance stopped its consumer processes"


async def test_a_consumer_process_that_dies_ends_the_instance_and_the_next_one_catches_up(
    stack: Stack, simulated_log: Path, tmp_path: Path
) -> None:
    process, _ = await start_two(stack, "first")
    first, second = consumer_pids(process.pid)
    os.kill(first, signal.SIGKILL)
    assert await asyncio.to_thread(process.wait, 60) == 128 + signal.SIGKILL
    await wait_for("the other consumer process stopped", lambda: not running(second))
    # everything is produced after the crash: the instance started next referees all of it
    await produce(stack.bootstrap, stack.topics.input, keyed_lines(simulated_log))
    stack.start("next", extra_env=TWO)
    await final_checks(stack, simulated_log, tmp_path)


async def test_an_instance_killed_takes_its_consumer_processes_with_it(
    stack: Stack, simulated_log: Path, tmp_path: Path
) -> None:
    process, _ = await start_two(stack, "killed")
    pids = consumer_pids(process.pid)
    process.send_signal(signal.SIGKILL)
    await asyncio.to_thread(process.wait)
    await wait_for("its consumer processes gone", lambda: not any(running(p) for p in pids))
    await produce(stack.bootstrap, stack.topics.input, keyed_lines(simulated_log))
    stack.start("next")
    await final_checks(stack, simulated_log, tmp_path)
