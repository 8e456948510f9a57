"""The relay in a process of its own (``REFEREE_RELAY_PROCESS``, on by default), on a real
Apache Kafka broker and a real PostgreSQL: it publishes what the relay on the instance's loop
publishes, its metrics reach the instance's /metrics, it is restarted when it dies, and it
dies with its instance (it must not hold the relay lock for an instance that is gone)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.kafka.conftest import Stack, replay_in_memory
from tests.integration.kafka.test_service import final_checks, http_get, wait_ready
from tools.testkit.kafkatools import keyed_lines, produce

pytestmark = pytest.mark.kafka

RELAY_MODULE = "referee.service.relay_process"


def relay_children(pid: int) -> list[int]:
    """Returns the process ids of the relay processes ``pid`` started."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if RELAY_MODULE.encode() in cmdline:
                found.append(int(child))
    return found


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie, exited but not yet reaped, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def wait_for(what: str, check: Callable[[], object], limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if check():
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"not {what} after {limit} s")


def samples(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, text = http_get(port, "/metrics")
    assert status == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def leading(port: int) -> bool:
    return samples(port).get(("referee_relay_leader", ()), 0.0) == 1.0


async def test_a_relay_process_killed_is_restarted_and_its_metrics_reach_the_instance(
    stack: Stack, simulated_log: Path, tmp_path: Path
) -> None:
    process, port = stack.start()
    await wait_ready(port)
    await wait_for("a relay process", lambda: len(relay_children(process.pid)) == 1)
    (first,) = relay_children(process.pid)
    os.kill(first, signal.SIGKILL)
    await wait_for(
        "a new relay process",
        lambda: [p for p in relay_children(process.pid) if p != first and running(p)],
    )
    # everything is produced after the kill: only the restarted relay can publish it
    await produce(stack.bootstrap, stack.topics.input, keyed_lines(simulated_log))
    await final_checks(stack, simulated_log, tmp_path)

    expected = replay_in_memory(simulated_log, tmp_path, "counted")
    got = await asyncio.to_thread(samples, port)
    assert got[("referee_relay_leader", ())] == 1.0
    assert got[("referee_relay_restarts_total", ())] == 1.0
    verdict_topic = (("topic", stack.topics.verdicts),)
    assert got[("referee_published_total", verdict_topic)] == len(expected.verdicts)
    committed = got[("referee_relay_transactions_total", (("outcome", "committed"),))]
    assert committed >= 1
    assert got[("referee_stage_seconds_count", (("stage", "relay_send"),))] == committed
    assert got[("referee_stage_seconds_count", (("stage", "judge"),))] >= 1, "the instance's own"
    status, body = await asyncio.to_thread(http_get, port, "/livez")
    assert (status, body.strip()) == (200, "alive")

    (second,) = relay_children(process.pid)
    process.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(process.wait, 30) == 0
    assert not running(second), "the instance stopped its relay process before it exited"


async def test_an_instance_killed_takes_its_relay_process_with_it(
    stack: Stack, simulated_log: Path, tmp_path: Path
) -> None:
    process, port = stack.start("killed")
    await wait_ready(port)
    await wait_for("a relay process", lambda: len(relay_children(process.pid)) == 1)
    (relay,) = relay_children(process.pid)
    # killed once the child runs (leading, holding the lock), not while it still starts
    await wait_for("its relay leading", lambda: leading(port))
    process.send_signal(signal.SIGKILL)
    await asyncio.to_thread(process.wait)
    await wait_for("the relay process gone", lambda: not running(relay), limit=15)
    # its lock went with it: the next instance's relay leads and publishes everything
    await produce(stack.bootstrap, stack.topics.input, keyed_lines(simulated_log))
    stack.start("next")
    await final_checks(stack, simulated_log, tmp_path)


async def test_the_relay_on_the_instances_event_loop_publishes_the_same(
    stack: Stack, simulated_log: Path, tmp_path: Path
) -> None:
    await produce(stack.bootstrap, stack.topics.input, keyed_lines(simulated_log))
    process, port = stack.start(extra_env={"REFEREE_RELAY_PROCESS": "false"})
    await wait_ready(port)
    await final_checks(stack, simulated_log, tmp_path)
    assert relay_children(process.pid) == []
    got = await asyncio.to_thread(samples, port)
    assert got[("referee_relay_leader", ())] == 1.0
    process.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(process.wait, 30) == 0
