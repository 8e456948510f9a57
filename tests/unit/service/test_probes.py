"""What the probes of a running referee say, on its state alone (no server)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from aiokafka import TopicPartition

from referee.service.runtime import Service
from referee.service.settings import Settings


class FakeConsumer:
    def __init__(self, high: int) -> None:
        self.high = high

    def highwater(self, tp: TopicPartition) -> int:
        return self.high


class FakeStep:
    def __init__(self, committed: int) -> None:
        self.committed = {("events", 0): committed}


class FakePublishers:
    def __init__(self, alive_at: float) -> None:
        self.at = alive_at

    def alive_at(self) -> float:
        return self.at


def service(**settings: Any) -> Service:
    s = Service.__new__(Service)
    s.settings = Settings(**settings)
    s.engine = None  # type: ignore[assignment]
    s.assigned = set()
    s.joined = False
    s.consumer = None
    s.step = FakeStep(-1)  # type: ignore[assignment]
    s.publishers = FakePublishers(time.monotonic())  # type: ignore[assignment]
    s.last_commit = time.monotonic()
    s.started_at = time.monotonic()
    s.draining = None
    return s


async def readiness_problems(s: Service) -> str:
    async def reachable(engine: object) -> None:
        return None

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("referee.service.runtime.ping", reachable)
        return (await s.readiness())[1]


async def test_not_ready_before_the_group_has_assigned_anything() -> None:
    s = service()
    s.consumer = FakeConsumer(0)
    assert await readiness_problems(s) == "not yet assigned by the consumer group"


async def test_an_instance_given_no_partition_is_ready_unless_it_must_own_one() -> None:
    s = service(ready_requires_partition=False)
    s.consumer = FakeConsumer(0)
    s.joined = True
    assert await readiness_problems(s) == "ready"
    s.settings = Settings(ready_requires_partition=True)
    assert await readiness_problems(s) == "no partitions assigned"
    s.assigned = {TopicPartition("events", 0)}
    assert await readiness_problems(s) == "ready"


async def test_stuck_when_the_consumer_has_not_joined_its_group_long_after_the_start() -> None:
    s = service(liveness_stall_seconds=5)
    assert (await s.liveness())[0], "just started: the join takes a moment"
    s.started_at = time.monotonic() - 30
    alive, why = await s.liveness()
    assert not alive
    assert why.startswith("consumer stuck: not joined its group 30 s after the start")
    s.joined = True
    assert (await s.liveness())[0], "joined (an empty assignment counts): alive"


async def test_alive_while_idle_and_stuck_when_records_wait_without_a_commit() -> None:
    s = service(liveness_stall_seconds=5)
    s.joined = True
    s.consumer = FakeConsumer(100)
    s.assigned = {TopicPartition("events", 0)}
    s.step = FakeStep(99)  # type: ignore[assignment]
    s.last_commit = time.monotonic() - 60
    assert (await s.liveness())[0], "nothing waits: idle, not stuck"
    s.step = FakeStep(40)  # type: ignore[assignment]
    alive, why = await s.liveness()
    assert not alive
    assert why.startswith("consumer stuck: 59 records wait")
    s.last_commit = time.monotonic()
    assert (await s.liveness())[0], "a recent commit: it is working through them"


async def test_stuck_when_a_publishers_loop_has_not_come_round() -> None:
    s = service(liveness_stall_seconds=5)
    s.joined = True
    s.publishers = FakePublishers(time.monotonic() - 30)  # type: ignore[assignment]
    alive, why = await s.liveness()
    assert not alive
    assert why.startswith("publisher stuck")


async def test_not_ready_while_added_input_partitions_wait() -> None:
    s = service()
    s.consumer = FakeConsumer(0)
    s.joined = True
    s.assigned = {TopicPartition("events", 0)}
    s.draining = "the input topic 'events' has 8 partitions, the referee judges it under 4"
    assert await readiness_problems(s) == s.draining
