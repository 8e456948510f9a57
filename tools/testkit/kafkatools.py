"""Helpers for tests and benchmarks against the real broker: topics, producing a log, draining
a topic, running `referee serve`."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from referee.service.tails import partition_ids


@dataclass(frozen=True, slots=True)
class Topics:
    """A fresh set of the referee's three topics (unique names per test)."""

    input: str
    verdicts: str
    dlq: str

    @classmethod
    def fresh(cls) -> Topics:
        tag = uuid.uuid4().hex[:8]
        return cls(f"t{tag}.game-events", f"t{tag}.referee-verdicts", f"t{tag}.game-events.dlq")


async def create_topics(bootstrap: str, topics: Topics, partitions: int = 4) -> None:
    """Creates the topics with ``partitions`` partitions each."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics(
            [
                NewTopic(name, num_partitions=partitions, replication_factor=1)
                for name in (topics.input, topics.verdicts, topics.dlq)
            ]
        )
    finally:
        await admin.close()


async def probe_group(bootstrap: str, group_id: str, topic: str, limit: float = 120.0) -> float:
    """Joins ``group_id`` on ``topic`` with a throwaway member, then leaves; returns how long
    the join took. A broker restarted moments ago may take a while to load the group's
    coordinator: the scenarios start once it answers, so what they measure is the referee's
    and not the broker's warm-up. Raises TimeoutError if no join completes in ``limit`` s."""
    started = time.monotonic()
    while True:
        remaining = limit - (time.monotonic() - started)
        if remaining <= 0:
            raise TimeoutError(f"group {group_id!r} could not be joined in {limit:.0f} s")
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group_id, enable_auto_commit=False
        )
        try:
            async with asyncio.timeout(min(remaining, 30.0)):
                await consumer.start()  # returns once the group has assigned it
            return time.monotonic() - started
        except TimeoutError:
            continue
        finally:
            await consumer.stop()  # leaves the group: the referee's members join it afresh


def keyed_lines(log: Path) -> list[tuple[bytes | None, bytes]]:
    """Returns (key, value) for every line of a log: the key is the game id when readable."""
    out: list[tuple[bytes | None, bytes]] = []
    for line in log.read_bytes().splitlines():
        if not line.strip():
            continue
        try:
            game = json.loads(line).get("game_id")
        except (ValueError, AttributeError):
            game = None
        out.append((game.encode() if isinstance(game, str) else None, line))
    return out


async def produce(bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes]]) -> int:
    """Publishes records in order (idempotent producer); returns how many."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        enable_idempotence=True,
        linger_ms=5,
        max_request_size=4 * 1024 * 1024,
    )
    await producer.start()
    n = 0
    try:
        futures = []
        for key, value in records:
            futures.append(await producer.send(topic, value, key=key))
            n += 1
        await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return n


async def drain(
    bootstrap: str,
    topic: str,
    *,
    quiet_seconds: float = 5.0,
    expect: int | None = None,
    limit_seconds: float = 120.0,
    isolation_level: str = "read_committed",
) -> list[tuple[int, int, bytes | None, bytes, dict[str, bytes]]]:
    """Reads a topic from the start until nothing new arrives for ``quiet_seconds``.

    Returns (partition, offset, key, value, headers) for every record. Read committed, as a
    consumer of the referee's output must: records of aborted relay transactions are not
    returned (with ``isolation_level="read_uncommitted"`` they are).
    """
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        isolation_level=isolation_level,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        parts = await partition_ids({"bootstrap_servers": bootstrap}, topic)
        consumer.assign([TopicPartition(topic, p) for p in parts])
        await consumer.seek_to_beginning()
        out: list[tuple[int, int, bytes | None, bytes, dict[str, bytes]]] = []
        deadline = time.monotonic() + limit_seconds
        last_new = time.monotonic()
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            got = False
            for tp, records in batch.items():
                for r in records:
                    out.append((tp.partition, r.offset, r.key, r.value or b"", dict(r.headers)))
                    got = True
            if got:
                last_new = time.monotonic()
            elif (
                expect is not None and len(out) >= expect and time.monotonic() - last_new > 1
            ) or (
                time.monotonic() - last_new > quiet_seconds
                and (expect is None or len(out) >= expect)
            ):
                break
        return out
    finally:
        await consumer.stop()


def free_port() -> int:
    """Returns a free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(
    bootstrap: str,
    database_url: str,
    topics: Topics,
    *,
    group: str,
    port: int,
    log_path: Path,
    batch_size: int = 500,
    extra_env: dict[str, str] | None = None,
    module: str = "referee",
    python: str = sys.executable,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Starts ``referee serve`` in a subprocess with its output in ``log_path``.

    ``module`` is what ``python -m`` runs: the referee, or a test's wrapper of it that puts
    a fault in place first (``tests.faults``); ``python`` the interpreter and ``cwd`` the
    directory it runs in (another release's tree and virtual environment, in the upgrade
    tests).
    """
    env = {
        **os.environ,
        "REFEREE_DATABASE_URL": database_url,
        "REFEREE_KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "REFEREE_INPUT_TOPIC": topics.input,
        "REFEREE_VERDICT_TOPIC": topics.verdicts,
        "REFEREE_DLQ_TOPIC": topics.dlq,
        "REFEREE_GROUP_ID": group,
        "REFEREE_HTTP_HOST": "127.0.0.1",
        "REFEREE_HTTP_PORT": str(port),
        "REFEREE_BATCH_SIZE": str(batch_size),
        "REFEREE_LOG_LEVEL": "INFO",
        **(extra_env or {}),
    }
    handle = log_path.open("ab")
    return subprocess.Popen(
        [python, "-m", module, "serve"], env=env, stdout=handle, stderr=handle, cwd=cwd
    )
