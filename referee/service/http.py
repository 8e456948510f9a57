"""The operations endpoint: /healthz, /livez, /readyz and /metrics, a small ASGI app served by
uvicorn inside the service's event loop, bounded against its clients (``bounded_uvicorn.py``).

``/healthz`` says the process answers (the startup probe); ``/livez`` that neither the consumer
loop nor a publisher is stuck (liveness: a failing pod is restarted); ``/readyz`` that the
instance can take its share of the partitions (readiness)."""

from __future__ import annotations

import asyncio
import math
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge
from uvicorn import Config

from referee.service.bounded_uvicorn import (
    BACKLOG,
    BoundedH11Protocol,
    Bounds,
    ClientTable,
    EmbeddedServer,
    Rejected,
)

Readiness = Callable[[], Awaitable[tuple[bool, str]]]
Exposition = Callable[[], Awaitable[bytes]]
"""Renders /metrics (``Service.exposition``)."""

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MAX_CLIENTS = 64
"""Connections held at most, by default (``REFEREE_HTTP_MAX_CLIENTS``)."""
REQUEST_SECONDS = 5.0
"""Time for each request, by default (``REFEREE_HTTP_REQUEST_SECONDS``)."""


class OpsServer:
    """Serves liveness, readiness and metrics; nothing else."""

    def __init__(
        self,
        host: str,
        port: int,
        metrics: Exposition,
        readiness: Readiness,
        liveness: Readiness | None = None,
        *,
        max_clients: int = MAX_CLIENTS,
        request_seconds: float = REQUEST_SECONDS,
        rejected: Counter | None = None,
        connections: Gauge | None = None,
    ) -> None:
        self.host = host
        self.port = port
        """The port listened on (once started, the one the system chose for 0)."""
        self.bounds = Bounds(max_clients, request_seconds)
        self.table = ClientTable(self.bounds, _counting(rejected))
        self.app = Probes(metrics, readiness, liveness, self.table)
        if connections is not None:
            connections.set_function(lambda: len(self.table.clients))
        self._server: EmbeddedServer | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Starts listening (raises OSError if the port cannot be bound)."""
        sockets = listen(self.host, self.port)
        self.port = sockets[0].getsockname()[1]
        config = Config(
            self.app,
            interface="asgi3",
            http=BoundedH11Protocol,
            ws="none",
            lifespan="off",
            log_config=None,  # the service's JSON logging stays as it is
            access_log=False,
            proxy_headers=False,
            server_header=False,
            date_header=False,
            h11_max_incomplete_event_size=self.bounds.max_head_bytes,
            backlog=BACKLOG,
            timeout_graceful_shutdown=math.ceil(self.bounds.request_seconds),
        )
        server = self._server = EmbeddedServer(config, self.table)
        task = self._task = asyncio.create_task(server.serve(sockets), name="referee-ops")
        listening = asyncio.create_task(server.listening.wait())
        await asyncio.wait((task, listening), return_when=asyncio.FIRST_COMPLETED)
        if not listening.done():
            listening.cancel()
            await task  # raises what stopped it
            raise RuntimeError("the operations server stopped as it started")

    async def stop(self) -> None:
        """Stops listening, closes the waiting clients and lets those being answered finish."""
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        await self._task
        self.table.summarize()


class Probes:
    """The ASGI app of the operations port: the probes and /metrics, at their exact paths."""

    def __init__(
        self,
        metrics: Exposition,
        readiness: Readiness,
        liveness: Readiness | None,
        table: ClientTable,
    ) -> None:
        self.metrics = metrics
        self.readiness = readiness
        self.liveness = liveness
        self.table = table

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:  # noqa: ARG002
        """Answers one request."""
        if scope["type"] != "http":  # no lifespan, no websockets: uvicorn sends neither
            return
        headers = [(b"content-type", b"text/plain")]
        if head_bytes(scope) > self.table.bounds.max_head_bytes:
            # h11 bounds a head that arrives in pieces; one that arrived whole is bounded here
            self.table.reject(Rejected.TOO_LARGE)
            status, body = 431, b"request header fields too large\n"
            headers.append((b"connection", b"close"))
        else:
            status, ctype, body = await self.route(scope["path"])
            headers = [(b"content-type", ctype.encode())]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def route(self, path: str) -> tuple[int, str, bytes]:
        """Returns the status, content type and body of a path."""
        if path == "/healthz":
            return 200, "text/plain", b"ok\n"
        if path in ("/readyz", "/livez"):
            check = self.readiness if path == "/readyz" else self.liveness
            if check is None:
                return 200, "text/plain", b"alive\n"
            good, why = await check()
            return (200 if good else 503), "text/plain", (why + "\n").encode()
        if path == "/metrics":
            return 200, CONTENT_TYPE_LATEST, await self.metrics()
        return 404, "text/plain", b"not found\n"


def head_bytes(scope: Message) -> int:
    """Returns about how many bytes a request's head took on the wire."""
    line = len(scope["method"]) + len(scope["raw_path"]) + len(scope["query_string"]) + 12
    return line + sum(len(name) + len(value) + 4 for name, value in scope["headers"])


def listen(host: str, port: int) -> list[socket.socket]:
    """Binds the port on every address of ``host`` as ``asyncio.start_server`` did, with its
    error (here, so that a port taken raises OSError to ``referee serve``, which reports it,
    where uvicorn would log it and exit)."""
    addresses = dict.fromkeys(
        (family, address)
        for family, _, _, _, address in socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    )
    sockets: list[socket.socket] = []
    try:
        for family, address in addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as err:
                raise OSError(
                    err.errno,
                    f"error while attempting to bind on address {address!r}: "
                    f"{(err.strerror or '').lower()}",
                ) from None
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def _counting(rejected: Counter | None) -> Callable[[Rejected], None]:
    def count(reason: Rejected) -> None:
        if rejected is not None:
            rejected.labels(reason.value).inc()

    return count
