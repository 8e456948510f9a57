"""The relay in a process of its own, a child of ``referee serve`` (``REFEREE_RELAY_PROCESS``).

One instance's consumer loop is bound by its single event-loop thread: judging, the rows,
COPY, the consumer and FastStream around it, and (when the relay runs there) the relay and
its transactional producer, about a tenth of that thread (docs/design.md, "Scale ceiling").
In a child process the relay has the second core, and the consumer loop has its thread to
itself. Nothing of the relay's correctness changes: it is the same ``OutboxRelay``, leading
by the same PostgreSQL session lock, fencing by the same transactional id.

The two processes talk over a Unix socket pair, one JSON object or one word a line:

- parent to child: ``w <perf_counter>`` (outbox rows committed: wake up; the time is the
  commit's, for the ``relay_wake`` stage), ``m`` (send your metrics), ``s`` (stop: end the
  term between two pumps, release the lock, exit);
- child to parent: ``{"alive": seconds}`` every second (how long ago its loop came round, for
  /livez), ``{"metrics": [...]}`` in answer to ``m`` (the relay's metric families, merged into
  the instance's /metrics by ``metrics.exposition``).

The child dies with its parent: when the parent's end of the socket closes (the parent
exited, however it died) it reads end-of-file and stops as on ``s``; on Linux the kernel also
sends it SIGTERM when the parent dies (``PR_SET_PDEATHSIG``), should its loop be stuck. The
parent restarts a child that exited, with a growing wait, and counts the restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import os
import signal
import socket
import sys
import time
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from referee.service.kafka_options import consumer_options, kafka_security, relay_producer
from referee.service.metrics import Metrics, RemoteFamily, relay_families
from referee.service.relay import Outbox, OutboxRelay, TopicTails, sleep_unless
from referee.service.retry import Backoff
from referee.service.settings import Settings
from referee.store.relay_store import PostgresRelayStore

log = logging.getLogger("referee.relay")

MODULE = "referee.service.relay_process"
HEARTBEAT_SECONDS = 1.0
"""How often the child says how long ago its loop came round."""
METRICS_SECONDS = 2.0
"""How long /metrics waits for the child's families before it answers without them."""
STOP_SECONDS = 14.0
"""How long a stopping child has to end its term before it is killed (within the 15 s the
instance gives its relay to stop, ``app.RELAY_STOP_SECONDS``)."""
STEADY_SECONDS = 60.0
"""A child that ran this long before it exited is restarted after the shortest wait."""
BACKLOG_SECONDS = 5.0
"""How often the child reads the relay's backlog (as ``lag.EVERY_SECONDS`` does inline)."""
LINE_LIMIT = 1 << 22
"""The longest line either side reads (the metric families are a few kB)."""
PR_SET_PDEATHSIG = 1


def outboxes(settings: Settings) -> list[Outbox]:
    """The outboxes a relay publishes, and their topics."""
    return [Outbox("verdicts", settings.verdict_topic), Outbox("dead_letters", settings.dlq_topic)]


def make_relay(settings: Settings, engine: AsyncEngine, metrics: Metrics) -> OutboxRelay:
    """The relay of the outboxes on ``engine``, publishing with the configured producer."""
    security = kafka_security(settings)
    return OutboxRelay(
        PostgresRelayStore(engine),
        outboxes(settings),
        relay_producer(settings, security),
        TopicTails(consumer_options(settings, security)),
        metrics,
    )


class RelayProcess:
    """The parent's side: starts the child, keeps it running, wakes it, asks it for metrics.

    It stands where an ``OutboxRelay`` stands in a running instance (``runtime.Relay``):
    ``notify`` wakes the child, ``alive_at`` follows its heartbeats, and the backlog gauges
    are the child's to set (they come with its metric families).
    """

    def __init__(self, database_url: str, outboxes: list[Outbox], metrics: Metrics) -> None:
        self.database_url = database_url
        self.outboxes = outboxes
        self.metrics = metrics
        self.wake = asyncio.Event()
        self.woken_at = 0.0
        self.alive_at = time.monotonic()
        """When the child's loop last came round, as its last heartbeat said (for /livez)."""
        self.families: list[RemoteFamily] = []
        """The child's relay metric families, as last received."""
        self._writer: asyncio.StreamWriter | None = None
        self._answer: asyncio.Future[list[RemoteFamily]] | None = None
        self._asking = asyncio.Lock()

    def notify(self) -> None:
        """Wakes the child: outbox rows were committed."""
        self.woken_at = time.perf_counter()
        self.wake.set()

    async def publish_backlog(self) -> None:
        """Nothing here: the child sets the backlog gauges in its own metrics."""

    async def run(self, stopping: asyncio.Event) -> None:
        """Runs a child until ``stopping`` is set, restarting it whenever it exits."""
        waits = Backoff(first=0.5, most=10.0)
        while not stopping.is_set():
            started = time.monotonic()
            try:
                code = await self._term(stopping)
            except Exception:
                log.exception("relay process failed")
                code = None
            if stopping.is_set():
                return
            if time.monotonic() - started >= STEADY_SECONDS:
                waits.succeeded()
            delay = waits.failed()
            self.metrics.relay_restarts.inc()
            log.error(
                "relay process exited; restarting it",
                extra={"exit_code": code, "retry_in_seconds": delay},
            )
            await sleep_unless(stopping, delay)

    async def metric_families(self) -> list[RemoteFamily]:
        """Asks the child for its metric families (the last ones received if it is slow)."""
        writer = self._writer
        if writer is None:
            return self.families
        async with self._asking:
            self._answer = asyncio.get_running_loop().create_future()
            try:
                writer.write(b"m\n")
                self.families = await asyncio.wait_for(self._answer, METRICS_SECONDS)
            except (TimeoutError, ConnectionError):
                log.warning("the relay process did not send its metrics")
            finally:
                self._answer = None
        return self.families

    async def _term(self, stopping: asyncio.Event) -> int:
        """Starts one child and serves it until it exits (or, once stopping, it is stopped)."""
        ours, theirs = socket.socketpair()
        try:
            child = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                MODULE,
                str(theirs.fileno()),
                str(os.getpid()),
                pass_fds=(theirs.fileno(),),
                env={**os.environ, "REFEREE_DATABASE_URL": self.database_url},
                stdin=asyncio.subprocess.DEVNULL,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        log.info("relay process started", extra={"pid": child.pid})
        reader, writer = await asyncio.open_unix_connection(sock=ours, limit=LINE_LIMIT)
        self._writer = writer
        tasks = [
            asyncio.create_task(self._read(reader)),
            asyncio.create_task(self._forward_wakes(writer)),
        ]
        exited = asyncio.create_task(child.wait())
        stop = asyncio.create_task(stopping.wait())
        try:
            await asyncio.wait([exited, stop], return_when=asyncio.FIRST_COMPLETED)
            if not exited.done():
                with contextlib.suppress(ConnectionError):
                    writer.write(b"s\n")
                    await writer.drain()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(exited), STOP_SECONDS)
            if not exited.done():
                log.warning("relay process did not stop in time; killing it")
            return await _reap(child, exited)
        finally:
            self._writer = None
            for task in (*tasks, stop):
                task.cancel()
            writer.close()
            if child.returncode is None:
                # cancelled (the instance stops without waiting): leave no child behind
                with contextlib.suppress(ProcessLookupError):
                    child.kill()
            exited.cancel()

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            try:
                message: dict[str, Any] = json.loads(line)
            except ValueError:
                log.warning("unreadable line from the relay process", extra={"line": line[:200]})
                continue
            if "alive" in message:
                self.alive_at = time.monotonic() - float(message["alive"])
            elif "metrics" in message:
                answer = self._answer
                if answer is not None and not answer.done():
                    answer.set_result(message["metrics"])

    async def _forward_wakes(self, writer: asyncio.StreamWriter) -> None:
        # Wake-ups that come while one is being written are one wake-up: the child reads
        # every outbox to its end each time.
        while True:
            await self.wake.wait()
            self.wake.clear()
            writer.write(f"w {self.woken_at!r}\n".encode())
            await writer.drain()


async def _reap(child: asyncio.subprocess.Process, exited: asyncio.Task[int]) -> int:
    if not exited.done():
        with contextlib.suppress(ProcessLookupError):
            child.kill()
    return await exited


# --- the child ---------------------------------------------------------------------------


def die_with_parent(parent: int) -> None:
    """Asks the kernel for SIGTERM when the parent dies (Linux), and exits if it already has."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request was made
        raise SystemExit(0)


async def serve_relay(relay: OutboxRelay, metrics: Metrics, control: socket.socket) -> None:
    """Runs the relay until told to stop, its parent gone, or SIGTERM."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stopping.set)
    reader, writer = await asyncio.open_unix_connection(sock=control, limit=LINE_LIMIT)
    relaying = asyncio.create_task(relay.run(stopping))
    helpers = [
        asyncio.create_task(_obey(reader, writer, relay, metrics, stopping)),
        asyncio.create_task(_heartbeat(writer, relay, stopping)),
        asyncio.create_task(watch_backlog(relay, stopping)),
    ]
    await stopping.wait()
    relay.wake.set()  # out of an idle wait: the term ends between two pumps
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(relaying), STOP_SECONDS)
    for task in (relaying, *helpers):
        task.cancel()
    await asyncio.gather(relaying, *helpers, return_exceptions=True)
    writer.close()


async def _obey(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    relay: OutboxRelay,
    metrics: Metrics,
    stopping: asyncio.Event,
) -> None:
    try:
        while line := await reader.readline():
            word, _, rest = line.decode().strip().partition(" ")
            if word == "w":
                relay.notify(float(rest) if rest else None)
            elif word == "m":
                families = relay_families(metrics.registry)
                writer.write(json.dumps({"metrics": families}).encode() + b"\n")
                await writer.drain()
            elif word == "s":
                break
    except ConnectionError:
        pass
    # told to stop, or end of file: the parent is gone
    stopping.set()


async def _heartbeat(
    writer: asyncio.StreamWriter, relay: OutboxRelay, stopping: asyncio.Event
) -> None:
    with contextlib.suppress(ConnectionError):
        while not stopping.is_set():
            age = max(time.monotonic() - relay.alive_at, 0.0)
            writer.write(json.dumps({"alive": round(age, 3)}).encode() + b"\n")
            await writer.drain()
            await sleep_unless(stopping, HEARTBEAT_SECONDS)


async def watch_backlog(relay: OutboxRelay, stopping: asyncio.Event) -> None:
    """Sets the relay's backlog gauges every ``BACKLOG_SECONDS`` until stopped."""
    while not stopping.is_set():
        await sleep_unless(stopping, BACKLOG_SECONDS)
        await relay.publish_backlog()


def main(argv: list[str]) -> int:
    """``python -m referee.service.relay_process FD PARENT_PID``: the child's whole life."""
    fd, parent = int(argv[0]), int(argv[1])
    die_with_parent(parent)
    # Ctrl-C reaches the whole process group: the instance decides when its relay stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from referee.service.logs import configure_logging
    from referee.store.database import create_engine

    settings = Settings()
    configure_logging(settings.log_level)
    control = socket.socket(fileno=fd)

    async def run() -> None:
        # one connection holds the lock (and listens), one reads the backlog
        engine = create_engine(settings.database_url.get_secret_value(), 2, 1)
        metrics = Metrics(
            revision=settings.build_revision,
            topics=(settings.verdict_topic, settings.dlq_topic),
        )
        try:
            await serve_relay(make_relay(settings, engine, metrics), metrics, control)
        finally:
            await engine.dispose()

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
