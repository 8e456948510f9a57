"""Scenarios of a cluster's bad days: the store put back in time, the input it needs gone,
the input topic made again, an owner frozen while another takes its partitions.

The store's scenarios run on a PostgreSQL cluster of their own (``scripts/postgres.sh`` on a
free port): its data directory is put back to a base backup taken earlier (``postgres.sh
backup`` and ``restore``), as a restore or a failover to an asynchronous replica that lagged
would put it, while the verdict topic already holds verdicts the copy does not. Each ends as
every scenario does (``harness.verify``: every verdict once, in each game's order, for a
``read_committed`` reader; every rejection once; every record journaled once), and with
``referee audit`` passing on the store afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic, RecordsToDelete
from aiokafka.partitioner import murmur2

from tests.integration.kafka.checks import by_game
from tests.integration.kafka.conftest import ROOT, Stack
from tests.integration.kafka.test_service import http_get
from tests.reliability.conftest import MakeStack, Simulated
from tests.reliability.harness import (
    SOAK,
    Figures,
    Store,
    count_in_logs,
    kill,
    produce_paced,
    replay,
    verify,
)
from tools.testkit.kafkatools import Topics, create_topics, drain, free_port, keyed_lines, produce

pytestmark = [pytest.mark.reliability, pytest.mark.kafka]

GAMES = 900 if SOAK else 260
WINDOW_SECONDS = 120.0 if SOAK else 12.0
"""How long verdicts are published after the copy is taken and before it is put back."""


class Restorable:
    """A PostgreSQL cluster of the scenario's own, whose data directory can be put back."""

    def __init__(self, port: int, backup: Path) -> None:
        self.port = port
        self.backup = backup
        self.url = ""

    def _run(self, *args: str) -> str:
        env = {**os.environ, "PG_PORT": str(self.port)}
        done = subprocess.run(
            ["bash", str(ROOT / "scripts" / "postgres.sh"), *args],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    async def start(self) -> str:
        out = await asyncio.to_thread(self._run, "start")
        self.url = out.strip().splitlines()[-1].removeprefix("DATABASE_URL=")
        return self.url

    async def take_copy(self) -> float:
        started = time.monotonic()
        await asyncio.to_thread(self._run, "backup", str(self.backup))
        return time.monotonic() - started

    async def put_back(self) -> float:
        started = time.monotonic()
        await asyncio.to_thread(self._run, "restore", str(self.backup))
        return time.monotonic() - started

    async def wipe(self) -> None:
        await asyncio.to_thread(self._run, "wipe")
        await asyncio.to_thread(subprocess.run, ["rm", "-rf", str(self.backup)], check=False)


@pytest.fixture
async def restorable_stack(
    bootstrap: str, tmp_path: Path
) -> AsyncIterator[tuple[Stack, Restorable]]:
    """A stack on a PostgreSQL cluster of its own (migrated) and fresh 4-partition topics."""
    port = free_port()
    state = Path(os.environ.get("REFEREE_STATE_DIR", "/tmp/referee-services"))  # postgres.sh
    cluster = Restorable(port, state / f"pg-{port}-backup")
    url = await cluster.start()
    await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "referee", "migrate", "--database", url],
        check=True,
        capture_output=True,
    )
    topics = Topics.fresh()
    await create_topics(bootstrap, topics, partitions=4)
    stack = Stack(bootstrap, url, topics, tmp_path, group=f"g-{topics.input}")
    try:
        yield stack, cluster
    finally:
        for p in stack.processes:
            if p.poll() is None:
                p.kill()
                p.wait()
        await cluster.wipe()


async def published_verdicts(stack: Stack) -> int:
    return len(await drain(stack.bootstrap, stack.topics.verdicts, quiet_seconds=1))


async def stored_verdicts(url: str) -> int:
    store = Store(url)
    try:
        return (await store.counts())[1]
    finally:
        await store.close()


def referee_env(stack: Stack) -> dict[str, str]:
    """The environment a referee command of this stack reads its settings from."""
    return {
        **os.environ,
        "REFEREE_DATABASE_URL": stack.database_url,
        "REFEREE_KAFKA_BOOTSTRAP_SERVERS": stack.bootstrap,
        "REFEREE_INPUT_TOPIC": stack.topics.input,
        "REFEREE_VERDICT_TOPIC": stack.topics.verdicts,
        "REFEREE_DLQ_TOPIC": stack.topics.dlq,
        "REFEREE_GROUP_ID": stack.group,
    }


def audit(stack: Stack, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "referee", "audit", "--json", *flags],
        env=referee_env(stack),
        capture_output=True,
        text=True,
        check=False,
    )


async def feed_and_publish(stack: Stack, records: list[tuple[bytes | None, bytes]]) -> None:
    """Feeds records over the window, then waits until their verdicts are on the topic."""
    store = Store(stack.database_url)
    try:
        before = await store.journaled()
        await produce_paced(stack.bootstrap, stack.topics.input, records, WINDOW_SECONDS)
        await store.wait_until(before + len(records), limit=120)
        await asyncio.sleep(2.0)  # the publishers' last transactions
    finally:
        await store.close()


@pytest.mark.parametrize("restart", [False, True], ids=["while-serving", "across-a-restart"])
async def test_the_store_put_back_in_time(
    restorable_stack: tuple[Stack, Restorable],
    simulated: Simulated,
    tmp_path: Path,
    restart: bool,
) -> None:
    """The store is put back to a copy taken ``WINDOW_SECONDS`` earlier while the topics hold
    the verdicts of that window: the lost input is judged again from the store's position and
    only what the topics lack is published (matched by input offset). With the referee running
    through it, and with the referee killed and started again after it."""
    stack, cluster = restorable_stack
    log = simulated(GAMES, 77, "--bad-rate", "0.01", "--duplicate-rate", "0.01")
    records = keyed_lines(log)
    first, second = len(records) * 3 // 10, len(records) * 6 // 10
    figures = Figures(f"store_back_in_time_{'restart' if restart else 'serving'}")
    await produce(stack.bootstrap, stack.topics.input, records[:first])
    process, _ = stack.start("referee")
    store = Store(stack.database_url)
    try:
        await store.wait_until(first, limit=120)
        await asyncio.sleep(2.0)
        figures["copy_s"] = round(await cluster.take_copy(), 2)
        in_copy = await stored_verdicts(stack.database_url)
        await feed_and_publish(stack, records[first:second])
        on_topic = await published_verdicts(stack)
        if restart:
            await kill(process)
        figures["put_back_s"] = round(await cluster.put_back(), 2)
        after = await stored_verdicts(stack.database_url)
        figures["verdicts_in_the_copy"] = in_copy
        figures["verdicts_on_topic_when_put_back"] = on_topic
        figures["verdicts_the_store_lost"] = on_topic - after
        assert on_topic - after > 50, "the topic held verdicts the store lost"
        if restart:
            # the store agrees with itself: only the topics say it lost commits
            assert (await asyncio.to_thread(audit, stack)).returncode == 0
            behind = await asyncio.to_thread(audit, stack, "--topics")
            figures["audit_topics_exit_when_put_back"] = behind.returncode
            assert behind.returncode == 1, behind.stdout + behind.stderr
            assert "the store lost commits the topic holds" in behind.stdout
            stack.start("referee-again")
        await produce_paced(stack.bootstrap, stack.topics.input, records[second:], 8.0)
        await verify(stack, log, tmp_path, figures)
        audited = await asyncio.to_thread(audit, stack, "--topics")
        figures["audit_topics_exit"] = audited.returncode
        assert audited.returncode == 0, audited.stdout + audited.stderr
        figures["partitions_taken_again"] = count_in_logs(stack, "taking it again")
        figures["found_the_store_behind"] = count_in_logs(stack, "the store lost commits")
        assert figures["found_the_store_behind"] >= 1, "the owner saw the topics ahead"
    finally:
        await store.close()
        figures.emit()


async def test_a_partition_whose_input_is_gone_is_refused_and_nothing_is_published_wrong(
    restorable_stack: tuple[Stack, Restorable], simulated: Simulated, tmp_path: Path
) -> None:
    """The store is put back in time and the input it would need to judge partition 0 again
    was deleted meanwhile (retention): partition 0 is refused (not ready, one ERROR line, the
    metric), nothing of it is published wrong, the others go on; ``referee partitions
    --accept-gap 0`` accepts the loss, and the partition goes on from the oldest input left."""
    stack, cluster = restorable_stack
    log = simulated(GAMES, 78, "--bad-rate", "0.01")
    records = keyed_lines(log)
    first, second = len(records) * 3 // 10, len(records) * 6 // 10
    figures = Figures("store_back_in_time_input_gone")
    want = replay(log, tmp_path)
    await produce(stack.bootstrap, stack.topics.input, records[:first])
    process, port = stack.start("referee")
    store = Store(stack.database_url)
    try:
        await store.wait_until(first, limit=120)
        await asyncio.sleep(2.0)
        await cluster.take_copy()
        await feed_and_publish(stack, records[first:second])
        await kill(process)
        await cluster.put_back()
        source = TopicPartition(stack.topics.input, 0)
        gone = await delete_all(stack.bootstrap, source)  # retention took partition 0's input
        figures["input_deleted_below"] = gone
        before = await drain(stack.bootstrap, stack.topics.verdicts, quiet_seconds=1)
        process, port = stack.start("referee-again")
        await produce_paced(stack.bootstrap, stack.topics.input, records[second:], 6.0)
        why = await wait_refused(port, 0)
        figures["readyz"] = why
        assert "partition 0 refused" in why
        assert "the input it needs is gone" in why
        _, metrics = await asyncio.to_thread(http_get, port, "/metrics")
        assert 'referee_partition_refused{partition="0",reason="input_gone"} 1.0' in metrics
        await asyncio.sleep(5.0)
        after = await drain(stack.bootstrap, stack.topics.verdicts, quiet_seconds=2)
        refused_lines = count_in_logs(stack, '"message": "partition refused')
        figures["refusal_log_lines"] = refused_lines
        assert refused_lines == 1, "one clear line, not one a retry"
        # nothing published wrong: no verdict twice, none that replay does not give, none more
        # of the refused partition than before
        ids = Counter(json.loads(v)["verdict_id"] for *_, v, _ in after)
        assert max(ids.values()) == 1
        assert {v.decode() for *_, v, _ in after} <= set(want.verdicts)
        on_zero = [v for p, *_, v, _ in after if p == 0]
        assert on_zero == [v for p, *_, v, _ in before if p == 0]
        # the other partitions: every verdict of their games, in order
        others = {g for g in by_game(want.verdicts) if partition_of(g, 4) != 0}
        published = by_game([v.decode() for p, *_, v, _ in after if p != 0])
        expected = by_game(want.verdicts)
        assert {g: published.get(g) for g in others} == {g: expected[g] for g in others}
        # the operator accepts the loss: the partition goes on after the deleted input
        accepted = await asyncio.to_thread(accept_gap, stack, 0)
        assert accepted.returncode == 0, accepted.stderr
        figures["accept_gap"] = accepted.stdout.strip().splitlines()[-1]
        await kill(process)
        process, port = stack.start("referee-accepted")
        await wait_ready(port)
        figures["ready_after_accepting"] = True
    finally:
        await store.close()
        figures.emit()


async def delete_all(bootstrap: str, tp: TopicPartition) -> int:
    """Deletes every record of a partition (as retention would); returns its new start."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        from aiokafka import AIOKafkaConsumer

        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
        await consumer.start()
        try:
            end: int = (await consumer.end_offsets([tp]))[tp]
        finally:
            await consumer.stop()
        await admin.delete_records({tp: RecordsToDelete(end)})
        return int(end)
    finally:
        await admin.close()


def partition_of(game_id: str, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a key (murmur2, as the producer's)."""
    return int(murmur2(game_id.encode()) & 0x7FFFFFFF) % partitions


def accept_gap(stack: Stack, partition: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "referee", "partitions", "--accept-gap", str(partition)],
        env=referee_env(stack),
        capture_output=True,
        text=True,
        check=False,
    )


async def wait_refused(port: int, partition: int, limit: float = 90) -> str:
    deadline = time.monotonic() + limit
    why = ""
    while time.monotonic() < deadline:
        try:
            status, why = await asyncio.to_thread(http_get, port, "/readyz")
            if status == 503 and f"partition {partition} refused" in why:
                return why.strip()
        except OSError:
            pass
        await asyncio.sleep(0.5)
    raise AssertionError(f"partition {partition} was not refused: {why}")


async def wait_ready(port: int, limit: float = 90) -> None:
    deadline = time.monotonic() + limit
    why = ""
    while time.monotonic() < deadline:
        try:
            status, why = await asyncio.to_thread(http_get, port, "/readyz")
            if status == 200:
                return
        except OSError:
            pass
        await asyncio.sleep(0.5)
    raise AssertionError(f"never ready: {why}")


async def test_an_input_topic_made_again_is_refused_not_skipped(
    make_stack: MakeStack, simulated: Simulated
) -> None:
    """The input topic is deleted and made again with the same partition count while the
    store holds positions of the old one: its partitions are refused (their offsets would be
    skipped up to the stored position), saying the topic was made again."""
    stack: Stack = await make_stack(partitions=2)
    log = simulated(60, 79)
    records = keyed_lines(log)
    figures = Figures("input_topic_made_again")
    await produce(stack.bootstrap, stack.topics.input, records)
    process, _ = stack.start("referee")
    store = Store(stack.database_url)
    try:
        await store.wait_until(len(records), limit=120)
        await kill(process)
        admin = AIOKafkaAdminClient(bootstrap_servers=stack.bootstrap)
        await admin.start()
        try:
            await admin.delete_topics([stack.topics.input])
            for _ in range(100):  # the deletion completes in the background
                try:
                    await admin.create_topics([NewTopic(stack.topics.input, 2, 1)])
                    break
                except Exception:  # noqa: BLE001 - still being deleted: try again
                    await asyncio.sleep(0.3)
        finally:
            await admin.close()
        # fewer records than the store processed (a few from the start of the log again)
        await produce(stack.bootstrap, stack.topics.input, records[:20])
        journaled = await store.journaled()
        process, port = stack.start("referee-again")
        why = await wait_refused(port, 0)
        figures["readyz"] = why
        assert "the input topic was deleted and made again" in why
        await asyncio.sleep(3.0)
        assert await store.journaled() == journaled, "nothing of the new topic was judged"
    finally:
        await store.close()
        figures.emit()


async def test_a_frozen_owner_woken_after_another_took_its_partitions_writes_and_publishes_nothing(
    make_stack: MakeStack, simulated: Simulated, tmp_path: Path
) -> None:
    """An owner is frozen (SIGSTOP) past the session timeout with batches and transactions of
    its partitions in hand; the group gives them to the other instance, which takes them (a
    new term, a fence on Kafka); the frozen one is woken (SIGCONT): its writes are refused by
    the term, its publishers are fenced and stop without fencing the new owner back, and it
    rejoins. Every verdict once."""
    stack: Stack = await make_stack(partitions=4)
    log = simulated(GAMES, 80, "--bad-rate", "0.01", "--duplicate-rate", "0.01")
    records = keyed_lines(log)
    figures = Figures("frozen_owner")
    feeding = asyncio.create_task(
        produce_paced(stack.bootstrap, stack.topics.input, records, seconds=40.0)
    )
    a, _ = stack.start("referee-a")
    store = Store(stack.database_url)
    try:
        await store.wait_until(len(records) // 10, limit=120)
        stack.start("referee-b")
        await asyncio.sleep(8.0)  # b joins: the partitions are shared
        a.send_signal(signal.SIGSTOP)
        frozen_at = time.monotonic()
        await asyncio.sleep(14.0)  # past the 6 s session timeout: b takes a's partitions
        a.send_signal(signal.SIGCONT)
        figures["frozen_s"] = round(time.monotonic() - frozen_at, 1)
        await feeding
        await verify(stack, log, tmp_path, figures)
        figures["lost_partitions_seen"] = count_in_logs(stack, "given up until the group")
        figures["fenced_publishers_stopped"] = count_in_logs(
            stack, "publisher fenced by a partition's new owner"
        )
        taken = [
            line
            for line in (stack.workdir / "referee-b.log").read_text().splitlines()
            if '"partition taken"' in line
        ]
        figures["takes_by_b"] = len(taken)
        assert re.search(r'"epoch": [2-9]', "\n".join(taken)), "b took a's partitions anew"
    finally:
        feeding.cancel()
        await store.close()
        figures.emit()
