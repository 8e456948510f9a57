"""The relay on fakes of its store, its broker and its producer: in milliseconds.

One transaction per pump in outbox order, nothing published twice after resuming from the
topic tails, a failed send never committed, one leader at a time, a severed leader fenced by
its successor, checkpoints, the backlog. The same is proven on the real broker and PostgreSQL
by tests/integration/kafka/test_relay_fencing.py and tests/reliability/test_fenced_relay.py.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from functools import partial

from aiokafka import TopicPartition

from referee.service.kafka_options import NEXT_TRANSACTION_RETRY_SECONDS, relay_producer
from referee.service.metrics import Metrics
from referee.service.relay import Outbox, OutboxRelay, partition_for
from referee.service.settings import Settings
from referee.store.relay_store import OutboxRow
from tests.fakes import FakeBroker, FakeProducer, FakeRelaySession, FakeRelayStore, FakeTails

VERDICTS = Outbox("verdicts", "verdicts-topic")
DEAD = Outbox("dead_letters", "dlq-topic")


def filled(rows: int = 12) -> FakeRelayStore:
    store = FakeRelayStore()
    for i in range(rows):
        store.add("verdicts", f"g{i % 5}".encode(), f'{{"n":{i}}}'.encode())
    store.add("dead_letters", None, b'{"reason":"malformed_json"}')
    return store


def make_relay(
    store: FakeRelayStore,
    broker: FakeBroker,
    producers: list[FakeProducer],
    fail_at: int | None = None,
    poll_seconds: float = 0.01,
    **kwargs: int,
) -> OutboxRelay:
    def make() -> FakeProducer:
        producers.append(FakeProducer(broker, fail_at))
        return producers[-1]

    return OutboxRelay(
        store,
        [VERDICTS, DEAD],
        make,
        FakeTails(broker),
        Metrics(),
        poll_seconds=poll_seconds,
        **kwargs,
    )


async def eventually(done: Callable[[], bool], limit: float = 5) -> None:
    """Waits until ``done()`` holds (the fakes answer at once: milliseconds)."""
    deadline = asyncio.get_running_loop().time() + limit
    while asyncio.get_running_loop().time() < deadline:
        if done():
            return
        await asyncio.sleep(0.002)
    raise AssertionError("not reached in time")


async def run_until(relay: OutboxRelay, done: Callable[[], bool]) -> None:
    stopping = asyncio.Event()
    task = asyncio.create_task(relay.run(stopping))
    await eventually(done)
    stopping.set()
    relay.wake.set()
    await task


def published(broker: FakeBroker, topic: str = "verdicts-topic") -> list[int]:
    return [position for t, _, _, _, position in broker.committed if t == topic]


async def test_the_outboxes_are_published_in_position_order_one_transaction_per_pump() -> None:
    store, broker = filled(), FakeBroker()
    producers: list[FakeProducer] = []
    relay = make_relay(store, broker, producers, batch=5)
    await run_until(relay, lambda: len(broker.committed) == 13)
    assert published(broker) == list(range(1, 13))
    assert published(broker, "dlq-topic") == [1]
    calls = producers[0].calls
    assert calls[0] == "start", "the producer starts (fencing its predecessors) first"
    assert calls.count("commit") == 4, "12 verdicts in pumps of 5, and one dead letter"
    assert "abort" not in calls
    for _, partition, key, _, position in broker.committed:
        assert partition == partition_for(key, broker.partitions, position)


async def leading(
    store: FakeRelayStore, broker: FakeBroker, published_first: int
) -> tuple[OutboxRelay, asyncio.Event, asyncio.Task[None], FakeRelaySession]:
    """Starts a relay that only a notification can wake in time (its poll is 10 s) and waits
    for its first ``published_first`` records; returns it with its lead session."""
    relay = make_relay(store, broker, [], poll_seconds=10.0)
    stopping = asyncio.Event()
    task = asyncio.create_task(relay.run(stopping))
    await eventually(lambda: len(broker.committed) == published_first)
    session = store.holder
    assert session is not None
    return relay, stopping, task, session


async def test_a_pump_that_read_to_the_end_waits_for_the_next_commit_instead_of_reading_again() -> (
    None
):
    """After a pump that read every outbox to its end, the relay waits for a wake-up: reading
    again at once would find nothing (two empty reads a pump, when pumps follow each other)."""
    store, broker = filled(3), FakeBroker()
    relay, stopping, task, session = await leading(store, broker, 4)
    reads: list[str] = []
    rows_after = session.rows_after

    async def counted(outbox: str, cursor: int, limit: int) -> list[OutboxRow]:
        reads.append(outbox)
        return await rows_after(outbox, cursor, limit)

    session.rows_after = counted  # type: ignore[method-assign]
    for i in range(3):
        store.add("verdicts", f"n{i}".encode(), b"{}")  # a commit, notified
        await eventually(partial(lambda n: len(broker.committed) == n, 5 + i))
    await asyncio.sleep(0.05)
    assert store.outboxes["verdicts"].checkpoints == [], "no checkpoint between busy pumps"
    stopping.set()
    relay.wake.set()
    await task
    # one read of each outbox a commit (a commit may land while the one before is read)
    assert len(reads) <= 6, reads
    assert published(broker) == [1, 2, 3, 4, 5, 6]
    assert store.outboxes["verdicts"].checkpoints == [6], "and one when the relay stops"


async def test_a_new_leader_resumes_after_what_the_topic_tails_hold() -> None:
    store, broker = filled(), FakeBroker()
    producers: list[FakeProducer] = []
    await run_until(make_relay(store, broker, producers), lambda: len(broker.committed) == 13)
    for i in range(12, 20):
        store.add("verdicts", f"g{i % 5}".encode(), f'{{"n":{i}}}'.encode())
    # No checkpoint to go by (as after a crash before the first one): only the tails.
    for outbox in store.outboxes.values():
        outbox.checkpoints.clear()
    await run_until(make_relay(store, broker, producers), lambda: len(broker.committed) == 21)
    assert published(broker) == list(range(1, 21)), "each verdict once, in order"
    assert producers[1].calls.count("send") == 8, "only what the tails did not hold was sent"


async def test_a_failed_send_is_never_committed_and_the_term_aborts_it() -> None:
    store, broker = filled(4), FakeBroker()
    producers: list[FakeProducer] = []
    relay = make_relay(store, broker, producers, fail_at=1)
    stopping = asyncio.Event()
    task = asyncio.create_task(relay.run(stopping))
    await eventually(lambda: bool(producers) and "abort" in producers[0].calls)
    stopping.set()
    await task
    calls = producers[0].calls
    assert "commit" not in calls[: calls.index("abort")]
    assert published(broker) == [], "nothing of the failed pump became visible"
    assert broker.aborted == 3, "the three records queued beside the failed one were aborted"


async def test_one_relay_leads_and_its_successor_fences_it_when_its_session_is_severed() -> None:
    store, broker = filled(0), FakeBroker()
    first: list[FakeProducer] = []
    second: list[FakeProducer] = []
    leader = make_relay(store, broker, first, batch=3)
    follower = make_relay(store, broker, second, batch=3)
    stopping = asyncio.Event()
    tasks = [asyncio.create_task(r.run(stopping)) for r in (leader, follower)]
    await eventually(lambda: leader.leading or follower.leading)
    await asyncio.sleep(0.05)
    assert [leader.leading, follower.leading].count(True) == 1, "one leader at a time"
    for i in range(30):
        store.add("verdicts", f"g{i % 7}".encode(), b"{}")
        if i == 14:
            store.sever()  # mid-stream: the lock goes, the old producer may still send
        await asyncio.sleep(0)
    await eventually(lambda: len(set(published(broker))) == 30)
    stopping.set()
    for r in (leader, follower):
        r.wake.set()
    await asyncio.gather(*tasks)
    assert Counter(published(broker)) == Counter(range(1, 31)), "each verdict exactly once"
    assert len(first) + len(second) >= 2, "the successor started a producer of its own"


async def test_checkpoints_are_appended_as_the_relay_goes_and_when_it_idles() -> None:
    store, broker = filled(), FakeBroker()
    producers: list[FakeProducer] = []
    relay = make_relay(store, broker, producers, batch=4, checkpoint_every=8)
    await run_until(
        relay,
        lambda: (
            len(broker.committed) == 13
            and max(store.outboxes["verdicts"].checkpoints, default=0) == 12
        ),
    )
    assert store.outboxes["verdicts"].checkpoints[0] == 8, "after 8 rows, then when idle"
    assert max(store.outboxes["dead_letters"].checkpoints) == 1


async def test_a_full_pump_is_followed_by_another_read_at_once() -> None:
    """A pump that read a whole batch reads again without waiting for a wake-up: the rows
    past it were notified before the wake-up was cleared (the poll is 10 s here)."""
    store, broker = filled(7), FakeBroker()
    relay = make_relay(store, broker, [], batch=3, poll_seconds=10.0)
    await run_until(relay, lambda: len(broker.committed) == 8)
    assert published(broker) == list(range(1, 8))


async def test_a_busy_relay_still_saves_every_checkpoint_after_checkpoint_seconds() -> None:
    """Under steady traffic the relay is never quiet for a poll: the cursor of an outbox
    seldom written (the dead letters) is saved after ``checkpoint_seconds`` all the same."""
    store, broker = filled(2), FakeBroker()
    relay, stopping, task, _ = await leading(store, broker, 3)
    relay.checkpoint_seconds = 0.05
    await asyncio.sleep(0.1)
    assert store.outboxes["dead_letters"].checkpoints == [], "not yet: nothing woke it"
    store.add("verdicts", b"g7", b"{}")  # a commit, notified: a busy relay, not a quiet poll
    await eventually(lambda: store.outboxes["dead_letters"].checkpoints == [1])
    assert store.outboxes["verdicts"].checkpoints == [2], "what it had published when woken"
    await eventually(lambda: len(broker.committed) == 4)
    stopping.set()
    relay.wake.set()
    await task
    assert store.outboxes["verdicts"].checkpoints == [2, 3], "and the rest when it stops"


async def test_the_backlog_is_what_the_leader_has_not_published() -> None:
    store, broker = filled(), FakeBroker()
    producers: list[FakeProducer] = []
    relay = make_relay(store, broker, producers)
    assert await relay.backlog() == {}, "a relay that does not lead knows no backlog"
    stopping = asyncio.Event()
    task = asyncio.create_task(relay.run(stopping))
    await eventually(lambda: len(broker.committed) == 13)
    assert (await relay.backlog())["verdicts"].rows == 0
    assert relay.metrics.relay_leader._value.get() == 1
    stopping.set()
    relay.wake.set()
    await task
    assert relay.metrics.relay_leader._value.get() == 0


def test_the_transactional_id_defaults_to_one_per_group() -> None:
    assert Settings(group_id="prod").relay_transactional_id == "referee-relay.prod"
    assert Settings(relay_transactional_id="mine").relay_transactional_id == "mine"


async def test_the_relay_producer_is_transactional_with_that_id() -> None:
    settings = Settings(group_id="prod")
    producer = relay_producer(settings, None)()
    try:
        assert getattr(producer, "_txn_manager").transactional_id == "referee-relay.prod"  # noqa: B009
    finally:
        await producer.stop()


async def test_the_next_transaction_asks_again_within_milliseconds_not_20() -> None:
    """The relay's producer retries CONCURRENT_TRANSACTIONS (the markers of the transaction
    before still being written) after 2 ms, not aiokafka's fixed 20 ms."""
    from types import SimpleNamespace

    from aiokafka.errors import ConcurrentTransactions
    from aiokafka.producer.sender import AddPartitionsToTxnHandler

    producer = relay_producer(Settings(group_id="prod"), None)()
    try:
        sender = getattr(producer, "_sender")  # noqa: B009
        handler = AddPartitionsToTxnHandler(sender, [TopicPartition("verdicts", 0)])
        busy = SimpleNamespace(errors=[("verdicts", [(0, ConcurrentTransactions.errno)])])
        assert handler.handle_response(busy) == NEXT_TRANSACTION_RETRY_SECONDS == 0.002
    finally:
        await producer.stop()


async def test_a_commit_of_outbox_rows_wakes_the_relay_without_waiting_for_its_poll() -> None:
    store, broker = filled(2), FakeBroker()
    producers: list[FakeProducer] = []
    # only the notification can make it publish in time
    relay = make_relay(store, broker, producers, poll_seconds=10.0)
    stopping = asyncio.Event()
    task = asyncio.create_task(relay.run(stopping))
    await eventually(lambda: len(broker.committed) == 3)
    store.add("verdicts", b"g9", b"{}")  # a commit elsewhere: its notification wakes the relay
    await eventually(lambda: len(broker.committed) == 4, limit=2)
    stopping.set()
    relay.wake.set()
    await task


async def test_a_commit_notified_while_the_relay_reads_is_not_slept_through() -> None:
    """A notification that arrives while the relay reads the outboxes (after the read's
    snapshot: the read does not see the row) wakes it all the same: the wake-up is cleared
    before the reads, not after them."""
    store, broker = filled(2), FakeBroker()
    relay, stopping, task, session = await leading(store, broker, 3)  # a lost one sleeps 10 s
    read = session.rows_after
    late: list[int] = []

    async def read_then_commit(outbox: str, cursor: int, limit: int) -> list[OutboxRow]:
        rows = await read(outbox, cursor, limit)
        if outbox == "dead_letters" and not late:  # the last read before the relay idles
            late.append(store.add("verdicts", b"g9", b"{}"))
        return rows

    session.rows_after = read_then_commit  # type: ignore[method-assign]
    store.add("verdicts", b"g8", b"{}")  # woken: published, and g9 commits during the reads
    await eventually(lambda: len(broker.committed) == 5, limit=2)
    assert late, "the commit came during the reads"
    assert published(broker) == [1, 2, 3, 4]
    stopping.set()
    relay.wake.set()
    await task
