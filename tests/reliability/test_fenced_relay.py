"""Scenario 7: sever the relay leader's database session while it publishes, again and again.

Two ``referee serve`` instances share one group; the log is fed steadily so verdicts keep
flowing. The test watches the output topics' offsets (the high watermark includes records of
open transactions, the last stable offset does not) and, while records are arriving, ends
the backend of the session that holds the relay's advisory lock (``pg_terminate_backend``).
The leader loses its lock with records in flight; the other instance (or the same one, after
its backoff) takes the lead. A ``read_committed`` reader must then see every verdict exactly
once, as ``referee replay`` of the same log gives them, and every rejection once on the DLQ.
What a ``read_uncommitted`` reader would have seen (the aborted records) is recorded beside.

A real successor needs up to a second to notice the free lock (it polls), and the severed
leader's transaction is usually committed by then. So in two severings out of three the test
plays the fastest possible successor: it takes the freed lock itself at once, initialises
the relay's transactional id as a new leader does first (fencing the severed leader, whose
open transaction is aborted), keeps the lock a few seconds (the outboxes fill up) and lets it
go to the instances. The next blow lands on the new leader's catch-up, a long transaction.
The rows of every aborted transaction must be published again, once, by a later leader.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from referee.service.relay import partition_ids
from referee.store.locks import RELAY_LOCK
from tests.integration.conftest import relay_lock_holders
from tests.reliability.conftest import MakeStack, Simulated
from tests.reliability.harness import (
    SOAK,
    Figures,
    RssWatch,
    count_in_logs,
    plain,
    produce_paced,
    verify,
)
from tools.testkit.kafkatools import drain, keyed_lines

pytestmark = [pytest.mark.reliability, pytest.mark.kafka]

SEVERINGS = 40 if SOAK else 12
GAMES = 3000 if SOAK else 1000  # about 109 events a game
FEED_SECONDS = 150 if SOAK else 45
MID_PUBLISH_WAIT = 4.0  # how long to wait for records in flight before trying again


@dataclass(frozen=True)
class Offsets:
    """The output topics' high watermarks and last stable offsets, per partition."""

    high: dict[TopicPartition, int]
    stable: dict[TopicPartition, int]

    @property
    def total(self) -> int:
        return sum(self.high.values())

    def open_transaction(self) -> bool:
        """Some partition holds records of a transaction that is neither committed nor aborted."""
        return any(self.high[tp] > self.stable[tp] for tp in self.high)


class OffsetWatch:
    """Two end-offset readers of the output topics: read_uncommitted and read_committed."""

    def __init__(self, bootstrap: str, topics: list[str]) -> None:
        self.bootstrap = bootstrap
        self.topics = topics
        self.tps: list[TopicPartition] = []
        self.high = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        self.stable = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            enable_auto_commit=False,
            isolation_level="read_committed",
        )

    async def start(self) -> None:
        for topic in self.topics:
            ids = await partition_ids({"bootstrap_servers": self.bootstrap}, topic)
            self.tps += [TopicPartition(topic, p) for p in ids]
        await self.high.start()
        await self.stable.start()

    async def read(self) -> Offsets:
        # high first: records appended between the two reads can then only raise the stable
        # offsets past the high ones, never fake an open transaction
        high = await self.high.end_offsets(self.tps)
        stable = await self.stable.end_offsets(self.tps)
        return Offsets(dict(high), dict(stable))

    async def stop(self) -> None:
        await self.high.stop()
        await self.stable.stop()


async def sever_mid_publish(db: asyncpg.Connection, watch: OffsetWatch) -> tuple[bool, str] | None:
    """Terminates the relay leader's session while records are in flight.

    Waits for a transaction to be open on an output partition; failing that, towards the end
    of the wait, for records arriving (all there is to see of a non-transactional relay).
    Returns (a transaction was open, the session's application_name), or None if it found
    no moment to strike.
    """
    started = time.monotonic()
    before = await watch.read()
    while (waited := time.monotonic() - started) < MID_PUBLISH_WAIT:
        now = await watch.read()
        open_now = now.open_transaction()
        arriving = now.total > before.total and waited > MID_PUBLISH_WAIT * 0.75
        if open_now or arriving:
            holders = await relay_lock_holders(db)
            if holders and await db.fetchval("SELECT pg_terminate_backend($1)", holders[0][0]):
                return open_now, holders[0][1]
        before = now
        await asyncio.sleep(0.002)
    return None


async def fence_at_once(
    db: asyncpg.Connection, producer: AIOKafkaProducer, hold_seconds: float
) -> bool:
    """Takes the freed relay lock and fences the old leader as a successor would; True if so.

    Then keeps the lock ``hold_seconds`` (an outage: the outboxes fill up, so the next
    leader starts with a long transaction) and lets it go.
    """
    deadline = time.monotonic() + 0.5
    while not await db.fetchval("SELECT pg_try_advisory_lock($1)", RELAY_LOCK):
        if time.monotonic() > deadline:
            return False  # an instance was quicker (or the severed session lingers)
        await asyncio.sleep(0.002)
    try:
        await producer.start()  # the init: aborts the severed leader's open transaction
        await producer.stop()
        await asyncio.sleep(hold_seconds)
    finally:
        await db.fetchval("SELECT pg_advisory_unlock($1)", RELAY_LOCK)
    return True


async def test_severed_relay_leader_publishes_nothing_twice(
    make_stack: MakeStack, simulated: Simulated, tmp_path: Path
) -> None:
    stack = await make_stack(partitions=4)
    log = simulated(GAMES, 23, "--foul-rate", "0.02", "--bad-rate", "0.005")
    records = keyed_lines(log)
    figures = Figures("fenced_relay")
    rng = random.Random(20261201)
    rss = RssWatch()
    watch = OffsetWatch(stack.bootstrap, [stack.topics.verdicts, stack.topics.dlq])
    db = await asyncpg.connect(plain(stack.database_url))
    severed = open_transactions = gave_up = fenced_at_once = 0
    names: Counter[str] = Counter()
    try:
        await watch.start()
        for name in ("a", "b"):
            process, _ = stack.start(f"serve-{name}")
            rss.watch(process.pid)
        feeding = asyncio.create_task(
            produce_paced(stack.bootstrap, stack.topics.input, records, FEED_SECONDS, chunks=150)
        )
        # the feed ends a little after FEED_SECONDS, the verdicts of its backlog soon after
        stop_at = time.monotonic() + FEED_SECONDS + 10
        while severed < SEVERINGS and time.monotonic() < stop_at:
            caught = await sever_mid_publish(db, watch)
            if caught is None:
                gave_up += 1
            else:
                open_now, name = caught
                severed += 1
                names[name or "(none)"] += 1
                if open_now:
                    open_transactions += 1
                    # two open transactions in three: the fastest successor, played by the test
                    if open_transactions % 3 != 0:
                        successor = AIOKafkaProducer(
                            bootstrap_servers=stack.bootstrap,
                            transactional_id=f"referee-relay.{stack.group}",
                        )
                        if await fence_at_once(db, successor, rng.uniform(2.0, 4.0)):
                            fenced_at_once += 1
                            continue  # strike again during the catch-up: a long transaction
            # let a leader take over and publish a while before the next blow
            await asyncio.sleep(rng.uniform(0.2, 1.5))
        await feeding
        figures["events"] = len(records)
        figures["severed_mid_publish"] = severed
        figures["severed_with_open_transaction"] = open_transactions
        figures["waits_without_records_in_flight"] = gave_up
        figures["fenced_at_once_by_the_test"] = fenced_at_once
        figures["relay_session_names"] = dict(names)
        await verify(stack, log, tmp_path, figures)
        # what a consumer reading read_uncommitted would have got: the aborted records too
        for label, topic in (("verdict", stack.topics.verdicts), ("dlq", stack.topics.dlq)):
            committed = len(await drain(stack.bootstrap, topic, quiet_seconds=2))
            everything = await drain(
                stack.bootstrap, topic, quiet_seconds=2, isolation_level="read_uncommitted"
            )
            figures[f"aborted_{label}_records"] = len(everything) - committed
            if label == "verdict":
                ids = Counter(json.loads(v)["verdict_id"] for *_, v, _ in everything)
                figures["verdict_duplicates_if_read_uncommitted"] = sum(
                    n - 1 for n in ids.values() if n > 1
                )
    finally:
        figures["relay_leaderships"] = count_in_logs(stack, "relay leads")
        figures["relay_fenced"] = count_in_logs(stack, "relay fenced")
        figures["relay_failures"] = count_in_logs(stack, "relay failed")
        figures["batch_failures"] = count_in_logs(stack, "batch failed")
        figures["peak_rss_mb"] = await rss.stop()
        await watch.stop()
        await db.close()
        figures.emit()
    assert severed >= SEVERINGS, f"only {severed} severings hit records in flight"
