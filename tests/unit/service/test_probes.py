"""What the probes of a running referee say, on its state alone (no server)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from referee.processing.rows import PositionRow
from referee.service.batch import Progress
from referee.service.runtime import Service
from referee.service.settings import Settings
from tests.fakes import FakeBroker, FakeStepStore
from tests.unit.service.owners import GROUP, TOPIC, Instance, instance, takes_done, tps


def service(
    store: FakeStepStore | None = None, broker: FakeBroker | None = None, **settings: Any
) -> tuple[Service, Instance]:
    """A service on the fakes, its partitions' owner on the same."""
    a = instance(store or FakeStepStore(), broker or FakeBroker())
    a.partitions.ready_requires_partition = settings.get("ready_requires_partition", True)
    s = Service(
        Settings(**settings),
        None,  # type: ignore[arg-type]  # readiness's ping is replaced below
        a.step,
        a.partitions,
        Progress(a.metrics, lambda: a.consumer),
        a.metrics,
        lambda: a.consumer,
    )
    return s, a


async def readiness_problems(s: Service) -> str:
    async def reachable(engine: object) -> None:
        return None

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("referee.service.runtime.ping", reachable)
        return (await s.readiness())[1]


async def test_not_ready_before_the_group_has_assigned_anything() -> None:
    s, _ = service()
    assert await readiness_problems(s) == "not yet assigned by the consumer group"


async def test_an_instance_given_no_partition_is_ready_unless_it_must_own_one() -> None:
    s, a = service(ready_requires_partition=False)
    await a.partitions.assigned(set())
    assert await readiness_problems(s) == "ready"
    a.partitions.ready_requires_partition = True
    assert await readiness_problems(s) == "no partitions assigned"
    await a.partitions.assigned(tps(0))
    await takes_done(a.partitions)
    assert await readiness_problems(s) == "ready"
    await a.partitions.stop()


async def test_stuck_when_the_consumer_has_not_joined_its_group_long_after_the_start() -> None:
    s, a = service(liveness_stall_seconds=5)
    assert (await s.liveness())[0], "just started: the join takes a moment"
    s.started_at = time.monotonic() - 30
    alive, why = await s.liveness()
    assert not alive
    assert why.startswith("consumer stuck: not joined its group 30 s after the start")
    await a.partitions.assigned(set())
    assert (await s.liveness())[0], "joined (an empty assignment counts): alive"


async def test_alive_while_idle_and_stuck_when_records_wait_without_a_commit() -> None:
    store = FakeStepStore()
    store.positions.append(PositionRow(GROUP, TOPIC, 0, 99, 1))
    s, a = service(store, liveness_stall_seconds=5)
    await a.partitions.assigned(tps(0))
    await takes_done(a.partitions)
    a.consumer.high[0] = 100
    s.progress.last_commit = time.monotonic() - 60
    assert (await s.liveness())[0], "nothing waits: idle, not stuck"
    a.consumer.high[0] = 159
    alive, why = await s.liveness()
    assert not alive
    assert why.startswith("consumer stuck: 59 records wait")
    s.progress.last_commit = time.monotonic()
    assert (await s.liveness())[0], "a recent commit: it is working through them"
    await a.partitions.stop()


async def test_stuck_when_a_publishers_loop_has_not_come_round() -> None:
    s, a = service(liveness_stall_seconds=5)
    await a.partitions.assigned(tps(0))
    await takes_done(a.partitions)
    a.publisher.alive_at = time.monotonic() - 30
    alive, why = await s.liveness()
    assert not alive
    assert why.startswith("publisher stuck")
    await a.partitions.stop()


async def test_not_ready_while_a_publisher_cannot_publish() -> None:
    s, a = service()
    await a.partitions.assigned(tps(0))
    await takes_done(a.partitions)
    a.publisher.health.failing_since = time.monotonic() - 120
    a.publisher.health.last_error = "KafkaConnectionError: no broker"
    problems = await readiness_problems(s)
    assert problems.startswith("the publisher cannot publish for 120 s")
    assert problems.endswith("KafkaConnectionError: no broker")
    await a.partitions.stop()


async def test_not_ready_while_added_input_partitions_wait() -> None:
    s, a = service()
    await a.partitions.assigned(tps(0))
    await takes_done(a.partitions)
    a.partitions.draining = (
        "the input topic 'events' has 8 partitions, the referee judges it under 4"
    )
    assert await readiness_problems(s) == a.partitions.draining
    await a.partitions.stop()


async def test_not_ready_while_a_take_is_under_way_and_stuck_when_it_goes_on_too_long() -> None:
    store = FakeStepStore()
    s, a = service(store, liveness_stall_seconds=5)
    lock = store._locks[GROUP, TOPIC, 0]  # the partition's lock, as a batch in flight holds it
    await lock.acquire()
    await a.partitions.assigned(tps(0))
    await asyncio.sleep(0.05)
    assert await readiness_problems(s) == "taking partitions 0"
    assert (await s.liveness())[0], "a take that has just begun is not stuck"
    a.partitions.owned[0].since = time.monotonic() - 30
    alive, why = await s.liveness()
    assert not alive
    assert why.startswith("consumer stuck: the take of partitions 0 has gone on for 30 s")
    lock.release()
    await takes_done(a.partitions)
    assert await readiness_problems(s) == "ready"
    assert (await s.liveness())[0]
    await a.partitions.stop()
