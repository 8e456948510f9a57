"""A partition's publishers on a real broker: the previous owner is fenced, the tails skip
aborted transactions.

These drive two ``PartitionPublisher`` objects of one input partition in the test's own
process against the real Kafka and PostgreSQL, so the race can be staged exactly: the first
owner is stopped in the middle of a transaction (its records still in its hands, or on the
broker uncommitted), a second owner of the partition starts and publishes everything, and
only then does the first one carry on. The reliability scenarios do the same to ``referee
serve`` processes, by timing instead of by construction.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.partitioner import murmur2
from sqlalchemy.ext.asyncio import AsyncEngine

from referee.contracts.rejection import KafkaSource
from referee.processing.records import InputRecord
from referee.processing.step import ProcessingStep
from referee.service.metrics import Metrics
from referee.service.publisher import Cursor, Outbox, Publisher, Publishing, read_cursors
from referee.service.tails import POSITION_HEADER, Tail, TopicTails
from referee.store.database import create_engine
from referee.store.outbox_store import PostgresOutboxStore
from referee.store.step_store import PostgresStepStore
from tests.integration.kafka.conftest import Stack
from tools.testkit.kafkatools import drain, keyed_lines

pytestmark = pytest.mark.kafka


def _plain(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


class HeldProducer:
    """A real transactional producer whose first transaction stops at ``hold`` until released.

    ``hold="send"``: before the first record reaches the real producer (the records are in
    the publisher's hands, nowhere on the broker); ``hold="commit"``: after every record is on the
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


def partition_for(key: bytes | None, partitions: int, n: int) -> int:
    """Kafka's default partitioner: murmur2 of the key (a record without one: round robin)."""
    return n % partitions if key is None else (murmur2(key) & 0x7FFFFFFF) % partitions


async def fill(stack: Stack, log: Path) -> None:
    """Referees a log into the stack's store as if consumed from its input topic (partitions
    by murmur2 of the key, as a producer's default partitioner), publishing nothing."""
    offsets = [0] * 4
    records: list[InputRecord] = []
    for key, value in keyed_lines(log):
        p = partition_for(key, 4, len(records))
        records.append(
            InputRecord(
                value,
                stack.topics.input,
                p,
                offsets[p],
                KafkaSource(stack.topics.input, p, offsets[p]),
                key,
            )
        )
        offsets[p] += 1
    engine = create_engine(stack.database_url)
    try:
        step = ProcessingStep(PostgresStepStore(engine), stack.group)
        for i in range(0, len(records), 500):
            await step.process(records[i : i + 500])
    finally:
        await engine.dispose()


def publishing(stack: Stack, engine: AsyncEngine, make: Any) -> Publishing:
    return Publishing(
        group_id=stack.group,
        topic=stack.topics.input,
        transactional_prefix=f"referee-relay.{stack.group}",
        verdicts=Outbox("verdicts", stack.topics.verdicts),
        dead_letters=Outbox("dead_letters", stack.topics.dlq),
        make_producer=make,
        store=PostgresOutboxStore(engine),
        tails=TopicTails({"bootstrap_servers": stack.bootstrap}),
        metrics=Metrics(),
        page=50,  # several transactions: the first one is held
    )


async def stored(url: str, table: str, partition: int) -> list[str]:
    conn = await asyncpg.connect(_plain(url))
    try:
        rows = await conn.fetch(
            f"SELECT body FROM {table} WHERE source_partition = $1 ORDER BY position",
            partition,
        )
    finally:
        await conn.close()
    return [r["body"] for r in rows]


async def take(
    store: PostgresStepStore, stack: Stack, publisher: Publisher, name: str
) -> tuple[int, dict[str, Cursor]]:
    """Takes partition 0 for a publisher as the partitions' owner does: its term in the
    store, the previous owner's producer fenced by its id, then the tails read."""
    [taken] = await store.take(
        stack.group, stack.topics.input, [0], name, [publisher.transactional_id]
    )
    previous = taken.previous_transactional_id
    if previous is not None and not taken.previous_released:
        fence = transactional(stack.bootstrap, previous)
        await fence.start()
        await fence.stop()
    p = publisher.publishing
    tails = await p.tails.read([TopicPartition(o.topic, 0) for o in p.outboxes])
    cursors, _ = await read_cursors(p, [0], tails)
    return taken.epoch, cursors[0]


@pytest.mark.parametrize("hold", ["send", "commit"])
async def test_the_previous_owner_is_fenced_and_nothing_is_published_twice(
    stack: Stack,
    simulated_log: Path,
    hold: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="referee.publisher")
    # given partition 0's outboxes filled by the processing step
    await fill(stack, simulated_log)
    want = await stored(stack.database_url, "verdicts", 0)
    want_dead = await stored(stack.database_url, "dead_letters", 0)
    assert len(want) > 100
    engine = create_engine(stack.database_url)
    store = PostgresStepStore(engine)
    first_id = f"referee-relay.{stack.group}.i-first"
    held = HeldProducer(transactional(stack.bootstrap, first_id), hold)
    firsts = iter([held])

    def first_producer(tid: str) -> Any:
        return next(firsts, None) or transactional(stack.bootstrap, tid)

    first = Publisher(publishing(stack, engine, first_producer), "i-first", store)
    second = Publisher(
        publishing(stack, engine, lambda tid: transactional(stack.bootstrap, tid)),
        "i-second",
        store,
    )
    try:
        # when its first owner is held in the middle of its first transaction
        first.add(0, *await take(store, stack, first, "first"))
        first.start()
        await asyncio.wait_for(held.reached.wait(), 60)
        # and the partition's next owner takes it (its term first, then the first owner's
        # producer fenced by its id), and publishes it in full
        second.start()
        await asyncio.wait_for(second.ready.wait(), 60)
        second.add(0, *await take(store, stack, second, "second"))
        verdicts = await drain(
            stack.bootstrap, stack.topics.verdicts, expect=len(want), quiet_seconds=2
        )
        assert [v.decode() for p, *_, v, _ in verdicts if p == 0] == want
        await second.stop(drain=True)
        # and only then the first one carries on with its transaction
        held.release.set()
        for _ in range(100):
            if 0 in first.lost:
                break
            await asyncio.sleep(0.1)
        await first.stop(drain=False)
    finally:
        await engine.dispose()

    # then the first owner was fenced: its transaction never became visible, and it gave the
    # partition up without fencing the new owner back
    fenced = [r for r in caplog.records if r.getMessage().startswith("publisher fenced")]
    assert len(fenced) == 1, [r.getMessage() for r in caplog.records]
    assert first.lost == {0}
    verdicts = await drain(stack.bootstrap, stack.topics.verdicts, quiet_seconds=2)
    assert {p for p, *_ in verdicts} == {0}, "only partition 0's owner published"
    assert [v.decode() for *_, v, _ in verdicts] == want, "each once, in outbox order"
    ids = Counter(json.loads(v)["verdict_id"] for *_, v, _ in verdicts)
    assert max(ids.values()) == 1
    dead = await drain(stack.bootstrap, stack.topics.dlq, quiet_seconds=2)
    assert [v.decode() for *_, v, _ in dead] == want_dead
    # and what a read_uncommitted reader sees tells where the first owner's records were
    everything = await drain(
        stack.bootstrap,
        stack.topics.verdicts,
        quiet_seconds=2,
        isolation_level="read_uncommitted",
    )
    if hold == "commit":
        # on the broker, uncommitted when the second owner started: aborted by its init, so
        # a read_uncommitted reader sees every verdict of that transaction twice
        assert len(everything) > len(verdicts)
    else:
        # still in the first owner's hands: fenced at the broker, never written
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

    tps = [TopicPartition(topic, p) for p in range(3)]
    last = await TopicTails({"bootstrap_servers": stack.bootstrap}).read(tps)

    assert last == {tps[0]: Tail(20, None), tps[1]: Tail(5, None)}
