"""The attack on the operations port of ``test_ops_port.py``, run as a process of its own
(``python -m tests.reliability.ops_attack``) so that its thousands of connections share
nothing with the test's event loop, which times the verdicts.

Slow clients send a request line, then a header line every ``pace`` seconds, and never finish;
one the server closes comes back after ``pace`` seconds. Request lines over 64 KiB and
garbage are sent alongside. Every second it samples the connections the server still holds
(from the clients' side: opened, not closed); at the end it prints what it saw as one JSON
object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

HOST = "127.0.0.1"

GARBAGE = (
    b"garbage\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)),  # a TLS hello
    b"GET /readyz HTTP/1.1\r\n\r\n",  # no Host
    b"GET /readyz HTTP/1.1\r\nhost: referee\r\nno colon here\r\n\r\n",
    b"\x00" * 200 + b"\r\n\r\n",
)


@dataclass
class Seen:
    """What the clients saw."""

    started: float = field(default_factory=time.monotonic)
    live: dict[int, float] = field(default_factory=dict)
    """Connections of slow clients the server has not closed: since when."""
    connections: int = 0
    closed_by_server: int = 0
    answered: int = 0
    """Slow clients that got bytes back (the server owes them nothing)."""
    connect_errors: int = 0
    samples: list[tuple[float, int, float]] = field(default_factory=list)
    """(seconds into the attack, connections held, age of the oldest)."""
    oversized: Counter[str] = field(default_factory=Counter)
    garbage: Counter[str] = field(default_factory=Counter)

    def sample(self) -> None:
        now = time.monotonic()
        oldest = now - min(self.live.values()) if self.live else 0.0
        self.samples.append((round(now - self.started, 1), len(self.live), round(oldest, 2)))


async def slow_client(number: int, port: int, pace: float, until: float, seen: Seen) -> None:
    """Connects, sends a request line and a header line every ``pace`` seconds; comes back
    ``pace`` seconds after the server closes it."""
    while time.monotonic() < until:
        try:
            reader, writer = await asyncio.open_connection(HOST, port)
        except OSError:
            seen.connect_errors += 1
            await asyncio.sleep(pace)
            continue
        seen.connections += 1
        seen.live[number] = time.monotonic()
        closed = False
        try:
            writer.write(b"GET /readyz HTTP/1.1\r\nhost: referee\r\n")
            while not closed and time.monotonic() < until:
                try:
                    async with asyncio.timeout(pace):
                        data = await reader.read(4096)
                except TimeoutError:
                    writer.write(b"x-slow: 1\r\n")
                    continue
                seen.answered += bool(data)
                closed = not data
        except OSError:
            closed = True
        finally:
            del seen.live[number]
            writer.close()
        if closed:
            seen.closed_by_server += 1
            await asyncio.sleep(pace)


async def one_request(port: int, request: bytes) -> str:
    """Sends a request and reads to the end: the status, or ``cut`` if none came."""
    try:
        reader, writer = await asyncio.open_connection(HOST, port)
    except OSError:
        return "refused"
    try:
        writer.write(request)
        async with asyncio.timeout(30):
            data = await reader.read()
    except (OSError, TimeoutError):
        data = b""
    finally:
        writer.close()
    parts = data.split(b" ", 2)
    return parts[1].decode() if len(parts) > 1 and data.startswith(b"HTTP/1.1 ") else "cut"


async def attack(port: int, slow: int, oversized: int, garbage: int, seconds: float) -> Seen:
    """Runs the attack for ``seconds``; returns what the clients saw."""
    seen = Seen()
    until = seen.started + seconds + 1.0  # the last sample is taken at ``seconds``, under load
    pace = 3.0
    ramp = 3.0 / max(slow, 1)

    async def slow_later(number: int) -> None:
        await asyncio.sleep(number * ramp)
        await slow_client(number, port, pace, until, seen)

    async def bad(kind: Counter[str], request: bytes, delay: float) -> None:
        await asyncio.sleep(delay)
        kind[await one_request(port, request)] += 1

    line = b"GET /" + b"a" * (64 * 1024 + 1) + b" HTTP/1.1\r\n"
    tasks = [asyncio.create_task(slow_later(n)) for n in range(slow)]
    tasks += [asyncio.create_task(bad(seen.oversized, line, n * 0.05)) for n in range(oversized)]
    tasks += [
        asyncio.create_task(bad(seen.garbage, GARBAGE[n % len(GARBAGE)], n * 0.05))
        for n in range(garbage)
    ]
    for second in range(1, int(seconds) + 1):
        await asyncio.sleep(seen.started + second - time.monotonic())
        seen.sample()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return seen


def report(seen: Seen) -> dict[str, Any]:
    return {
        "connections": seen.connections,
        "closed_by_server": seen.closed_by_server,
        "answered_slow_clients": seen.answered,
        "connect_errors": seen.connect_errors,
        "samples": seen.samples,
        "oversized": dict(seen.oversized),
        "garbage": dict(seen.garbage),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("port", type=int)
    parser.add_argument("--slow", type=int, default=3000)
    parser.add_argument("--oversized", type=int, default=100)
    parser.add_argument("--garbage", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    seen = asyncio.run(attack(args.port, args.slow, args.oversized, args.garbage, args.seconds))
    print(json.dumps(report(seen)))


if __name__ == "__main__":
    main()
