"""The partitions' publishers on fakes of the store, the broker and the producers: in
milliseconds.

Each input partition's outbox on the same partition number, in position order, one
transaction a turn; what the step commits handed over and published from memory; what the
publisher did not see committed read from the store; a new owner fencing the old one and
resuming after the tail, nothing twice; checkpoints. The same is proven on the real broker
and PostgreSQL by tests/integration/kafka/test_publisher_fencing.py and the reliability
scenarios.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from aiokafka import TopicPartition

from referee.contracts.rejection import KafkaSource
from referee.processing.records import InputRecord, OutboxChunk
from referee.processing.step import ProcessingStep
from referee.service.kafka_options import NEXT_TRANSACTION_RETRY_SECONDS, publisher_producers
from referee.service.metrics import Metrics
from referee.service.publisher import Outbox, PartitionPublisher, Publishers, Publishing
from referee.service.settings import Settings
from referee.simulate import SimulationOptions, simulate
from tests.fakes import FakeBroker, FakeProducer, FakeStepStore, FakeTails

TOPIC = "game-events"
GROUP = "g"
VERDICTS = Outbox("verdicts", "verdicts-topic")
DEAD = Outbox("dead_letters", "dlq-topic")


def stream(partitions: int = 2, games: int = 8, seed: int = 3) -> list[InputRecord]:
    """A simulated stream with fouls and bad lines, games spread over partitions by key."""
    offsets = [0] * partitions
    options = SimulationOptions(games=games, seed=seed, foul_rate=0.2, bad_rate=0.05)
    out = []
    for game_id, line in simulate(options):
        p = sum(game_id.encode()) % partitions
        out.append(InputRecord(line, TOPIC, p, offsets[p], KafkaSource(TOPIC, p, offsets[p]), None))
        offsets[p] += 1
    return out


STREAM = stream()


class Cluster:
    """A fake store and broker, and the producers made on them."""

    def __init__(self) -> None:
        self.store = FakeStepStore()
        self.broker = FakeBroker(partitions=2)
        self.tails = FakeTails(self.broker)
        self.producers: list[FakeProducer] = []
        self.gate: asyncio.Event | None = None

    def publishing(self, **kwargs: float) -> Publishing:
        def make(transactional_id: str) -> FakeProducer:
            producer = FakeProducer(self.broker, transactional_id, commit_gate=self.gate)
            self.producers.append(producer)
            return producer

        return Publishing(
            group_id=GROUP,
            topic=TOPIC,
            transactional_prefix="referee-relay.g",
            verdicts=VERDICTS,
            dead_letters=DEAD,
            make_producer=make,
            store=self.store,
            tails=self.tails,
            metrics=Metrics(),
            poll_seconds=0.01,
            **kwargs,  # type: ignore[arg-type]
        )

    def stored(self, outbox: str, partition: int) -> list[int]:
        rows = self.store.verdicts if outbox == "verdicts" else self.store.dead_letters
        return sorted(r.position for r in rows if r.source_partition == partition)

    def published(self, topic: str, partition: int) -> list[int]:
        return [pos for t, p, _, _, pos in self.broker.committed if (t, p) == (topic, partition)]

    def all_published(self) -> bool:
        return all(
            self.published(o.topic, p) == self.stored(o.name, p)
            for o in (VERDICTS, DEAD)
            for p in (0, 1)
        )


async def eventually(done: Callable[[], bool], limit: float = 5) -> None:
    """Waits until ``done()`` holds (the fakes answer at once: milliseconds)."""
    deadline = asyncio.get_running_loop().time() + limit
    while asyncio.get_running_loop().time() < deadline:
        if done():
            return
        await asyncio.sleep(0.002)
    raise AssertionError("not reached in time")


async def test_each_partitions_outbox_goes_to_its_own_partition_number_in_position_order() -> None:
    cluster = Cluster()
    publishers = Publishers(cluster.publishing())
    step = ProcessingStep(cluster.store, GROUP, on_appended=publishers.appended)
    await publishers.own([0, 1])
    for i in range(0, len(STREAM), 40):
        await step.process(STREAM[i : i + 40])
    await eventually(cluster.all_published)
    assert cluster.stored("verdicts", 0)
    assert cluster.stored("verdicts", 1)
    assert cluster.stored("dead_letters", 0) or cluster.stored("dead_letters", 1)
    rows: dict[tuple[str, int], tuple[int, bytes | None, str]] = {
        (VERDICTS.topic, v.position): (v.source_partition, v.game_id.encode(), v.body)
        for v in cluster.store.verdicts
    }
    rows |= {
        (DEAD.topic, d.position): (d.source_partition, d.key, d.body)
        for d in cluster.store.dead_letters
    }
    for topic, partition, key, value, position in cluster.broker.committed:
        assert rows[topic, position] == (partition, key, value.decode()), "on its input's number"
    assert sorted(cluster.broker.started) == ["referee-relay.g.0", "referee-relay.g.1"]
    await publishers.stop()


async def test_what_the_step_commits_is_published_from_memory_without_reading_the_store() -> None:
    cluster = Cluster()
    publishers = Publishers(cluster.publishing())
    step = ProcessingStep(cluster.store, GROUP, on_appended=publishers.appended)
    await publishers.own([0, 1])
    await eventually(lambda: all(p._through is not None for p in publishers.by_partition.values()))
    reads: list[int] = []
    rows_after = cluster.store.rows_after

    async def counted(*args: object) -> object:
        reads.append(1)
        return await rows_after(*args)  # type: ignore[arg-type]

    cluster.store.rows_after = counted  # type: ignore[method-assign,assignment]
    for i in range(0, len(STREAM), 25):
        await step.process(STREAM[i : i + 25])
    await eventually(cluster.all_published)
    assert reads == [], "every row came from the step's commits"
    await publishers.stop()


async def test_a_new_owner_publishes_the_backlog_after_the_tail_and_nothing_twice() -> None:
    cluster = Cluster()
    step = ProcessingStep(cluster.store, GROUP)
    half = len(STREAM) // 2
    for i in range(0, half, 30):
        await step.process(STREAM[i : min(i + 30, half)])
    first = Publishers(cluster.publishing())
    await first.own([0, 1])
    await eventually(cluster.all_published)
    await first.stop()
    for i in range(half, len(STREAM), 30):  # committed while nobody publishes
        await step.process(STREAM[i : i + 30])
    second = Publishers(cluster.publishing())
    await second.own([0, 1])
    await eventually(cluster.all_published)
    positions = [pos for t, p, _, _, pos in cluster.broker.committed if t == VERDICTS.topic]
    assert not [p for p, n in Counter(positions).items() if n > 1], "nothing twice"
    assert cluster.tails.reads == 4, "each owner read each partition's tails on taking it"
    await second.stop()


async def test_a_chunk_that_does_not_follow_on_makes_the_publisher_read_the_store() -> None:
    """A transaction the publisher did not see (another writer's, or one it dropped) leaves
    a gap in the input offsets: it reads the store rather than skip what was in between."""
    cluster = Cluster()
    publishers = Publishers(cluster.publishing())
    watched = ProcessingStep(cluster.store, GROUP, on_appended=publishers.appended)
    unseen = ProcessingStep(cluster.store, GROUP)  # its commits reach no publisher
    await publishers.own([0, 1])
    await eventually(lambda: all(p._through is not None for p in publishers.by_partition.values()))
    p0 = [r for r in STREAM if r.partition == 0]
    await watched.process(p0[:20])
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    await unseen.load_positions(TOPIC, [0])
    await unseen.process(p0[20:60])
    await watched.load_positions(TOPIC, [0])
    await watched.process(p0[60:])
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    await publishers.stop()
    assert cluster.all_published()


async def test_the_previous_owner_is_fenced_mid_transaction_and_every_row_is_published_once() -> (
    None
):
    cluster = Cluster()
    cluster.gate = asyncio.Event()  # the first owner's commits wait here
    old = PartitionPublisher(cluster.publishing(), 0)
    owner = [old]
    old.start()

    def appended(chunks: list[OutboxChunk]) -> None:
        for chunk in chunks:
            if chunk.partition == 0:
                owner[0].offer(chunk)

    step = ProcessingStep(cluster.store, GROUP, on_appended=appended)
    p0 = [r for r in STREAM if r.partition == 0]
    await step.process(p0[:40])
    await eventually(lambda: bool(cluster.producers) and "commit" in cluster.producers[0].calls)
    held = cluster.gate
    cluster.gate = None
    new = PartitionPublisher(cluster.publishing(), 0)  # starting fences the old one
    owner[0] = new
    new.start()
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    held.set()  # the old owner's commit goes on: refused, it was fenced
    await eventually(lambda: cluster.broker.aborted > 0)
    await old.stop(drain=False)
    await step.process(p0[40:])
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    await new.stop(drain=True)
    assert cluster.broker.started == ["referee-relay.g.0", "referee-relay.g.0"]


async def test_a_failed_send_is_never_committed_and_the_rows_are_published_later() -> None:
    cluster = Cluster()
    failing = [True]

    def make(transactional_id: str) -> FakeProducer:
        producer = FakeProducer(cluster.broker, transactional_id, fail_at=1 if failing[0] else None)
        failing[0] = False
        cluster.producers.append(producer)
        return producer

    publishers = Publishers(replace(cluster.publishing(), make_producer=make))
    step = ProcessingStep(cluster.store, GROUP, on_appended=publishers.appended)
    await publishers.own([0, 1])
    for i in range(0, len(STREAM), 40):
        await step.process(STREAM[i : i + 40])
    await eventually(cluster.all_published)
    assert "abort" in cluster.producers[0].calls, "the failed transaction is aborted"
    positions = [pos for t, _, _, _, pos in cluster.broker.committed if t == VERDICTS.topic]
    assert len(positions) == len(set(positions))
    await publishers.stop()


async def test_checkpoints_are_saved_and_a_new_owner_starts_from_them() -> None:
    cluster = Cluster()
    publishers = Publishers(cluster.publishing(checkpoint_every=1))
    step = ProcessingStep(cluster.store, GROUP, on_appended=publishers.appended)
    await publishers.own([0, 1])
    await step.process(STREAM[:60])
    await eventually(cluster.all_published)
    await publishers.stop()
    saved = {(o, p): pos for o, _, p, pos in cluster.store.checkpoints}
    assert saved[("verdicts", 0)] == max(cluster.stored("verdicts", 0))
    cluster.broker.committed.clear()  # retention took the topic's records
    again = Publishers(cluster.publishing())
    step.on_appended = again.appended
    await again.own([0, 1])
    await step.process(STREAM[60:])
    await eventually(lambda: bool(cluster.published(VERDICTS.topic, 0)))
    await eventually(
        lambda: (
            cluster.published(VERDICTS.topic, 0)
            == [p for p in cluster.stored("verdicts", 0) if p > saved[("verdicts", 0)]]
        )
    )
    await again.stop()


async def test_stopping_publishes_what_was_handed_over_first() -> None:
    cluster = Cluster()
    publishers = Publishers(cluster.publishing())
    step = ProcessingStep(cluster.store, GROUP, on_appended=publishers.appended)
    await publishers.own([0, 1])
    await eventually(lambda: all(p._through is not None for p in publishers.by_partition.values()))
    await step.process(STREAM[:80])
    await publishers.stop()  # at once: the chunks are still pending
    assert cluster.all_published()


async def test_a_lost_partitions_publisher_stops_and_the_others_go_on() -> None:
    cluster = Cluster()
    publishers = Publishers(cluster.publishing())
    await publishers.own([0, 1])
    kept = publishers.by_partition[1]
    await publishers.own([1])
    assert list(publishers.by_partition) == [1]
    assert publishers.by_partition[1] is kept, "a partition kept keeps its publisher"
    assert cluster.broker.started.count("referee-relay.g.1") == 1, "no second fence"
    await publishers.stop()


def test_the_transactional_prefix_defaults_to_one_per_group() -> None:
    assert Settings(group_id="prod").relay_transactional_id == "referee-relay.prod"
    assert Settings(relay_transactional_id="mine").relay_transactional_id == "mine"


async def test_a_partitions_producer_is_transactional_with_its_own_id() -> None:
    cluster = Cluster()
    assert cluster.publishing().transactional_id(7) == "referee-relay.g.7"
    producer = publisher_producers(Settings(group_id="prod"), None)("referee-relay.prod.7")
    try:
        assert getattr(producer, "_txn_manager").transactional_id == "referee-relay.prod.7"  # noqa: B009
    finally:
        await producer.stop()


async def test_the_next_transaction_asks_again_within_milliseconds_not_20() -> None:
    """The publishers' producers retry CONCURRENT_TRANSACTIONS (the markers of the transaction
    before still being written) after 2 ms, not aiokafka's fixed 20 ms."""
    from types import SimpleNamespace

    from aiokafka.errors import ConcurrentTransactions
    from aiokafka.producer.sender import AddPartitionsToTxnHandler

    producer = publisher_producers(Settings(group_id="prod"), None)("referee-relay.prod.0")
    try:
        sender = getattr(producer, "_sender")  # noqa: B009
        handler = AddPartitionsToTxnHandler(sender, [TopicPartition("verdicts", 0)])
        busy = SimpleNamespace(errors=[("verdicts", [(0, ConcurrentTransactions.errno)])])
        assert handler.handle_response(busy) == NEXT_TRANSACTION_RETRY_SECONDS == 0.002
    finally:
        await producer.stop()
