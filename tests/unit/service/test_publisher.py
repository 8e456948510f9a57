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
from referee.service.kafka_options import publisher_producers
from referee.service.metrics import Metrics
from referee.service.patches import NEXT_TRANSACTION_RETRY_SECONDS, quicken_next_transaction
from referee.service.publisher import Opened, Outbox, PartitionPublisher, Publishing
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


class Publishers:
    """Publishers opened and started as the partitions' owner (``partitions.py``) does, for
    the partitions a test says this instance owns."""

    def __init__(self, publishing: Publishing, *, owner: bool = True) -> None:
        self.publishing = publishing
        self.by_partition: dict[int, PartitionPublisher] = {}
        self.opened: dict[int, Opened] = {}
        self.lost: list[int] = []
        self.owner = owner
        """What the store answers a fenced publisher: is its term still the newest?"""

    def appended(self, chunks: list[OutboxChunk]) -> None:
        for chunk in chunks:
            if publisher := self.by_partition.get(chunk.partition):
                publisher.offer(chunk)

    async def own(self, partitions: list[int]) -> None:
        for p in [p for p in self.by_partition if p not in partitions]:
            await self.by_partition.pop(p).stop(drain=False)
        for p in partitions:
            if p not in self.by_partition:
                publisher = self.publisher(p)
                store = self.publishing.store
                stored = await store.stored_position(GROUP, TOPIC, p)
                self.opened[p] = await publisher.open(stored)
                if self.opened[p].refused is None:
                    self.by_partition[p] = publisher
                    publisher.start()

    def publisher(self, partition: int) -> PartitionPublisher:
        async def still_owner() -> bool:
            return self.owner

        return PartitionPublisher(
            self.publishing, partition, still_owner=still_owner, on_lost=self.lost.append
        )

    async def stop(self) -> None:
        for publisher in self.by_partition.values():
            await publisher.stop(drain=True)
        self.by_partition.clear()


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
        return [pos for t, p, _, _, pos, _ in self.broker.committed if (t, p) == (topic, partition)]

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
    for topic, partition, key, value, position, _ in cluster.broker.committed:
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
    positions = [pos for t, p, _, _, pos, _ in cluster.broker.committed if t == VERDICTS.topic]
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
    await unseen.adopt(TOPIC, {0: (None, cluster.store.position_of(GROUP, TOPIC, 0))})
    await unseen.process(p0[20:60])
    await watched.adopt(TOPIC, {0: (None, cluster.store.position_of(GROUP, TOPIC, 0))})
    await watched.process(p0[60:])
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    await publishers.stop()
    assert cluster.all_published()


async def test_the_previous_owner_is_fenced_mid_transaction_and_every_row_is_published_once() -> (
    None
):
    cluster = Cluster()
    cluster.gate = asyncio.Event()  # the first owner's commits wait here
    # the store names the new owner: the old one, fenced, must stop and not fence it back
    old_instance = Publishers(cluster.publishing(), owner=False)
    old = old_instance.publisher(0)
    await old.open(-1)
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
    new = Publishers(cluster.publishing()).publisher(0)
    await new.open(-1)  # opening fences the old one
    owner[0] = new
    new.start()
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    held.set()  # the old owner's commit goes on: refused, it was fenced
    await eventually(lambda: cluster.broker.aborted > 0)
    await eventually(lambda: old_instance.lost == [0])
    await old.stop(drain=False)
    await step.process(p0[40:])
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    await new.stop(drain=True)
    assert cluster.broker.started == ["referee-relay.g.0", "referee-relay.g.0"], "no fence back"


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
    positions = [pos for t, _, _, _, pos, _ in cluster.broker.committed if t == VERDICTS.topic]
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

    quicken_next_transaction()
    producer = publisher_producers(Settings(group_id="prod"), None)("referee-relay.prod.0")
    try:
        sender = getattr(producer, "_sender")  # noqa: B009
        handler = AddPartitionsToTxnHandler(sender, [TopicPartition("verdicts", 0)])
        busy = SimpleNamespace(errors=[("verdicts", [(0, ConcurrentTransactions.errno)])])
        assert handler.handle_response(busy) == NEXT_TRANSACTION_RETRY_SECONDS == 0.002
    finally:
        await producer.stop()


# --- the topics and the store agree, or the publisher says so ----------------------------------


def published_bodies(cluster: Cluster, topic: str, partition: int) -> list[bytes]:
    return [v for t, p, _, v, _, _ in cluster.broker.committed if (t, p) == (topic, partition)]


async def test_given_the_store_went_back_in_time_then_the_topics_get_only_what_they_lack() -> None:
    """Verdicts of a third of the stream were published, then the store was put back to before
    them (a restore): the input is judged again from the store's position, and the topic gets
    every verdict once, in order, as a run that never went back."""
    p0 = [r for r in STREAM if r.partition == 0]
    straight = Cluster()
    await _judge(straight, p0, ProcessingStep(straight.store, GROUP))
    cluster = Cluster()
    first = Publishers(cluster.publishing())
    step = ProcessingStep(cluster.store, GROUP, on_appended=first.appended)
    await first.own([0])
    third = len(p0) // 3
    await _judge(cluster, p0[:third], step)
    restore = cluster.store.snapshot()
    await _judge(cluster, p0[third : 2 * third], step)
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    await first.stop()
    lost = [v.body for v in cluster.store.verdicts if v.source_partition == 0][-1]
    restore()  # the store went back: its last commits, and their verdicts, are gone
    assert lost.encode() in published_bodies(cluster, VERDICTS.topic, 0)
    again = Publishers(cluster.publishing())
    restarted = ProcessingStep(cluster.store, GROUP, on_appended=again.appended)
    await again.own([0])
    assert again.opened[0].behind, "the topic holds input the store did not process"
    stored = cluster.store.position_of(GROUP, TOPIC, 0)
    await restarted.adopt(TOPIC, {0: (None, stored)})
    await _judge(cluster, [r for r in p0 if r.offset > stored], restarted)
    await eventually(
        lambda: len(published_bodies(cluster, VERDICTS.topic, 0)) >= len(straight.store.verdicts)
    )
    await again.stop()
    expected = [v.body.encode() for v in straight.store.verdicts]
    assert published_bodies(cluster, VERDICTS.topic, 0) == expected, "each once, in order"
    expected_dead = [d.body.encode() for d in straight.store.dead_letters]
    assert published_bodies(cluster, DEAD.topic, 0) == expected_dead
    assert sorted(v.body for v in cluster.store.verdicts) == sorted(
        v.body for v in straight.store.verdicts
    ), "the store exact afterwards"


async def _judge(cluster: Cluster, records: list[InputRecord], step: ProcessingStep) -> None:
    for i in range(0, len(records), 25):
        await step.process(records[i : i + 25])


async def test_given_the_input_it_needs_is_gone_then_the_partition_is_refused() -> None:
    cluster = Cluster()
    step = ProcessingStep(cluster.store, GROUP)
    await step.process([r for r in STREAM if r.partition == 0][:20])
    cluster.broker.input_offsets[0] = (100, 500)  # retention deleted offsets below 100
    publishers = Publishers(cluster.publishing())
    await publishers.own([0])
    opened = publishers.opened[0]
    assert opened.reason == "input_gone"
    assert opened.refused is not None
    assert "offsets 20 to 99" in opened.refused
    assert cluster.broker.committed == [], "nothing published"
    cluster.store.gaps.append((GROUP, TOPIC, 0, 20, 100))  # referee partitions --accept-gap
    await publishers.own([0])
    assert publishers.opened[0].refused is None
    await publishers.stop()


async def test_given_the_store_lost_commits_and_the_input_is_gone_then_it_is_refused() -> None:
    cluster = Cluster()
    cluster.broker.committed.append((VERDICTS.topic, 0, b"g", b"{}", 7, 50))
    cluster.broker.input_offsets[0] = (30, 100)  # nothing stored; the topic has input 50's
    publishers = Publishers(cluster.publishing())
    await publishers.own([0])
    assert publishers.opened[0].reason == "input_gone"
    assert "the store lost commits" in (publishers.opened[0].refused or "")


async def test_given_the_input_topic_was_made_again_then_the_partition_is_refused() -> None:
    cluster = Cluster()
    step = ProcessingStep(cluster.store, GROUP)
    await step.process([r for r in STREAM if r.partition == 0][:20])
    cluster.broker.input_offsets[0] = (0, 5)  # it ends before the store's position
    publishers = Publishers(cluster.publishing())
    await publishers.own([0])
    assert publishers.opened[0].reason == "input_recreated"
    cluster.broker.input_offsets[0] = (0, 500)
    cluster.broker.input_records[0, 19] = b'{"another":"record"}'  # longer, but not the same
    await publishers.own([0])
    assert publishers.opened[0].reason == "input_recreated"
    cluster.broker.input_records[0, 19] = [r for r in STREAM if r.partition == 0][19].raw
    await publishers.own([0])
    assert publishers.opened[0].refused is None, "the record the store processed"
    await publishers.stop()


async def test_a_publisher_fenced_by_somebody_not_the_owner_resumes() -> None:
    cluster = Cluster()
    publishers = Publishers(cluster.publishing())
    step = ProcessingStep(cluster.store, GROUP, on_appended=publishers.appended)
    await publishers.own([0])
    p0 = [r for r in STREAM if r.partition == 0]
    await step.process(p0[:30])
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    await FakeProducer(cluster.broker, "referee-relay.g.0").start()  # an operator's tool
    await step.process(p0[30:])
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    await publishers.stop()
    assert publishers.lost == []
    assert cluster.broker.started.count("referee-relay.g.0") == 3, "it fenced the intruder back"


def bad_record(partition: int, offset: int, size: int, key: bytes | None = None) -> InputRecord:
    raw = b"x" * size  # malformed JSON: a dead letter carrying the whole record
    return InputRecord(raw, TOPIC, partition, offset, KafkaSource(TOPIC, partition, offset), key)


async def test_a_dead_letter_too_large_for_the_producer_is_withheld_and_the_rest_go() -> None:
    cluster = Cluster()
    producers: list[FakeProducer] = []

    def make(transactional_id: str) -> FakeProducer:
        producer = FakeProducer(cluster.broker, transactional_id)
        producer.max_request_size = 20_000
        producers.append(producer)
        return producer

    publishing = replace(cluster.publishing(), make_producer=make)
    publishers = Publishers(publishing)
    step = ProcessingStep(cluster.store, GROUP, on_appended=publishers.appended)
    await publishers.own([0])
    records = [bad_record(0, 0, 100), bad_record(0, 1, 30_000), bad_record(0, 2, 100)]
    await step.process(records)
    await eventually(lambda: len(cluster.published(DEAD.topic, 0)) == 2)
    await publishers.stop()
    positions = cluster.stored("dead_letters", 0)
    assert cluster.published(DEAD.topic, 0) == [positions[0], positions[2]]
    assert [w[3] for w in cluster.store.withheld] == [positions[1]], "recorded in the store"
    assert publishing.metrics.withheld.labels("dead_letters")._value.get() == 1
    assert sum(p.calls.count("send") for p in producers) == 3, "tried once, never again"


async def test_a_record_the_broker_refuses_aborts_its_transaction_which_goes_again_without() -> (
    None
):
    cluster = Cluster()

    def make(transactional_id: str) -> FakeProducer:
        producer = FakeProducer(cluster.broker, transactional_id)
        producer.broker_max = 20_000
        return producer

    publishers = Publishers(replace(cluster.publishing(), make_producer=make))
    step = ProcessingStep(cluster.store, GROUP, on_appended=publishers.appended)
    await publishers.own([0])
    await step.process([bad_record(0, 0, 100), bad_record(0, 1, 30_000), bad_record(0, 2, 100)])
    await eventually(lambda: len(cluster.published(DEAD.topic, 0)) == 2)
    await publishers.stop()
    positions = cluster.stored("dead_letters", 0)
    assert cluster.published(DEAD.topic, 0) == [positions[0], positions[2]], "each once"
    assert cluster.broker.aborted == 2, "the first try's two good records were aborted with it"


async def test_a_dead_letters_key_longer_than_it_carries_is_cut_and_marked() -> None:
    cluster = Cluster()
    publishers = Publishers(cluster.publishing())
    step = ProcessingStep(cluster.store, GROUP, on_appended=publishers.appended)
    await publishers.own([0])
    key = b"k" * 900_000
    await step.process([bad_record(0, 0, 100, key), bad_record(0, 1, 100, b"short")])
    await eventually(lambda: len(cluster.published(DEAD.topic, 0)) == 2)
    await publishers.stop()
    keys = [k for t, _, k, _, _, _ in cluster.broker.committed if t == DEAD.topic]
    assert keys == [key[: 16 * 1024], b"short"]
    headers = [dict(h) for h in cluster.broker.headers]
    assert headers[0]["key-cut"] == b"900000"
    assert "key-cut" not in headers[1]
    assert cluster.store.dead_letters[0].key == key, "the whole key stays in the store"


async def test_a_records_rows_are_never_split_across_transactions_while_catching_up() -> None:
    """A record that gives several verdicts (a block: BlockDeclared, RoundScored, ...) has
    them all in one transaction: the last record on the topic then says all its rows are."""
    cluster = Cluster()
    step = ProcessingStep(cluster.store, GROUP)
    await step.process([r for r in STREAM if r.partition == 0])
    by_journal = Counter(v.journal_id for v in cluster.store.verdicts if v.source_partition == 0)
    assert max(by_journal.values()) > 1, "the stream has a record with several verdicts"
    publishers = Publishers(cluster.publishing(page=3))
    await publishers.own([0])
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    await publishers.stop()
    where: dict[int, set[int]] = {}
    for n, transaction in enumerate(cluster.broker.transactions):
        for record in transaction:
            if record[5] is not None:
                where.setdefault(record[5], set()).add(n)
    assert all(len(t) == 1 for t in where.values())
