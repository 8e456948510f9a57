"""The operations endpoint: /healthz, /livez, /readyz and /metrics on a tiny asyncio HTTP
server.

``/healthz`` says the process answers (the startup probe); ``/livez`` that neither the consumer
loop nor a publisher is stuck (liveness: a failing pod is restarted); ``/readyz`` that the
instance can take its share of the partitions (readiness)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from prometheus_client import CONTENT_TYPE_LATEST

Readiness = Callable[[], Awaitable[tuple[bool, str]]]
Exposition = Callable[[], Awaitable[bytes]]
"""Renders /metrics (``Service.exposition``, or the instance's of its consumer processes)."""


class OpsServer:
    """Serves liveness, readiness and metrics; nothing else."""

    def __init__(
        self,
        host: str,
        port: int,
        metrics: Exposition,
        readiness: Readiness,
        liveness: Readiness | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.metrics = metrics
        self.readiness = readiness
        self.liveness = liveness
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        """Starts listening."""
        self._server = await asyncio.start_server(self._handle, self.host, self.port)

    async def stop(self) -> None:
        """Stops listening."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass
            parts = request.decode("latin-1").split()
            path = parts[1] if len(parts) > 1 else "/"
            status, ctype, body = await self._route(path)
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + body)
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _route(self, path: str) -> tuple[str, str, bytes]:
        if path == "/healthz":
            return "200 OK", "text/plain", b"ok\n"
        if path in ("/readyz", "/livez"):
            check = self.readiness if path == "/readyz" else self.liveness
            if check is None:
                return "200 OK", "text/plain", b"alive\n"
            good, why = await check()
            status = "200 OK" if good else "503 Service Unavailable"
            return status, "text/plain", (why + "\n").encode()
        if path == "/metrics":
            return "200 OK", CONTENT_TYPE_LATEST, await self.metrics()
        return "404 Not Found", "text/plain", b"not found\n"
