"""Processes of a run: the ``referee`` command line, ``referee serve``, their stats."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

from bench.context import PY, Context
from tools.testkit.kafkatools import Topics, free_port, serve

SPEED = re.compile(r"speed: ([\d,]+) events/s \(([\d.]+) s")
RECORDS = re.compile(r"events: (\d+) records")


def run_cli(
    args: list[str], timeout: float = 600, env: dict[str, str] | None = None
) -> tuple[float, str]:
    """Runs ``referee ARGS`` (with ``env`` added to the environment); returns (wall seconds,
    standard error)."""
    started = time.perf_counter()
    done = subprocess.run(
        [PY, "-m", "referee", *args],
        capture_output=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **env} if env else None,
    )
    wall = time.perf_counter() - started
    err = done.stderr.decode(errors="replace")
    if done.returncode != 0:
        raise RuntimeError(f"referee {' '.join(args)} failed ({done.returncode}):\n{err[-3000:]}")
    return wall, err


def parse_speed(stderr: str) -> tuple[int, float]:
    """Returns (records, seconds) from a replay summary."""
    records = RECORDS.search(stderr)
    speed = SPEED.search(stderr)
    if records is None or speed is None:
        raise RuntimeError(f"no summary in: {stderr[-1000:]}")
    return int(records.group(1)), float(speed.group(2))


def count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def stop_process(process: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def proc_status(pid: int) -> dict[str, int]:
    """Returns VmHWM and VmRSS of a process in KiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            out[key] = int(value.split()[0])
    return out


def tail(path: Path, n: int = 3000) -> str:
    with contextlib.suppress(OSError):
        return path.read_text(errors="replace")[-n:]
    return ""


def imported_from(env: dict[str, str]) -> str:
    """Where ``referee`` comes from in a process with ``env`` added (the package's file)."""
    return subprocess.run(
        [PY, "-c", "import referee; print(referee.__file__)"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


async def ready(port: int) -> bool:
    def get() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    return await asyncio.to_thread(get)


@dataclass
class Served:
    """One running ``referee serve``."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path
    started: float
    ready_at: float = 0.0


async def start_serve(
    ctx: Context,
    url: str,
    topics: Topics,
    *,
    name: str,
    batch_size: int = 500,
    extra_env: dict[str, str] | None = None,
    group: str | None = None,
) -> Served:
    port = free_port()
    log = ctx.work / f"serve-{name}.log"
    log.unlink(missing_ok=True)
    env = {"REFEREE_KAFKA_SESSION_TIMEOUT_MS": "6000", **(extra_env or {})}
    started = time.perf_counter()
    process = serve(
        ctx.bootstrap,
        url,
        topics,
        group=group or f"bench-{name}-{uuid.uuid4().hex[:6]}",
        port=port,
        log_path=log,
        batch_size=batch_size,
        extra_env=env,
    )
    ctx.processes.append(process)
    served = Served(process, port, log, started)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"referee serve exited early:\n{tail(log)}")
        if await ready(port):
            served.ready_at = time.perf_counter()
            return served
        await asyncio.sleep(0.05)
    raise RuntimeError(f"referee serve not ready after 90 s:\n{tail(log)}")
