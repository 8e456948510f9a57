"""The relay's transactions on a real broker: a severed leader is fenced, tails skip aborts.

These drive two ``OutboxRelay`` objects in the test's own process against the real Kafka and
PostgreSQL, so the race that ``docs/reliability.md`` used to admit can be staged exactly: the
leader is stopped in the middle of a transaction, its database session (and so its lock) is
terminated, a second relay takes the lead and publishes everything, and only then does the
first one carry on. The reliability scenario ``test_fenced_relay.py`` does the same to
``referee serve`` processes, by timing instead of by construction.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from referee.service.metrics import Metrics
from referee.service.relay import POSITION_HEADER, Outbox, OutboxRelay, TopicTails
from referee.store.database import create_engine
from referee.store.relay_store import APPLICATION_NAME, PostgresRelayStore
from tests.integration.conftest import relay_lock_holders
from tests.integration.kafka.checks import assert_same_verdicts
from tests.integration.kafka.conftest import Stack, replay_in_memory
from tools.testkit.kafkatools import drain

pytestmark = pytest.mark.kafka


def _plain(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


class HeldProducer:
    """A real transactional producer whose first transaction stops at ``hold`` until released.

    ``hold="send"``: before the first record reaches the real producer (the records are in
    the relay's hands, nowhere on the broker); ``hold="commit"``: after every record is on the
    broker, before the commit (an open transaction).
    """

    def __init__(self, real: AIOKafkaProducer, hold: str) -> None:
        self.real = real
        self.hold = hold
        self.reached = asyncio.Event()
        self.release = asyncio.Event()

    async def _maybe_hold(self, point: str) -> None:
        if self.hold == point and not self.reached.is_set():
            self.reached.set()
            await self.release.wait()

    async def start(self) -> None:
        await self.real.start()

    async def stop(self) -> None:
        await self.real.stop()

    async def begin_transaction(self) -> None:
        await self.real.begin_transaction()

    async def abort_transaction(self) -> None:
        await self.real.abort_transaction()

    async def commit_transaction(self) -> None:
        await self._maybe_hold("commit")
        await self.real.commit_transaction()

    async def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> asyncio.Future[Any]:
        await self._maybe_hold("send")
        future: asyncio.Future[Any] = await self.real.send(
            topic, value, key=key, partition=partition, headers=headers
        )
        return future


def transactional(bootstrap: str, transactional_id: str) -> AIOKafkaProducer:
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=transactional_id, linger_ms=5
    )


def relay_on(stack: Stack, make: Any) -> OutboxRelay:
    return OutboxRelay(
        PostgresRelayStore(create_engine(stack.database_url)),
        [Outbox("verdicts", stack.topics.verdicts), Outbox("dead_letters", stack.topics.dlq)],
        make,
        TopicTails({"bootstrap_servers": stack.bootstrap}),
        Metrics(),
    )


async def relay_session(url: str) -> tuple[int, str]:
    """(pid, application_name) of the session holding the relay's advisory lock."""
    conn = await asyncpg.connect(_plain(url))
    try:
        holders = await relay_lock_holders(conn)
        assert len(holders) == 1, f"expected one relay lock holder, found {holders}"
        return holders[0]
    finally:
        await conn.close()


async def terminate(url: str, pid: int) -> None:
    conn = await asyncpg.connect(_plain(url))
    try:
        assert await conn.fetchval("SELECT pg_terminate_backend($1)", pid)
    finally:
        await conn.close()


@pytest.mark.parametrize("hold", ["send", "commit"])
async def test_a_severed_leader_is_fenced_and_nothing_is_published_twice(
    stack: Stack,
    simulated_log: Path,
    tmp_path: Path,
    hold: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="referee.relay")
    # given outboxes filled by the processing step
    await asyncio.to_thread(
        subprocess.run,
        [
            sys.executable,
            "-m",
            "referee",
            "replay",
            str(simulated_log),
            "--database",
            stack.database_url,
            "--output",
            "/dev/null",
        ],
        check=True,
        capture_output=True,
    )
    want = replay_in_memory(simulated_log, tmp_path)
    transactional_id = f"referee-relay.{stack.group}"
    held = HeldProducer(transactional(stack.bootstrap, transactional_id), hold)
    makes = iter([held])
    first = relay_on(stack, lambda: next(makes))
    second = relay_on(stack, lambda: transactional(stack.bootstrap, transactional_id))
    stop_first, stop_second = asyncio.Event(), asyncio.Event()
    first_task = asyncio.create_task(first.run(stop_first))
    second_task: asyncio.Task[None] | None = None
    try:
        # when the leader is held in the middle of its first transaction
        await asyncio.wait_for(held.reached.wait(), 60)
        assert first.in_transaction
        # and its database session, so its lock, is severed
        pid, name = await relay_session(stack.database_url)
        assert name == APPLICATION_NAME
        await terminate(stack.database_url, pid)
        # and a second relay takes the lead and publishes both outboxes in full
        second_task = asyncio.create_task(second.run(stop_second))
        verdicts = await drain(
            stack.bootstrap, stack.topics.verdicts, expect=len(want.verdicts), quiet_seconds=2
        )
        assert len(verdicts) == len(want.verdicts), "the second relay did not publish all"
        stop_second.set()
        await asyncio.wait_for(second_task, 30)
        # and only then the first one carries on with its transaction
        stop_first.set()
        held.release.set()
        await asyncio.wait_for(first_task, 30)
    finally:
        for task in (first_task, second_task):
            if task is not None and not task.done():
                task.cancel()
        await first.store.engine.dispose()  # type: ignore[attr-defined]
        await second.store.engine.dispose()  # type: ignore[attr-defined]

    # then the first relay was fenced: its transaction never became visible
    fenced = [r for r in caplog.records if r.getMessage().startswith("relay fenced")]
    assert len(fenced) == 1, [r.getMessage() for r in caplog.records]
    verdicts = await drain(stack.bootstrap, stack.topics.verdicts, quiet_seconds=2)
    assert_same_verdicts(
        [v.decode() for *_, v, _ in verdicts], want.verdicts, "on the verdict topic"
    )
    ids = Counter(json.loads(v)["verdict_id"] for *_, v, _ in verdicts)
    assert max(ids.values()) == 1
    dead = await drain(stack.bootstrap, stack.topics.dlq, quiet_seconds=2)
    assert Counter(json.loads(v)["raw"] for *_, v, _ in dead) == Counter(
        r["raw"] for r in want.rejections
    )
    # and what a read_uncommitted reader sees tells where the first relay's records were
    everything = await drain(
        stack.bootstrap,
        stack.topics.verdicts,
        quiet_seconds=2,
        isolation_level="read_uncommitted",
    )
    if hold == "commit":
        # on the broker, uncommitted when the second relay took over: aborted by its init,
        # so a read_uncommitted reader sees every verdict of that transaction twice
        assert len(everything) > len(verdicts)
    else:
        # still in the first relay's hands: fenced at the broker, never written
        assert len(everything) == len(verdicts)


async def test_the_tails_skip_aborted_transactions_and_commit_markers(
    stack: Stack,
) -> None:
    topic = stack.topics.verdicts
    admin = AIOKafkaAdminClient(bootstrap_servers=stack.bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(f"{topic}.tails", 3, 1)])
    finally:
        await admin.close()
    topic = f"{topic}.tails"
    producer = transactional(stack.bootstrap, f"tails-{stack.group}")
    await producer.start()

    async def publish(partition: int, positions: range, *, commit: bool) -> None:
        await producer.begin_transaction()
        futures = [
            await producer.send(
                topic, b"{}", partition=partition, headers=[(POSITION_HEADER, str(p).encode())]
            )
            for p in positions
        ]
        await asyncio.gather(*futures)
        if commit:
            await producer.commit_transaction()
        else:
            await producer.abort_transaction()

    try:
        # given committed records, one transaction each (a commit marker after every record)
        for p in range(1, 21):
            await publish(0, range(p, p + 1), commit=True)
        await publish(1, range(1, 6), commit=True)
        # and behind them on partition 0 far more aborted records than the first window
        await publish(0, range(21, 421), commit=False)
        # and partition 2 holding nothing but an aborted transaction
        await publish(2, range(1, 100), commit=False)
    finally:
        await producer.stop()

    partitions, last = await TopicTails({"bootstrap_servers": stack.bootstrap}).read(topic)

    assert partitions == 3
    assert last == {0: 20, 1: 5}
