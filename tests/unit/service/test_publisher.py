"""The instance's publisher, and the takes that feed it, on fakes of the store, the broker and
the producers: in milliseconds.

Each input partition's outbox on the same partition number, in position order; one producer
an instance and one transaction a pump, whatever the partitions; what the step commits
published from memory, what the publisher did not see committed read from the store; a new
owner fencing the old one by its transactional id and resuming after the tail, nothing twice;
a fenced owner never fencing back; the store put back in time; rows the broker refuses;
checkpoints. The same is proven on the real broker and PostgreSQL by
tests/integration/kafka/test_publisher_fencing.py and the reliability scenarios.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable

from aiokafka import TopicPartition

from referee.contracts.rejection import KafkaSource
from referee.processing.records import InputRecord
from referee.processing.step import ProcessingStep
from referee.service.kafka_options import publisher_producers
from referee.service.patches import NEXT_TRANSACTION_RETRY_SECONDS, quicken_next_transaction
from referee.service.publisher import Cursor, Publisher, _whole_records
from referee.service.settings import Settings
from referee.simulate import SimulationOptions, simulate
from referee.store.outbox_store import OutboxRow
from tests.fakes import FakeBroker, FakeProducer, FakeStepStore
from tests.unit.service.owners import (
    DEAD,
    GROUP,
    TOPIC,
    VERDICTS,
    Instance,
    eventually,
    instance,
    takes_done,
    tps,
)


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
P0 = [r for r in STREAM if r.partition == 0]


class Cluster:
    """A fake store and broker that instances share, as they share PostgreSQL and Kafka."""

    def __init__(self) -> None:
        self.store = FakeStepStore()
        self.broker = FakeBroker(partitions=2)

    def stored(self, outbox: str, partition: int) -> list[int]:
        rows = self.store.verdicts if outbox == "verdicts" else self.store.dead_letters
        return sorted(r.position for r in rows if r.source_partition == partition)

    def published(self, topic: str, partition: int) -> list[int]:
        return [pos for t, p, _, _, pos, _ in self.broker.committed if (t, p) == (topic, partition)]

    def bodies(self, topic: str, partition: int) -> list[bytes]:
        return [v for t, p, _, v, _, _ in self.broker.committed if (t, p) == (topic, partition)]

    def all_published(self, partitions: tuple[int, ...] = (0, 1)) -> bool:
        return all(
            self.published(o.topic, p) == self.stored(o.name, p)
            for o in (VERDICTS, DEAD)
            for p in partitions
        )

    async def owner(self, name: str = "a", *partitions: int, **kwargs: object) -> Instance:
        """An instance that has taken these partitions (all, by default)."""
        a = instance(self.store, self.broker, name, **kwargs)  # type: ignore[arg-type]
        await a.partitions.assigned(tps(*(partitions or (0, 1))))
        await takes_done(a.partitions)
        return a


async def judge(step: ProcessingStep, records: list[InputRecord], size: int = 40) -> None:
    for i in range(0, len(records), size):
        await step.process(records[i : i + size])


async def test_each_partitions_outbox_goes_to_its_own_partition_number_in_position_order() -> None:
    cluster = Cluster()
    a = await cluster.owner()
    await judge(a.step, STREAM)
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
    await a.partitions.stop()


async def test_one_producer_an_instance_and_one_transaction_carries_every_partition() -> None:
    """The broker's cost does not grow with the partitions: one transactional id for the
    instance, and a batch that moves both partitions is published in one transaction."""
    cluster = Cluster()
    a = await cluster.owner()
    both = [r for r in STREAM[:200] if r.partition == 0][:20] + [
        r for r in STREAM[:200] if r.partition == 1
    ][:20]
    await eventually(a.publisher.ready.is_set)
    await a.step.process(both)
    await eventually(cluster.all_published)
    own = [p for p in a.producers if p.transactional_id == a.transactional_id]
    assert len(own) == 1, "one producer publishes every partition"
    fenced = sorted(p.transactional_id for p in a.producers if p is not own[0])
    assert fenced == ["referee-relay.g.0", "referee-relay.g.1"], "release 0.4's ids fenced"
    spanning = [t for t in cluster.broker.transactions if len({r[1] for r in t}) == 2]
    assert spanning, "one transaction held the rows of both partitions"
    await a.partitions.stop()


async def test_what_the_step_commits_is_published_from_memory_without_reading_the_store() -> None:
    cluster = Cluster()
    a = await cluster.owner()
    await eventually(lambda: all(o.through is not None for o in a.publisher.partitions.values()))
    reads: list[int] = []
    rows_after = cluster.store.rows_after

    async def counted(*args: object) -> object:
        reads.append(1)
        return await rows_after(*args)  # type: ignore[arg-type]

    cluster.store.rows_after = counted  # type: ignore[method-assign,assignment]
    await judge(a.step, STREAM, 25)
    await eventually(cluster.all_published)
    assert reads == [], "every row came from the step's commits"
    await a.partitions.stop()


async def test_a_new_owner_publishes_the_backlog_after_the_tail_and_nothing_twice() -> None:
    cluster = Cluster()
    a = await cluster.owner("a")
    half = len(STREAM) // 2
    await judge(a.step, STREAM[:half], 30)
    await eventually(cluster.all_published)
    a.publisher.partitions.clear()  # it stops publishing, its step goes on: a backlog
    await judge(a.step, STREAM[half:], 30)
    await a.partitions.stop()
    b = await cluster.owner("b")
    await eventually(cluster.all_published)
    positions = [pos for t, _, _, _, pos, _ in cluster.broker.committed if t == VERDICTS.topic]
    assert not [p for p, n in Counter(positions).items() if n > 1], "nothing twice"
    await b.partitions.stop()


async def test_a_chunk_that_does_not_follow_on_makes_the_publisher_read_the_store() -> None:
    """A transaction the publisher did not see (another writer's, or one it dropped) leaves
    a gap in the input offsets: it reads the store rather than skip what was in between."""
    cluster = Cluster()
    publisher = Publisher(
        (await cluster.owner("setup", 1)).partitions.publishing, "p", cluster.store
    )
    watched = ProcessingStep(cluster.store, GROUP, on_appended=publisher.appended)
    unseen = ProcessingStep(cluster.store, GROUP)  # its commits reach no publisher
    publisher.add(0, 1, {"verdicts": Cursor(), "dead_letters": Cursor()})
    publisher.start()
    await eventually(lambda: publisher.partitions[0].through is not None)
    await watched.process(P0[:20])
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    await unseen.adopt(TOPIC, {0: (None, cluster.store.position_of(GROUP, TOPIC, 0))})
    await unseen.process(P0[20:60])
    await watched.adopt(TOPIC, {0: (None, cluster.store.position_of(GROUP, TOPIC, 0))})
    await watched.process(P0[60:])
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    await publisher.stop(drain=True)
    assert cluster.all_published((0,))


async def test_a_partition_reading_the_store_never_holds_the_others_rows_back() -> None:
    """Partition 1 has a backlog its new owner reads from the store, and the store's reads of
    it are held: partition 0's rows are published from memory meanwhile, and partition 1's
    once its read comes back, nothing twice."""
    cluster = Cluster()
    a = await cluster.owner("a")
    a.publisher.partitions.clear()  # it stops publishing, its step goes on: a backlog
    await judge(a.step, [r for r in STREAM if r.partition == 1], 30)
    await a.partitions.stop()
    gate = asyncio.Event()
    rows_after = cluster.store.rows_after

    async def held(outbox: str, topic: str, partition: int, after: int, limit: int) -> object:
        if partition == 1:
            await gate.wait()
        return await rows_after(outbox, topic, partition, after, limit)

    cluster.store.rows_after = held  # type: ignore[method-assign,assignment]
    b = await cluster.owner("b")
    await judge(b.step, P0, 30)
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    assert cluster.stored("verdicts", 0), "partition 0 published while 1 reads"
    assert cluster.published(VERDICTS.topic, 1) == [], "partition 1's read still held"
    assert b.publisher.partitions[1].read is not None
    gate.set()
    await eventually(cluster.all_published)
    positions = [(t, p, pos) for t, p, _, _, pos, _ in cluster.broker.committed]
    assert len(positions) == len(set(positions)), "nothing twice"
    await b.partitions.stop()


async def test_the_previous_owner_is_fenced_mid_transaction_and_never_fences_back() -> None:
    """Instance a holds a commit at a gate; b takes the partition (its term first, then a's
    transactional id fenced) and publishes everything; a's commit is refused, a finds its
    partition taken in the store, and gives it up without fencing b."""
    cluster = Cluster()
    gate = asyncio.Event()

    def held(transactional_id: str) -> FakeProducer:
        return FakeProducer(cluster.broker, transactional_id, commit_gate=gate)

    a = await cluster.owner("a", 0, make=held)
    await a.step.process(P0[:40])
    await eventually(lambda: any("commit" in p.calls for p in a.producers))
    b = await cluster.owner("b", 0)
    assert cluster.broker.started.count(a.transactional_id) == 2, "b fenced a by its id"
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    gate.set()  # a's commit goes on: refused, it was fenced
    await eventually(lambda: cluster.broker.aborted > 0)
    await eventually(lambda: 0 in a.publisher.lost)
    await a.partitions.watch()
    assert a.partitions.running() == [], "a gave the partition up"
    await b.step.process(P0[40:])
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    assert cluster.broker.started.count(b.transactional_id) == 1, "b never fenced back"
    positions = cluster.published(VERDICTS.topic, 0)
    assert len(positions) == len(set(positions))
    await b.partitions.stop()
    await a.partitions.stop()


async def test_a_term_given_back_cleanly_is_not_fenced() -> None:
    cluster = Cluster()
    a = await cluster.owner("a", 0)
    await a.partitions.stop()  # gives the partition back: nothing of it in flight
    b = await cluster.owner("b", 0)
    assert cluster.broker.started.count(a.transactional_id) == 1, "a's id not fenced by b"
    await b.partitions.stop()


async def test_a_failed_send_is_never_committed_and_the_rows_are_published_later() -> None:
    cluster = Cluster()
    failing = [True]

    def make(transactional_id: str) -> FakeProducer:
        fail = 1 if failing[0] and transactional_id == "referee-relay.g.a" else None
        producer = FakeProducer(cluster.broker, transactional_id, fail_at=fail)
        if fail is not None:
            failing[0] = False
        return producer

    a = await cluster.owner("a", make=make)
    await judge(a.step, STREAM)
    await eventually(cluster.all_published)
    assert any("abort" in p.calls for p in a.producers), "the failed transaction is aborted"
    positions = [pos for t, _, _, _, pos, _ in cluster.broker.committed if t == VERDICTS.topic]
    assert len(positions) == len(set(positions))
    await a.partitions.stop()


async def test_checkpoints_are_saved_and_a_new_owner_starts_from_them() -> None:
    cluster = Cluster()
    a = await cluster.owner("a", checkpoint_every=1)
    await a.step.process(STREAM[:60])
    await eventually(cluster.all_published)
    await a.partitions.stop()
    saved = {(o, p): pos for o, _, p, pos in cluster.store.checkpoints}
    assert saved[("verdicts", 0)] == max(cluster.stored("verdicts", 0))
    cluster.broker.committed.clear()  # retention took the topic's records
    b = await cluster.owner("b")
    await b.step.process(STREAM[60:])
    await eventually(lambda: bool(cluster.published(VERDICTS.topic, 0)))
    await eventually(
        lambda: (
            cluster.published(VERDICTS.topic, 0)
            == [p for p in cluster.stored("verdicts", 0) if p > saved[("verdicts", 0)]]
        )
    )
    await b.partitions.stop()


async def test_stopping_publishes_what_was_handed_over_first() -> None:
    cluster = Cluster()
    a = await cluster.owner()
    await eventually(lambda: all(o.through is not None for o in a.publisher.partitions.values()))
    await a.step.process(STREAM[:80])
    await a.partitions.stop()  # at once: the chunks are still pending
    assert cluster.all_published()


async def test_a_partition_given_back_is_published_no_more_and_the_others_go_on() -> None:
    cluster = Cluster()
    a = await cluster.owner()
    await a.partitions.revoked(tps(0, 1))
    await a.partitions.assigned(tps(1))
    assert sorted(a.publisher.partitions) == [1]
    await a.step.process([r for r in STREAM if r.partition == 1][:30])
    await eventually(lambda: cluster.all_published((1,)))
    await a.partitions.stop()


async def test_a_partition_kept_with_a_batch_in_flight_at_a_rebalance_is_not_taken_again() -> None:
    # the handler puts a batch in flight after the revocation settled the step: the store has
    # its positions before the step has settled them; the partition is still this owner's
    cluster = Cluster()
    a = await cluster.owner()
    try:
        epochs = {p: o.epoch for p, o in a.partitions.owned.items()}
        await a.partitions.revoked(tps(0, 1))
        await a.step.submit(STREAM[:40])
        await eventually(lambda: bool(cluster.store.positions))
        await a.partitions.assigned(tps(0, 1))
        states = {p: o.state.value for p, o in a.partitions.owned.items()}
        assert states == {0: "running", 1: "running"}
        assert {p: o.epoch for p, o in a.partitions.owned.items()} == epochs, "taken again"
        await a.step.process(STREAM[40:])
        await eventually(cluster.all_published)
    finally:
        await a.partitions.stop()


def test_the_transactional_prefix_defaults_to_one_per_group() -> None:
    assert Settings(group_id="prod").relay_transactional_id == "referee-relay.prod"
    assert Settings(relay_transactional_id="mine").relay_transactional_id == "mine"


async def test_an_instances_producer_is_transactional_with_its_own_id() -> None:
    cluster = Cluster()
    a = await cluster.owner("i-abc", 0)
    assert a.transactional_id == "referee-relay.g.i-abc"
    producer = publisher_producers(Settings(group_id="prod"), None)("referee-relay.prod.i-abc")
    try:
        assert getattr(producer, "_txn_manager").transactional_id == "referee-relay.prod.i-abc"  # noqa: B009
    finally:
        await producer.stop()
    await a.partitions.stop()


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


# --- the topics and the store agree, or the owner says so ------------------------------------


async def test_given_the_store_went_back_in_time_then_the_topics_get_only_what_they_lack() -> None:
    """Verdicts of a third of the stream were published, then the store was put back to before
    them (a restore): the input is judged again from the store's position, and the topic gets
    every verdict once, in order, as a run that never went back."""
    straight = Cluster()
    s = await straight.owner("s", 0)
    await judge(s.step, P0, 25)
    await s.partitions.stop()
    cluster = Cluster()
    a = await cluster.owner("a", 0)
    third = len(P0) // 3
    await judge(a.step, P0[:third], 25)
    restore = cluster.store.snapshot()
    await judge(a.step, P0[third : 2 * third], 25)
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    await a.partitions.stop()
    lost = [v.body for v in cluster.store.verdicts if v.source_partition == 0][-1]
    restore()  # the store went back: its last commits, and their verdicts, are gone
    assert lost.encode() in cluster.bodies(VERDICTS.topic, 0)
    b = await cluster.owner("b", 0)
    assert b.metrics.store_behind._value.get() == 1, "the topic holds input the store lost"
    stored = cluster.store.position_of(GROUP, TOPIC, 0)
    await judge(b.step, [r for r in P0 if r.offset > stored], 25)
    await eventually(lambda: len(cluster.bodies(VERDICTS.topic, 0)) >= len(straight.store.verdicts))
    await b.partitions.stop()
    expected = [v.body.encode() for v in straight.store.verdicts]
    assert cluster.bodies(VERDICTS.topic, 0) == expected, "each once, in order"
    expected_dead = [d.body.encode() for d in straight.store.dead_letters]
    assert cluster.bodies(DEAD.topic, 0) == expected_dead
    assert sorted(v.body for v in cluster.store.verdicts) == sorted(
        v.body for v in straight.store.verdicts
    ), "the store exact afterwards"


async def test_given_the_input_it_needs_is_gone_then_the_partition_is_refused() -> None:
    cluster = Cluster()
    a = await cluster.owner("a", 0)
    await a.step.process(P0[:20])
    await a.partitions.stop()
    cluster.broker.input_offsets[0] = (100, 500)  # retention deleted offsets below 100
    published = len(cluster.broker.committed)
    b = await cluster.owner("b", 0)
    [problem] = b.partitions.problems()
    assert "offsets 20 to 99" in problem
    assert len(cluster.broker.committed) == published, "nothing published"
    cluster.store.gaps.append((GROUP, TOPIC, 0, 20, 100))  # referee partitions --accept-gap
    await b.partitions.revoked(tps(0))
    await b.partitions.stop()
    c = await cluster.owner("c", 0)
    assert c.partitions.running() == [0]
    await c.partitions.stop()


async def test_given_the_store_lost_commits_and_the_input_is_gone_then_it_is_refused() -> None:
    cluster = Cluster()
    cluster.broker.committed.append((VERDICTS.topic, 0, b"g", b"{}", 7, 50))
    cluster.broker.input_offsets[0] = (30, 100)  # nothing stored; the topic has input 50's
    a = await cluster.owner("a", 0)
    [problem] = a.partitions.problems()
    assert "the store lost commits" in problem
    await a.partitions.stop()


async def test_given_the_input_topic_was_made_again_then_the_partition_is_refused() -> None:
    cluster = Cluster()
    a = await cluster.owner("a", 0)
    await a.step.process(P0[:20])
    await a.partitions.stop()
    cluster.broker.input_offsets[0] = (0, 5)  # it ends before the store's position
    b = await cluster.owner("b", 0)
    assert "the input topic was deleted and made again" in b.partitions.problems()[0]
    await b.partitions.stop()
    cluster.broker.input_offsets[0] = (0, 500)
    cluster.broker.input_records[0, 19] = b'{"another":"record"}'  # longer, but not the same
    c = await cluster.owner("c", 0)
    assert "is not the one the store processed" in c.partitions.problems()[0]
    await c.partitions.stop()
    cluster.broker.input_records[0, 19] = P0[19].raw
    d = await cluster.owner("d", 0)
    assert d.partitions.running() == [0], "the record the store processed"
    await d.partitions.stop()


async def test_a_publisher_fenced_by_somebody_not_the_owner_takes_its_partitions_back() -> None:
    cluster = Cluster()
    a = await cluster.owner("a", 0)
    await a.step.process(P0[:30])
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    await FakeProducer(cluster.broker, a.transactional_id).start()  # an operator's tool
    await a.step.process(P0[30:])
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    assert a.publisher.lost == set()
    assert cluster.broker.started.count(a.transactional_id) == 3, "it fenced the intruder back"
    await a.partitions.stop()


def bad_record(partition: int, offset: int, size: int, key: bytes | None = None) -> InputRecord:
    raw = b"x" * size  # malformed JSON: a dead letter carrying the whole record
    return InputRecord(raw, TOPIC, partition, offset, KafkaSource(TOPIC, partition, offset), key)


def limited(cluster: Cluster, **limits: int) -> Callable[[str], FakeProducer]:
    def make(transactional_id: str) -> FakeProducer:
        producer = FakeProducer(cluster.broker, transactional_id)
        producer.max_request_size = limits.get("client")
        producer.broker_max = limits.get("broker")
        return producer

    return make


async def test_a_dead_letter_too_large_for_the_producer_is_withheld_and_the_rest_go() -> None:
    cluster = Cluster()
    a = await cluster.owner("a", 0, make=limited(cluster, client=20_000))
    await a.step.process([bad_record(0, 0, 100), bad_record(0, 1, 30_000), bad_record(0, 2, 100)])
    await eventually(lambda: len(cluster.published(DEAD.topic, 0)) == 2)
    await a.partitions.stop()
    positions = cluster.stored("dead_letters", 0)
    assert cluster.published(DEAD.topic, 0) == [positions[0], positions[2]]
    assert [w[3] for w in cluster.store.withheld] == [positions[1]], "recorded in the store"
    assert a.metrics.withheld.labels("dead_letters")._value.get() == 1
    sends = sum(p.calls.count("send") for p in a.producers)
    assert sends == 3, "tried once, never again"


async def test_a_record_the_broker_refuses_aborts_its_transaction_which_goes_again_without() -> (
    None
):
    cluster = Cluster()
    a = await cluster.owner("a", 0, make=limited(cluster, broker=20_000))
    await a.step.process([bad_record(0, 0, 100), bad_record(0, 1, 30_000), bad_record(0, 2, 100)])
    await eventually(lambda: len(cluster.published(DEAD.topic, 0)) == 2)
    await a.partitions.stop()
    positions = cluster.stored("dead_letters", 0)
    assert cluster.published(DEAD.topic, 0) == [positions[0], positions[2]], "each once"
    assert cluster.broker.aborted == 2, "the first try's two good records were aborted with it"


async def test_a_dead_letters_key_longer_than_it_carries_is_cut_and_marked() -> None:
    cluster = Cluster()
    a = await cluster.owner("a", 0)
    key = b"k" * 900_000
    await a.step.process([bad_record(0, 0, 100, key), bad_record(0, 1, 100, b"short")])
    await eventually(lambda: len(cluster.published(DEAD.topic, 0)) == 2)
    await a.partitions.stop()
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
    setup = instance(cluster.store, cluster.broker, "setup")
    await setup.step.adopt(TOPIC, {0: (None, -1)})
    await setup.step.process(P0)  # stored, never published
    by_journal = Counter(v.journal_id for v in cluster.store.verdicts if v.source_partition == 0)
    assert max(by_journal.values()) > 1, "the stream has a record with several verdicts"
    await setup.publisher.stop(drain=False)
    a = await cluster.owner("a", 0, page=3)
    await eventually(lambda: cluster.published(VERDICTS.topic, 0) == cluster.stored("verdicts", 0))
    await a.partitions.stop()
    where: dict[int, set[int]] = {}
    for n, transaction in enumerate(cluster.broker.transactions):
        for record in transaction:
            if record[5] is not None:
                where.setdefault(record[5], set()).add(n)
    assert all(len(t) == 1 for t in where.values())


def test_a_full_page_gives_back_its_last_records_rows() -> None:
    rows = [OutboxRow(n, None, b"", c) for n, c in enumerate([1, 1, 2, 3, 3], start=1)]
    assert [r.position for r in _whole_records(rows)] == [1, 2, 3]
    alone = [OutboxRow(n, None, b"", 7) for n in range(3)]
    assert _whole_records(alone) == alone, "one record's rows fill the page: kept whole"
