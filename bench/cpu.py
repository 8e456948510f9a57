"""CPU time of the processes a benchmark runs beside: the broker, PostgreSQL, the referees.

Read from ``/proc/<pid>/stat`` (user + system clock ticks), so a phase's CPU is the difference
of two readings; PostgreSQL's is the postmaster's and every backend's (its children), read at
both ends (a backend that ended in between is not counted: the benchmarks keep their
connections).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bench.services import service_env

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """Returns a process's CPU time so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def children(pid: int) -> list[int]:
    """Returns the processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def broker_pid() -> int | None:
    """The benchmark's broker (scripts/kafka.sh's pid file), if it runs."""
    env = service_env()
    path = Path(env["REFEREE_STATE_DIR"]) / f"kafka-{env['KAFKA_PORT']}" / "kafka.pid"
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def postmaster_pid() -> int | None:
    """The benchmark's PostgreSQL (its data directory's postmaster.pid), if it runs."""
    env = service_env()
    path = Path(env["REFEREE_STATE_DIR"]) / f"pg-{env['PG_PORT']}" / "data" / "postmaster.pid"
    try:
        return int(path.read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


@dataclass(frozen=True)
class Reading:
    """CPU seconds of the broker, PostgreSQL and the referees at one moment."""

    broker: float
    postgres: float
    referees: float


def reading(referees: list[int]) -> Reading:
    """Reads the CPU time of the broker, PostgreSQL (all its processes) and the referees."""
    broker = broker_pid()
    postmaster = postmaster_pid()
    postgres = 0.0
    if postmaster is not None:
        postgres = cpu_seconds(postmaster) + sum(cpu_seconds(c) for c in children(postmaster))
    # a referee's children count as its own (release 0.1 ran its relay in one)
    return Reading(
        cpu_seconds(broker) if broker is not None else 0.0,
        postgres,
        sum(cpu_seconds(p) + sum(cpu_seconds(c) for c in children(p)) for p in referees),
    )


def per_thousand(before: Reading, after: Reading, events: int) -> dict[str, float]:
    """CPU seconds per 1,000 events of each, between two readings."""
    scale = 1000 / max(events, 1)
    return {
        "broker": (after.broker - before.broker) * scale,
        "postgres": (after.postgres - before.postgres) * scale,
        "referee": (after.referees - before.referees) * scale,
    }
