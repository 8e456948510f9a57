"""The operations port answers the probes and /metrics at their exact paths, with the statuses
and bodies the chart's probes, the image's HEALTHCHECK and the scenarios read; a port taken is
an OSError for ``referee serve`` to report."""

from __future__ import annotations

import asyncio
import errno
import inspect
import socket
import urllib.error
import urllib.request

import pytest
from prometheus_client import CONTENT_TYPE_LATEST

from referee.service.http import OpsServer
from referee.service.settings import Settings


def fetch(port: int, path: str, method: str = "GET") -> tuple[int, str, bytes]:
    """Returns the status, content type and body of a request (urllib: what the image's
    HEALTHCHECK uses)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, r.headers["content-type"], r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["content-type"], e.read()


class Checks:
    def __init__(self) -> None:
        self.ready: tuple[bool, str] = (True, "ready")
        self.alive: tuple[bool, str] = (True, "alive")

    async def readiness(self) -> tuple[bool, str]:
        return self.ready

    async def liveness(self) -> tuple[bool, str]:
        return self.alive

    async def exposition(self) -> bytes:
        return b"referee_up 1.0\n"


async def answers(server: OpsServer, path: str, method: str = "GET") -> tuple[int, str, bytes]:
    return await asyncio.to_thread(fetch, server.port, path, method)


async def test_the_probes_and_metrics_answer_as_they_always_did() -> None:
    checks = Checks()
    server = OpsServer("127.0.0.1", 0, checks.exposition, checks.readiness, checks.liveness)
    await server.start()
    try:
        assert await answers(server, "/healthz") == (200, "text/plain", b"ok\n")
        assert await answers(server, "/readyz") == (200, "text/plain", b"ready\n")
        assert await answers(server, "/livez") == (200, "text/plain", b"alive\n")
        assert await answers(server, "/metrics") == (200, CONTENT_TYPE_LATEST, b"referee_up 1.0\n")
        assert await answers(server, "/nothing") == (404, "text/plain", b"not found\n")
        assert await answers(server, "/readyz", "HEAD") == (200, "text/plain", b"")

        checks.ready = (False, "postgresql unreachable: OSError")
        checks.alive = (False, "publisher stuck: its loop last came round 200 s ago")
        assert await answers(server, "/readyz") == (
            503,
            "text/plain",
            b"postgresql unreachable: OSError\n",
        )
        assert await answers(server, "/livez") == (
            503,
            "text/plain",
            b"publisher stuck: its loop last came round 200 s ago\n",
        )
    finally:
        await server.stop()


async def test_without_a_liveness_check_livez_says_alive() -> None:
    checks = Checks()
    server = OpsServer("127.0.0.1", 0, checks.exposition, checks.readiness)
    await server.start()
    try:
        assert await answers(server, "/livez") == (200, "text/plain", b"alive\n")
    finally:
        await server.stop()


async def test_a_port_taken_is_an_oserror_of_start() -> None:
    checks = Checks()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = OpsServer("127.0.0.1", taken.getsockname()[1], checks.exposition, checks.readiness)
        with pytest.raises(OSError, match="in use") as raised:
            await server.start()
    assert raised.value.errno == errno.EADDRINUSE
    await server.stop()  # what `referee serve` does after a failed start


def test_the_server_defaults_are_the_settings_defaults() -> None:
    defaults = inspect.signature(OpsServer).parameters
    settings = Settings()
    assert defaults["max_clients"].default == settings.http_max_clients
    assert defaults["request_seconds"].default == settings.http_request_seconds
