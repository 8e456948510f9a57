"""Scenario 7: sever the owners' database sessions, and fence their publishers, while records
are in flight.

Two ``referee serve`` instances share one group and four partitions; the log is fed steadily
so verdicts keep flowing. The test watches the output topics' offsets (the high watermark
includes records of open transactions, the last stable offset does not) and, while a
partition's transaction is open, ends the backend of an owner's session that is running a
statement (a batch's write, or a publisher's read): the batch fails as an outage and is
retried from the stored positions. In two severings out of three it also plays the fastest
possible successor of that partition: it initialises the partition's transactional id as a
new owner does first, which aborts the owner's open transaction; the owner is fenced, starts
again (fencing the test in turn), reads its output partition's tail and publishes the rest.
A ``read_committed`` reader must then see every verdict exactly once, as ``referee replay``
of the same log gives them, and every rejection once on the DLQ. What a ``read_uncommitted``
reader would have seen (the aborted records) is recorded beside.
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

from referee.service.tails import partition_ids
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

# The referee's sessions running a statement now (not the test's own, not idle ones).
ACTIVE_OWNER_SESSIONS = (
    "SELECT pid, left(query, 40) AS query FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'"
)


@dataclass(frozen=True)
class Offsets:
    """The output topics' high watermarks and last stable offsets, per partition."""

    high: dict[TopicPartition, int]
    stable: dict[TopicPartition, int]

    @property
    def total(self) -> int:
        return sum(self.high.values())

    def open_transactions(self) -> list[TopicPartition]:
        """The partitions holding records of a transaction neither committed nor aborted."""
        return [tp for tp in self.high if self.high[tp] > self.stable[tp]]


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


async def sever_mid_publish(
    db: asyncpg.Connection, watch: OffsetWatch
) -> tuple[list[TopicPartition], str] | None:
    """Terminates an owner's session that runs a statement while records are in flight.

    Waits for a transaction to be open on an output partition; failing that, towards the end
    of the wait, for records arriving. Returns (the partitions with an open transaction, the
    statement cut short), or None if it found no moment to strike.
    """
    started = time.monotonic()
    before = await watch.read()
    while (waited := time.monotonic() - started) < MID_PUBLISH_WAIT:
        now = await watch.read()
        open_now = now.open_transactions()
        arriving = now.total > before.total and waited > MID_PUBLISH_WAIT * 0.75
        if open_now or arriving:
            for session in await db.fetch(ACTIVE_OWNER_SESSIONS):
                if await db.fetchval("SELECT pg_terminate_backend($1)", session["pid"]):
                    return open_now, str(session["query"])
        before = now
        await asyncio.sleep(0.002)
    return None


async def fence_at_once(bootstrap: str, transactional_id: str) -> bool:
    """Initialises a partition's transactional id as its next owner would: the owner's open
    transaction is aborted and its producer fenced."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id)
    try:
        await producer.start()
    except Exception:  # noqa: BLE001 - a concurrent init: the owner was quicker
        return False
    finally:
        await producer.stop()
    return True


async def test_severed_owner_sessions_and_fenced_publishers_publish_nothing_twice(
    make_stack: MakeStack, simulated: Simulated, tmp_path: Path
) -> None:
    stack = await make_stack(partitions=4)
    log = simulated(GAMES, 23, "--foul-rate", "0.02", "--bad-rate", "0.005")
    records = keyed_lines(log)
    figures = Figures("severed_owner")
    rng = random.Random(20261204)
    rss = RssWatch()
    watch = OffsetWatch(stack.bootstrap, [stack.topics.verdicts, stack.topics.dlq])
    db = await asyncpg.connect(plain(stack.database_url))
    severed = with_open_transaction = gave_up = fenced = 0
    statements: Counter[str] = Counter()
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
                open_now, statement = caught
                severed += 1
                statements[statement.split(" ")[0] or "(none)"] += 1
                if open_now:
                    with_open_transaction += 1
                    # two in three: the partition's fastest successor, played by the test
                    if with_open_transaction % 3 != 0:
                        partition = rng.choice(open_now).partition
                        transactional_id = f"referee-relay.{stack.group}.{partition}"
                        fenced += await fence_at_once(stack.bootstrap, transactional_id)
            # let the owners recover and publish a while before the next blow
            await asyncio.sleep(rng.uniform(0.2, 1.5))
        await feeding
        figures["events"] = len(records)
        figures["severed_mid_statement"] = severed
        figures["severed_with_open_transaction"] = with_open_transaction
        figures["waits_without_records_in_flight"] = gave_up
        figures["fenced_at_once_by_the_test"] = fenced
        figures["statements_cut"] = dict(statements)
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
        figures["partitions_taken"] = count_in_logs(stack, '"message": "partition taken"')
        figures["publisher_fenced"] = count_in_logs(stack, "publisher fenced by a partition")
        figures["publisher_failures"] = count_in_logs(stack, "publisher failed")
        figures["batch_failures"] = count_in_logs(stack, "batch failed")
        figures["peak_rss_mb"] = await rss.stop()
        await watch.stop()
        await db.close()
        figures.emit()
    assert severed >= SEVERINGS, f"only {severed} severings hit records in flight"
    assert with_open_transaction >= 10, "at least 10 with a transaction open"
    assert fenced >= 1, "an owner fenced mid-transaction at least once"
