"""The operations port bounded: each request has a deadline, the clients have a bound that a
newcomer passes by closing the longest waiting, a bad request gets a 4xx, and none of it
writes the log line by line; uvicorn runs in the test's loop and leaves the signals alone.

Every test here runs the real server on a real socket, and each pins a behaviour of uvicorn
that ``referee/service/bounded_uvicorn.py`` relies on (named in its docstring): an upgrade of
uvicorn that changes one fails here.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest
from uvicorn import Server
from uvicorn.protocols.http.h11_impl import H11Protocol

from referee.service import bounded_uvicorn
from referee.service.bounded_uvicorn import MAX_HEAD_BYTES, Rejected
from referee.service.http import OpsServer
from referee.service.metrics import Metrics

DEADLINE = 0.4
LIMIT = 15.0
"""How long a test waits for something that must happen (never a measure of speed)."""


@dataclass
class Served:
    """An operations server started for a test, and the metrics it counts in."""

    server: OpsServer
    metrics: Metrics

    @property
    def port(self) -> int:
        return self.server.port

    def rejected(self, reason: Rejected) -> float:
        value = self.metrics.registry.get_sample_value(
            "referee_ops_rejected_total", {"reason": reason}
        )
        assert value is not None, "every reason's series exists from the start"
        return value

    def held(self) -> float | None:
        return self.metrics.registry.get_sample_value("referee_ops_connections")

    async def stop(self) -> None:
        await self.server.stop()


MakeServer = Callable[..., Awaitable[Served]]


class Client(asyncio.Protocol):
    """A raw TCP client: what it sent is up to the test, what it got is kept whole."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = asyncio.Event()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.data += data

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()

    def send(self, data: bytes) -> None:
        assert self.transport is not None
        if not self.transport.is_closing():
            self.transport.write(data)

    def status(self) -> int:
        return int(bytes(self.data).split(b" ", 2)[1])

    def body(self) -> bytes:
        return bytes(self.data).partition(b"\r\n\r\n")[2]

    async def wait_closed(self) -> None:
        await asyncio.wait_for(self.closed.wait(), LIMIT)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def connect(port: int) -> Client:
    _, client = await asyncio.get_running_loop().create_connection(Client, "127.0.0.1", port)
    return client


async def exchange(port: int, request: bytes) -> Client:
    """Sends a request and waits for the server to close the connection."""
    client = await connect(port)
    client.send(request)
    await client.wait_closed()
    return client


def get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nhost: referee\r\nconnection: close\r\n\r\n".encode()


async def ready() -> tuple[bool, str]:
    return True, "ready"


@pytest.fixture
async def make_server() -> AsyncIterator[MakeServer]:
    made: list[Served] = []

    async def factory(
        max_clients: int = 64,
        request_seconds: float = DEADLINE,
        readiness: Callable[[], Awaitable[tuple[bool, str]]] = ready,
    ) -> Served:
        metrics = Metrics()

        async def exposition() -> bytes:
            return metrics.exposition()

        server = OpsServer(
            "127.0.0.1",
            0,
            exposition,
            readiness,
            max_clients=max_clients,
            request_seconds=request_seconds,
            rejected=metrics.ops_rejected,
            connections=metrics.ops_connections,
        )
        await server.start()
        made.append(Served(server, metrics))
        return made[-1]

    yield factory
    for server in made:
        await server.stop()


async def until(condition: Callable[[], bool]) -> None:
    """Waits until the condition holds (polled: it is the server's state, with no event)."""
    async with asyncio.timeout(LIMIT):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def open_clients(clients: list[Client]) -> list[Client]:
    """Returns the clients whose connection the server has not closed (after a moment for a
    close in flight to arrive)."""
    await asyncio.sleep(0.05)
    return [c for c in clients if not c.closed.is_set()]


# ------------------------------------------------------------------------------ the deadline


async def test_a_client_that_trickles_its_request_head_is_closed_at_the_deadline(
    make_server: MakeServer,
) -> None:
    """uvicorn's keep-alive timer is cancelled by every byte: the deadline is not."""
    server = await make_server()
    client = await connect(server.port)
    client.send(b"GET /healthz HTTP/1.1\r\n")

    async def trickle() -> None:
        while not client.closed.is_set():
            client.send(b"x-slow: 1\r\n")
            await asyncio.sleep(DEADLINE / 8)

    await asyncio.gather(trickle(), client.wait_closed())
    assert client.data == b"", "closed, not answered"
    assert server.rejected(Rejected.TIMEOUT) == 1


async def test_a_client_that_connects_and_sends_nothing_is_closed_at_the_deadline(
    make_server: MakeServer,
) -> None:
    """uvicorn arms no timer on a new connection: the deadline starts with it."""
    server = await make_server()
    client = await connect(server.port)
    await client.wait_closed()
    assert server.rejected(Rejected.TIMEOUT) == 1


async def test_after_an_answer_the_next_request_has_its_own_deadline(
    make_server: MakeServer,
) -> None:
    """``on_response_complete`` is called after each answer: the deadline starts again there,
    so a client cannot hold a kept-alive connection by trickling its next request."""
    server = await make_server()
    client = await connect(server.port)
    client.send(b"GET /healthz HTTP/1.1\r\nhost: referee\r\n\r\n")
    await until(lambda: b"ok\n" in client.data)
    assert client.status() == 200
    assert not client.closed.is_set()

    async def trickle() -> None:
        client.send(b"GET /healthz HTTP/1.1\r\n")
        while not client.closed.is_set():
            client.send(b"x-slow: 1\r\n")
            await asyncio.sleep(DEADLINE / 8)

    await asyncio.gather(trickle(), client.wait_closed())
    assert server.rejected(Rejected.TIMEOUT) == 1


async def test_a_kept_alive_connection_left_idle_is_closed_without_being_counted(
    make_server: MakeServer,
) -> None:
    server = await make_server()
    client = await connect(server.port)
    client.send(b"GET /healthz HTTP/1.1\r\nhost: referee\r\n\r\n")
    await client.wait_closed()
    assert client.status() == 200
    assert server.rejected(Rejected.TIMEOUT) == 0


# ------------------------------------------------------------------------------ the bound


async def test_past_the_bound_the_longest_waiting_are_closed_and_a_probe_is_answered(
    make_server: MakeServer,
) -> None:
    server = await make_server(max_clients=4, request_seconds=LIMIT * 2)
    slow = []
    for _ in range(20):
        client = await connect(server.port)
        client.send(b"GET /readyz HTTP/1.1\r\n")
        slow.append(client)
        await asyncio.sleep(0.01)  # in order of arrival
    assert await open_clients(slow) == slow[-4:], "the newest four are held, the rest closed"
    assert server.held() == 4

    probe = await exchange(server.port, get("/readyz"))
    assert (probe.status(), probe.body()) == (200, b"ready\n")
    assert await open_clients(slow) == slow[-3:], "the probe closed the longest waiting"
    assert server.rejected(Rejected.EVICTED) == 16 + 1
    assert server.held() == 3
    for client in slow:
        client.close()


async def test_a_request_that_came_with_its_connection_is_answered_though_a_burst_follows(
    make_server: MakeServer,
) -> None:
    """The loop accepts a burst of connections before it reads any: the bound is enforced on
    its next turn, once the probe's request is in hand (closing the longest waiting at each
    admission closed the probe, the oldest of its burst, unread)."""
    server = await make_server(max_clients=4, request_seconds=LIMIT * 2)
    slow = []
    for _ in range(4):
        client = await connect(server.port)
        client.send(b"GET /readyz HTTP/1.1\r\n")
        slow.append(client)
    await asyncio.sleep(0.05)
    # blocking sockets: the whole burst, data included, is in the kernel before the loop
    # (the server's) runs again
    probe = socket.create_connection(("127.0.0.1", server.port))
    probe.sendall(get("/readyz"))
    burst = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(10)]
    for sock in burst:
        sock.sendall(b"GET /readyz HTTP/1.1\r\n")
    try:
        answer = await asyncio.wait_for(asyncio.to_thread(read_to_end, probe), LIMIT)
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
        assert answer.endswith(b"\r\n\r\nready\n")
        assert server.rejected(Rejected.EVICTED) == 4 + 7, "the slow four, the first seven new"
    finally:
        for sock in [probe, *burst]:
            sock.close()
        for client in slow:
            client.close()


def read_to_end(sock: socket.socket) -> bytes:
    sock.settimeout(LIMIT)
    data = b""
    while chunk := sock.recv(4096):
        data += chunk
    return data


async def test_a_connection_being_answered_is_never_closed_for_a_newcomer(
    make_server: MakeServer,
) -> None:
    """uvicorn's ``cycle.response_complete`` tells a request with the app from a waiting one."""
    release = asyncio.Event()

    async def held() -> tuple[bool, str]:
        await release.wait()
        return True, "ready at last"

    server = await make_server(max_clients=1, request_seconds=LIMIT * 2, readiness=held)
    answered = await connect(server.port)
    answered.send(get("/readyz"))
    await until(lambda: any(c.answering() for c in server.server.table.clients))
    newcomers = [await connect(server.port) for _ in range(3)]
    for client in newcomers:
        await client.wait_closed()
    assert server.rejected(Rejected.REFUSED) == 3
    release.set()
    await answered.wait_closed()
    assert (answered.status(), answered.body()) == (200, b"ready at last\n")


# ------------------------------------------------------------------------------ bad requests

GARBAGE = [
    b"garbage\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)),  # a TLS hello
    b"GET /healthz HTTP/1.1\r\n\r\n",  # no Host
    b"GET /healthz HTTP/1.1\r\nhost: referee\r\nno colon here\r\n\r\n",
    b"\x00" * 100 + b"\r\n\r\n",
]


async def test_bad_requests_get_a_4xx_and_write_no_log_line_each(
    make_server: MakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    """uvicorn calls ``send_400_response`` for what h11 cannot parse, bounds the head with
    h11's ``max_incomplete_event_size``, and logs its client warnings through the protocol's
    ``logger``: here they are answered, counted, and summed up in one line."""
    caplog.set_level(logging.DEBUG)
    server = await make_server(max_clients=1000, request_seconds=LIMIT)
    oversized_line = b"GET /" + b"a" * (64 * 1024 + 1) + b" HTTP/1.1\r\n"  # never finished
    oversized_whole = b"GET /readyz?" + b"a" * (64 * 1024 + 1) + b" HTTP/1.1\r\nhost: r\r\n\r\n"
    upgrade = (
        b"GET /healthz HTTP/1.1\r\nhost: r\r\nconnection: upgrade, close\r\nupgrade: h2c\r\n\r\n"
    )
    requests = [oversized_line] * 50 + [oversized_whole] * 50 + GARBAGE * 10 + [upgrade]
    answers = await asyncio.gather(*(exchange(server.port, r) for r in requests))

    statuses = [a.status() for a in answers]
    assert statuses[:100] == [431] * 100
    assert statuses[100:-1] == [400] * len(GARBAGE) * 10
    assert statuses[-1] == 200, "an upgrade uvicorn cannot do is a plain request"
    assert server.rejected(Rejected.TOO_LARGE) == 100
    assert server.rejected(Rejected.MALFORMED) == len(GARBAGE) * 10
    await server.stop()  # which writes the summary of the minute under way
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.name, r.levelname) for r in loud] == [("referee.ops", "WARNING")]
    assert loud[0].getMessage() == (
        "the operations port turned clients away: malformed 50, too_large 100 "
        "(referee_ops_rejected_total)"
    )
    assert not [r for r in caplog.records if r.name.startswith("uvicorn.access")]


async def test_the_clients_turned_away_are_summed_up_at_the_end_of_each_minute(
    make_server: MakeServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bounded_uvicorn, "SUMMARY_SECONDS", 0.3)
    caplog.set_level(logging.DEBUG, logger="referee.ops")
    server = await make_server(request_seconds=LIMIT)
    await asyncio.gather(*(exchange(server.port, b"garbage\r\n\r\n") for _ in range(3)))
    assert not caplog.records, "nothing is logged before the minute is out"
    await until(lambda: len(caplog.records) == 1)
    await asyncio.gather(*(exchange(server.port, b"garbage\r\n\r\n") for _ in range(2)))
    await until(lambda: len(caplog.records) == 2)
    assert [getattr(r, "rejected", None) for r in caplog.records] == [
        {"malformed": 3},
        {"malformed": 2},
    ]
    await server.stop()
    assert len(caplog.records) == 2, "nothing left to sum up"


async def test_a_bad_body_after_the_answer_began_closes_the_connection(
    make_server: MakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server = await make_server(request_seconds=LIMIT)
    request = (
        b"POST /healthz HTTP/1.1\r\nhost: r\r\ntransfer-encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\nnot a chunk size\r\n"
    )
    client = await exchange(server.port, request)
    assert client.data == b"" or (client.status(), client.body()) == (200, b"ok\n"), (
        "the request is cut, or answered once: never a 400 after the 200"
    )
    assert server.rejected(Rejected.MALFORMED) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


# ------------------------------------------------------------------------------ in the loop


async def test_serving_leaves_the_signal_handlers_and_the_logging_alone(
    make_server: MakeServer,
) -> None:
    """uvicorn's ``Server.serve`` installs its SIGINT and SIGTERM handlers through
    ``capture_signals`` (FastStream's must stay), and ``Config`` applies its logging
    configuration unless ``log_config`` is None (the service's JSON lines must stay)."""
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    root = logging.getLogger()
    root_handlers, root_level = list(root.handlers), root.level
    uvicorn_handlers = list(logging.getLogger("uvicorn").handlers)

    server = await make_server()
    probe = await exchange(server.port, get("/healthz"))
    assert probe.status() == 200
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers
    await server.stop()
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers
    assert (root.handlers, root.level) == (root_handlers, root_level)
    assert logging.getLogger("uvicorn").handlers == uvicorn_handlers


async def test_stop_closes_the_waiting_clients_and_lets_an_answer_finish(
    make_server: MakeServer,
) -> None:
    release = asyncio.Event()

    async def held() -> tuple[bool, str]:
        await release.wait()
        return True, "ready"

    server = await make_server(request_seconds=LIMIT * 2, readiness=held)
    waiting = [await connect(server.port) for _ in range(5)]
    for client in waiting:
        client.send(b"GET /healthz HTTP/1.1\r\n")
    answered = await connect(server.port)
    answered.send(get("/readyz"))
    await asyncio.sleep(0.05)
    stopping = asyncio.create_task(server.stop())
    for client in waiting:
        await client.wait_closed()
    assert not stopping.done(), "the answer under way is waited for"
    release.set()
    await asyncio.wait_for(stopping, LIMIT)
    await answered.wait_closed()
    assert answered.status() == 200


def test_the_uvicorn_methods_the_extension_overrides_exist() -> None:
    """An override of a method uvicorn renamed would never be called (the tests above would
    fail too; this says why)."""
    for name in (
        "connection_made",
        "connection_lost",
        "data_received",
        "on_response_complete",
        "send_400_response",
        "shutdown",
    ):
        assert callable(getattr(H11Protocol, name, None)), f"H11Protocol.{name}"
    for name in ("capture_signals", "startup", "serve"):
        assert callable(getattr(Server, name, None)), f"Server.{name}"
    assert MAX_HEAD_BYTES < 64 * 1024
