"""uvicorn run inside the service's event loop and bounded against its clients: the one place
the referee extends uvicorn (``tests/unit/service/test_bounded_uvicorn.py`` holds every
behaviour of uvicorn this relies on, so an upgrade that changes one fails there).

uvicorn bounds neither a request's whole time nor the number of its clients: its keep-alive
timer starts only after a response and every byte received cancels it (uvicorn issue #157),
a connection that sends nothing has no timer at all, and ``limit_concurrency`` answers a
newcomer 503 once slow clients hold every place. Here each connection has a deadline for each
request, from its opening (or its previous response) to the answer; the connections are
bounded: past the bound, those that have waited longest for their next request are closed
once the loop has read what the newcomers sent (never one being answered); a request head is
bounded in size. A client turned away is counted by reason and summed up in one log line a
minute at most, never logged one by one (uvicorn logs each malformed request at WARNING).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections import Counter, OrderedDict
from collections.abc import Callable, Generator
from dataclasses import dataclass
from enum import StrEnum
from http import HTTPStatus
from typing import Any

from uvicorn import Config, Server
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

MAX_HEAD_BYTES = 8192
"""The largest request head (request line and headers) answered; a probe's is a few hundred
bytes."""

BACKLOG = 128
"""Connections the kernel queues for the port, and so the most asyncio accepts in one turn of
the loop: the bound may be passed by that many for the turn it takes to read them."""

SUMMARY_SECONDS = 60.0
"""The clients turned away are summed up in one log line at the end of each minute that saw
some (and when the server stops)."""

log = logging.getLogger("referee.ops")

# uvicorn's protocol logs a client's fault (a malformed request, an upgrade it cannot do) at
# WARNING, one line per request, which lets any client write the service's log; on this
# logger only an exception of the app itself (ERROR) is written.
_protocol_log = logging.getLogger("referee.ops.protocol")
_protocol_log.setLevel(logging.ERROR)


class Rejected(StrEnum):
    """Why a client of the operations port was closed or refused (``referee_ops_rejected``)."""

    TIMEOUT = "timeout"
    """No complete request answered within the deadline of its connection."""
    EVICTED = "evicted"
    """Closed while waiting for its request, to admit a newcomer past the bound."""
    REFUSED = "refused"
    """A newcomer closed at once: every place within the bound held a request being
    answered."""
    MALFORMED = "malformed"
    """Not an HTTP/1.1 request (answered 400)."""
    TOO_LARGE = "too_large"
    """A request head over ``MAX_HEAD_BYTES`` (answered 431)."""


@dataclass(frozen=True, slots=True)
class Bounds:
    """How much of the process the clients of the operations port may hold."""

    max_clients: int
    """Connections held at most."""
    request_seconds: float
    """Time a connection has for each request, from its opening or its previous response to
    the answer."""
    max_head_bytes: int = MAX_HEAD_BYTES


class ClientTable(ServerState):
    """uvicorn's state shared by a server's connections, with the bookkeeping of the bound:
    the open connections in the order they began to wait for their next request."""

    def __init__(self, bounds: Bounds, count: Callable[[Rejected], None]) -> None:
        super().__init__()
        self.bounds = bounds
        self._count = count
        self.clients: OrderedDict[BoundedH11Protocol, None] = OrderedDict()
        self._unlogged: Counter[Rejected] = Counter()
        self._summary: asyncio.TimerHandle | None = None
        self._bounding: asyncio.TimerHandle | None = None

    def admit(self, client: BoundedH11Protocol) -> None:
        """Takes a new connection in, unless every place is held by a request being answered
        (it is closed at once). Past the bound, the connections that have waited longest
        are closed on the loop's next turn, once it has read what arrived: a newcomer whose
        request came with it is being answered by then, and never taken for a slow client
        (the loop accepts a burst of connections before it reads any of them)."""
        if len(self.clients) >= self.bounds.max_clients and (
            sum(c.answering() for c in self.clients) >= self.bounds.max_clients
        ):
            self.reject(Rejected.REFUSED)
            client.close()
            return
        self.clients[client] = None
        if len(self.clients) > self.bounds.max_clients and self._bounding is None:
            # a timer due runs after the reads of the loop's turn (asyncio's order; the
            # burst test of test_bounded_uvicorn.py holds it)
            self._bounding = asyncio.get_running_loop().call_later(0, self.bound)

    def bound(self) -> None:
        """Closes the connections that have waited longest for their request, down to the
        bound (those being answered are left to their deadline)."""
        self._bounding = None
        excess = len(self.clients) - self.bounds.max_clients
        if excess <= 0:
            return
        waiting = [c for c in self.clients if not c.answering()]
        for victim in waiting[:excess]:
            self.reject(Rejected.EVICTED)
            victim.close()

    def waits(self, client: BoundedH11Protocol) -> None:
        """Notes that a connection begins to wait for its next request."""
        if client in self.clients:
            self.clients.move_to_end(client)

    def leave(self, client: BoundedH11Protocol) -> None:
        """Forgets a closed connection."""
        self.clients.pop(client, None)

    def reject(self, reason: Rejected) -> None:
        """Counts a client turned away; the first of a minute starts the minute at whose end
        they are summed up in one log line."""
        self._count(reason)
        self._unlogged[reason] += 1
        if self._summary is None:
            self._summary = asyncio.get_running_loop().call_later(SUMMARY_SECONDS, self.summarize)

    def summarize(self) -> None:
        """Logs the clients turned away since the last summary, if any."""
        if self._summary is not None:
            self._summary.cancel()
            self._summary = None
        if not self._unlogged:
            return
        counts = {reason.value: n for reason, n in sorted(self._unlogged.items())}
        self._unlogged.clear()
        log.warning(
            "the operations port turned clients away: %s (referee_ops_rejected_total)",
            ", ".join(f"{reason} {n}" for reason, n in counts.items()),
            extra={"rejected": counts},
        )


class BoundedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for each request, a place in the client
    table, and a client's faults counted rather than logged."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        if not isinstance(server_state, ClientTable):
            raise TypeError("BoundedH11Protocol is served by an EmbeddedServer")
        self.table = server_state
        self.logger = _protocol_log
        self.deadline: asyncio.TimerHandle | None = None
        self.answered = 0
        """Responses completed on this connection."""
        self.heard = False
        """Whether bytes arrived since this connection began to wait for its request."""
        self.refused = False
        """Whether a 400 or 431 was sent: what else arrives is discarded until it closes."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Takes a place in the table (maybe another's) and starts the first deadline."""
        super().connection_made(transport)
        self._arm()
        self.table.admit(self)

    def connection_lost(self, exc: Exception | None) -> None:
        """Leaves the table."""
        self._disarm()
        self.table.leave(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """Passes the bytes to uvicorn (after a refusal, drops them)."""
        if self.refused:
            return
        self.heard = True
        super().data_received(data)

    def on_response_complete(self) -> None:
        """Starts the deadline of the connection's next request."""
        self.answered += 1
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()
            self.table.waits(self)

    def send_400_response(self, msg: str) -> None:  # noqa: ARG002 - uvicorn's message
        """Answers a request h11 cannot parse: 431 when its head outgrew the bound, else 400.

        The response goes out whole before a FIN, and the rest of the request is read and
        dropped until the client closes (or the deadline does): closing with unread bytes
        would reset the connection and could destroy the answer before the client reads it.
        """
        too_large = len(self.conn.trailing_data[0]) > self.table.bounds.max_head_bytes
        self.table.reject(Rejected.TOO_LARGE if too_large else Rejected.MALFORMED)
        if self.answering():  # a response is under way: no second status line fits in it
            self.close()
            return
        status = HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE if too_large else HTTPStatus.BAD_REQUEST
        self.transport.write(refusal(status))
        self.refused = True
        self.transport.write_eof()

    def shutdown(self) -> None:
        """Lets a request being answered finish (uvicorn's way); closes a waiting one."""
        if self.answering():
            super().shutdown()
        else:
            self.close()

    def answering(self) -> bool:
        """Whether a request of this connection is with the app and not yet answered."""
        return self.cycle is not None and not self.cycle.response_complete

    def close(self) -> None:
        """Closes the connection at once (nothing owed to the client is pending)."""
        self.table.leave(self)
        self.transport.abort()

    def expire(self) -> None:
        """The deadline passed: closes the connection, counting it unless it merely idled
        after an answer (a kept-alive connection nobody reused)."""
        self.deadline = None
        if self.transport.is_closing():
            return
        if not self.refused and (self.answering() or self.heard or not self.answered):
            self.table.reject(Rejected.TIMEOUT)
        self.close()

    def _arm(self) -> None:
        self._disarm()
        self.heard = False
        self.deadline = self.loop.call_later(self.table.bounds.request_seconds, self.expire)

    def _disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None


def refusal(status: HTTPStatus) -> bytes:
    """Returns a whole response that refuses a request and closes the connection."""
    body = f"{status.phrase.lower()}\n".encode()
    return (
        f"HTTP/1.1 {status.value} {status.phrase}\r\ncontent-type: text/plain\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


class EmbeddedServer(Server):
    """uvicorn's server as a task of the service's event loop, on sockets bound beforehand,
    with a ``ClientTable`` as the state its connections share."""

    def __init__(self, config: Config, table: ClientTable) -> None:
        super().__init__(config)
        self.server_state = table
        self.listening = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        """Installs nothing: ``serve`` would take SIGINT and SIGTERM over for uvicorn's own
        shutdown (and raise them again after it), and they are FastStream's."""
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Starts serving, then says so."""
        await super().startup(sockets=sockets)
        self.listening.set()
