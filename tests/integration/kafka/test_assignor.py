"""The group's assignor on the real broker: members joining a new group together settle, and
a member leaving or joining moves only the partitions it must (referee/service/assignor.py).

Plain aiokafka consumers, each with its own ``StickyAssignor`` as ``referee serve`` builds it,
so that a join that never completes shows as itself and not as a referee that is slow to
start. Release 0.2.0 offered two protocols and hung here (docs/reliability.md)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from referee.service.assignor import StickyAssignor

pytestmark = pytest.mark.kafka

PARTITIONS = 16
SETTLE_SECONDS = 30.0


async def new_topic(bootstrap: str) -> str:
    topic = f"t{uuid.uuid4().hex[:8]}.assign"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        await admin.close()
    return topic


async def member(bootstrap: str, topic: str, group: str, *, old: bool = False) -> AIOKafkaConsumer:
    strategy = (RoundRobinPartitionAssignor,) if old else (StickyAssignor(),)
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        partition_assignment_strategy=strategy,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )
    await consumer.start()
    return consumer


async def settle(consumers: list[AIOKafkaConsumer]) -> list[set[int]]:
    """Polls every member until their assignments cover the partitions once, balanced."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        for consumer in consumers:
            await consumer.getmany(timeout_ms=50)
        shares = [{tp.partition for tp in c.assignment()} for c in consumers]
        flat = sorted(p for share in shares for p in share)
        sizes = [len(share) for share in shares]
        if flat == list(range(PARTITIONS)) and max(sizes) - min(sizes) <= 1:
            return shares
    raise AssertionError(f"the group did not settle in {SETTLE_SECONDS} s: {shares}")


async def test_pairs_joining_a_new_group_together_always_settle(bootstrap: str) -> None:
    topic = await new_topic(bootstrap)
    for _ in range(8):
        group = f"g{uuid.uuid4().hex[:8]}"
        pair = list(
            await asyncio.gather(member(bootstrap, topic, group), member(bootstrap, topic, group))
        )
        try:
            shares = await settle(pair)
            assert [len(s) for s in shares] == [8, 8]
        finally:
            await asyncio.gather(*(c.stop() for c in pair))


async def test_a_member_leaving_or_joining_moves_only_what_it_must(bootstrap: str) -> None:
    topic = await new_topic(bootstrap)
    group = f"g{uuid.uuid4().hex[:8]}"
    members = [await member(bootstrap, topic, group) for _ in range(4)]
    try:
        before = await settle(members)
        leaving = members.pop()
        await leaving.stop()
        after = await settle(members)
        for had, has in zip(before, after, strict=False):
            assert had <= has, "a survivor kept every partition it had"
        members.append(await member(bootstrap, topic, group))
        rejoined = await settle(members)
        moved = sum(len(had - has) for had, has in zip(after, rejoined, strict=False))
        assert moved == len(rejoined[-1]) == 4, "the newcomer took only its share"
    finally:
        await asyncio.gather(*(c.stop() for c in members))


async def test_a_group_with_a_member_of_an_older_release_agrees_and_deals_to_it(
    bootstrap: str,
) -> None:
    """During a rolling upgrade: round robin (releases up to 0.3.0) and this assignor are one
    protocol, whichever member leads."""
    topic = await new_topic(bootstrap)
    for old_first in (True, False):
        group = f"g{uuid.uuid4().hex[:8]}"
        first = await member(bootstrap, topic, group, old=old_first)
        second = await member(bootstrap, topic, group, old=not old_first)
        try:
            shares = await settle([first, second])
            assert [len(s) for s in shares] == [8, 8]
        finally:
            await asyncio.gather(first.stop(), second.stop())
