"""More than one consumer process per instance (``REFEREE_CONSUMER_PROCESSES``).

The consumer's event-loop thread is what limits an instance (docs/design.md, Scale ceiling):
decoding, judging and building rows take one core. With ``REFEREE_CONSUMER_PROCESSES=N``
(N > 1) the instance, once it has checked its settings, the database and Kafka and imported
the service, forks N consumer processes. Each is a whole referee of the consumer group: its
own consumer (its share of the partitions, given by the group as to any other instance), its
own processing step, database pool and relay process. The guarantees are those of N instances
(docs/reliability.md): positions in PostgreSQL, fencing, one relay leader in the cluster.

The instance itself only serves the operations endpoint for all of them and watches them:

- ``/readyz`` and ``/livez`` pass when every consumer process's own checks pass (each is
  asked over a socket pair, ``q <n>``, and answers one JSON line: ``n``, ``ready`` and
  ``live``; asked ``m <n>``, also its ``metrics`` exposition); one that does not answer in
  time fails them;
- ``/metrics`` is every consumer process's families, each sample labelled
  ``consumer="<index>"`` (``metrics.labelled``): sum over the label for the instance.

A consumer process that exits ends the instance: the others are stopped (each settles its
batch in hand, as an instance does on SIGTERM) and the instance exits with that status, to be
restarted whole, as a crashed instance is. SIGTERM or SIGINT stops them all and the instance
exits 0. An instance killed outright takes its consumer processes with it: the kernel sends
them SIGTERM (``PR_SET_PDEATHSIG``), and they read end-of-file on their socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from referee.service.http import OpsServer
from referee.service.metrics import labelled
from referee.service.relay_process import LINE_LIMIT, die_with_parent

if TYPE_CHECKING:
    from referee.service.runtime import Service
    from referee.service.settings import Settings

log = logging.getLogger("referee.serve")

ASK_SECONDS = 2.0
"""How long the instance waits for a consumer process's answer before it counts as failing."""
STOP_SECONDS = 60.0
"""How long the consumer processes have to settle and stop (their broker's graceful timeout
is 30 s, their relay's 15 s) before they are killed."""


# --- the consumer process's side ---------------------------------------------------------


async def answer_instance(service: Service, control: socket.socket) -> None:
    """Answers the instance's questions until it is gone; then stops this process."""
    reader, writer = await asyncio.open_unix_connection(sock=control, limit=LINE_LIMIT)
    try:
        while line := await reader.readline():
            word, _, number = line.decode().strip().partition(" ")
            if word not in ("q", "m"):
                continue
            try:
                ready = await service.readiness()
                live = await service.liveness()
                answer = {"n": number, "ready": ready, "live": live}
                if word == "m":
                    answer["metrics"] = (await service.exposition()).decode()
            except Exception:  # an unanswered question fails the probe; the next may pass
                log.exception("could not answer the instance")
                continue
            writer.write(json.dumps(answer).encode() + b"\n")
            await writer.drain()
    except ConnectionError:
        pass
    if not service.stopping.is_set():
        # end of file: the instance is gone (PR_SET_PDEATHSIG says so too, on Linux)
        log.warning("the instance is gone: stopping")
        os.kill(os.getpid(), signal.SIGTERM)


# --- the instance's side -----------------------------------------------------------------


@dataclass
class Consumer:
    """One forked consumer process, as the instance sees it."""

    index: int
    pid: int
    control: socket.socket
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    asking: asyncio.Lock = field(default_factory=asyncio.Lock)
    questions: int = 0

    async def ask(self, metrics: bool = False) -> dict[str, Any] | None:
        """Its checks (and with ``metrics`` its exposition), or None if it does not answer
        in time.

        Each question is numbered: an answer that comes after its question timed out is
        skipped by the next question, which waits for its own."""
        async with self.asking:
            if self.reader is None or self.writer is None:
                self.reader, self.writer = await asyncio.open_unix_connection(
                    sock=self.control, limit=LINE_LIMIT
                )
            self.questions += 1
            number = str(self.questions)
            try:
                self.writer.write(f"{'m' if metrics else 'q'} {number}\n".encode())
                await self.writer.drain()
                async with asyncio.timeout(ASK_SECONDS):
                    while line := await self.reader.readline():
                        answer: dict[str, Any] = json.loads(line)
                        if answer.get("n") == number:
                            return answer
            except (TimeoutError, ConnectionError, ValueError):
                pass
        return None


def fork_consumers(count: int, consume: Callable[[int, socket.socket], int]) -> list[Consumer]:
    """Forks ``count`` consumer processes; each runs ``consume(index, control)`` and exits
    with its status. Called before any event loop or thread of this process exists."""
    parent = os.getpid()
    consumers: list[Consumer] = []
    for index in range(count):
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:  # the consumer process
            code = 1
            try:
                ours.close()
                for earlier in consumers:
                    earlier.control.close()
                # its own process group: a terminal's Ctrl-C reaches the instance only,
                # which then stops the consumers in order
                os.setpgid(0, 0)
                die_with_parent(parent)
                code = consume(index, theirs)
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
            except BaseException:  # a forked child must never return into its parent's code
                log.exception("consumer process %d failed", index)
            finally:
                logging.shutdown()
                os._exit(code)
        theirs.close()
        consumers.append(Consumer(index, pid, ours))
    return consumers


async def supervise(settings: Settings, consumers: list[Consumer]) -> int:
    """Serves the probes and /metrics for the consumer processes until one exits or this
    process is told to stop; stops the rest; returns the instance's exit status."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    exits = {c.index: asyncio.create_task(_exit_status(c.pid)) for c in consumers}
    ops = OpsServer(
        settings.http_host,
        settings.http_port,
        lambda: _metrics(consumers),
        lambda: _checks(consumers, "ready"),
        lambda: _checks(consumers, "live"),
    )
    status = 0
    try:
        await ops.start()
        log.info("consumer processes started", extra={"pids": [c.pid for c in consumers]})
        told = asyncio.create_task(stopping.wait())
        await asyncio.wait([told, *exits.values()], return_when=asyncio.FIRST_COMPLETED)
        told.cancel()
        for index, task in exits.items():
            if task.done():
                status = status or task.result()
                log.error(
                    "consumer process %d exited (status %d): the instance stops",
                    index,
                    task.result(),
                )
    finally:
        await _stop(consumers, exits)
        await ops.stop()
    return status


async def _exit_status(pid: int) -> int:
    """Waits for a consumer process; its exit status, 128 + N if signal N ended it (as a
    shell says it)."""
    _, raw = await asyncio.to_thread(os.waitpid, pid, 0)
    code = os.waitstatus_to_exitcode(raw)
    return 128 - code if code < 0 else code


async def _stop(consumers: list[Consumer], exits: dict[int, asyncio.Task[int]]) -> None:
    for c in consumers:
        if not exits[c.index].done():
            with contextlib.suppress(ProcessLookupError):
                os.kill(c.pid, signal.SIGTERM)
    _, late = await asyncio.wait(exits.values(), timeout=STOP_SECONDS)
    for c in consumers:
        if exits[c.index] in late:
            log.error("consumer process %d did not stop: killed", c.index)
            with contextlib.suppress(ProcessLookupError):
                os.kill(c.pid, signal.SIGKILL)
    await asyncio.gather(*exits.values(), return_exceptions=True)
    for c in consumers:
        if c.writer is not None:
            c.writer.close()
        else:
            c.control.close()


async def _answers(
    consumers: Sequence[Consumer], metrics: bool = False
) -> list[dict[str, Any] | None]:
    return list(await asyncio.gather(*(c.ask(metrics) for c in consumers)))


async def _checks(consumers: Sequence[Consumer], check: str) -> tuple[bool, str]:
    problems = []
    for c, answer in zip(consumers, await _answers(consumers), strict=True):
        if answer is None:
            problems.append(f"consumer process {c.index} does not answer")
            continue
        good, why = answer[check]
        if not good:
            problems.append(f"consumer process {c.index}: {why}")
    if problems:
        return False, "; ".join(problems)
    return True, "ready" if check == "ready" else "alive"


async def _metrics(consumers: Sequence[Consumer]) -> bytes:
    answers = await _answers(consumers, metrics=True)
    return labelled(
        {c.index: a["metrics"] for c, a in zip(consumers, answers, strict=True) if a is not None}
    )
