"""Fixtures for tests on the real Apache Kafka broker and PostgreSQL server."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import _require, create_database, drop_database
from tools.testkit.kafkatools import Topics, create_topics, free_port, serve

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def bootstrap() -> str:
    """The address of the test broker (started by scripts/test)."""
    return _require("REFEREE_TEST_KAFKA")


@dataclass
class Stack:
    """One isolated deployment: a database, three topics, and the referees started on them."""

    bootstrap: str
    database_url: str
    topics: Topics
    workdir: Path
    group: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(
        self, name: str = "referee", extra_env: dict[str, str] | None = None, **kwargs: object
    ) -> tuple[subprocess.Popen[bytes], int]:
        port = free_port()
        process = serve(
            self.bootstrap,
            self.database_url,
            self.topics,
            group=self.group,
            port=port,
            log_path=self.workdir / f"{name}.log",
            extra_env={"REFEREE_KAFKA_SESSION_TIMEOUT_MS": "6000", **(extra_env or {})},
            **kwargs,  # type: ignore[arg-type]
        )
        self.processes.append(process)
        return process, port

    def logs(self) -> str:
        return "\n".join(
            p.read_text(errors="replace")[-4000:] for p in sorted(self.workdir.glob("*.log"))
        )


async def open_stack(
    bootstrap: str, admin_url: str, workdir: Path, partitions: int = 4, *, migrated: bool = True
) -> Stack:
    """Creates a database (migrated, unless told not to) and fresh topics with
    ``partitions`` partitions each."""
    url = await create_database(admin_url)
    if migrated:
        await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "referee", "migrate", "--database", url],
            check=True,
            capture_output=True,
        )
    topics = Topics.fresh()
    await create_topics(bootstrap, topics, partitions=partitions)
    return Stack(bootstrap, url, topics, workdir, group=f"g-{topics.input}")


async def close_stack(stack: Stack, admin_url: str) -> None:
    """Kills the stack's referees and drops its database."""
    for p in stack.processes:
        if p.poll() is None:
            p.kill()
            p.wait()
    await drop_database(admin_url, stack.database_url)


@pytest.fixture
async def stack(bootstrap: str, admin_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    """A migrated database and fresh 4-partition topics; stops every referee afterwards."""
    s = await open_stack(bootstrap, admin_url, tmp_path)
    yield s
    await close_stack(s, admin_url)


def _simulate(path: Path, *args: str) -> bytes:
    done = subprocess.run(
        [sys.executable, "-m", "referee", "simulate", *args, "--output", str(path)],
        check=True,
        capture_output=True,
    )
    assert done.returncode == 0
    return path.read_bytes()


@pytest.fixture(scope="session")
def edition2_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every family of edition 2, interleaved in one log with fouls, bad lines and duplicates:
    trains, spinners that score during play, partnerships, penalty scoring."""
    directory = tmp_path_factory.mktemp("edition2")
    families = [
        ("31", "--layout", "trains"),
        ("32", "--layout", "spinner", "--play-scoring", "fives"),
        ("33", "--teams"),
        ("34", "--scoring", "penalty", "--layout", "line"),
    ]
    parts = []
    for seed, *flags in families:
        lines = _simulate(
            directory / f"part-{seed}.jsonl",
            "--games", "30", "--seed", seed, "--foul-rate", "0.05",
            "--bad-rate", "0.02", "--duplicate-rate", "0.01", *flags,
        )  # fmt: skip
        parts.append(lines.splitlines(keepends=True))
    merged: list[bytes] = []
    while any(parts):  # round robin: each game keeps its own order
        for part in parts:
            merged.extend(part[:7])
            del part[:7]
    path = directory / "edition2.jsonl"
    path.write_bytes(b"".join(merged))
    return path


@pytest.fixture(scope="session")
def simulated_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A simulated log of interleaved games with fouls, bad lines and duplicates (rules drawn
    across every family)."""
    path = tmp_path_factory.mktemp("logs") / "stream.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "referee",
            "simulate",
            "--games",
            "150",
            "--seed",
            "5",
            "--bad-rate",
            "0.02",
            "--duplicate-rate",
            "0.01",
            "--output",
            str(path),
        ],
        check=True,
        capture_output=True,
    )
    return path


@dataclass(frozen=True)
class Replay:
    """What ``referee replay`` without a database says about a log."""

    verdicts: list[str]
    rejections: list[dict[str, Any]]
    duplicates: int


def replay_in_memory(
    log: Path,
    workdir: Path,
    name: str = "replay",
    *flags: str,
    module: str = "referee",
) -> Replay:
    """Returns the verdict lines, the rejections and the duplicate count of ``referee replay``
    (with ``flags``; ``module`` is what ``python -m`` runs: the referee, or a test's wrapper
    of it)."""
    out = workdir / f"{name}.replay-verdicts.jsonl"
    rejected = workdir / f"{name}.replay-rejected.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            module,
            "replay",
            str(log),
            *flags,
            "--output",
            str(out),
            "--rejected",
            str(rejected),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    found = re.search(r"^duplicates: (\d+)", done.stderr, re.MULTILINE)
    assert found is not None, done.stderr
    return Replay(
        out.read_text(encoding="utf-8").splitlines(),
        [json.loads(line) for line in rejected.read_text(encoding="utf-8").splitlines()],
        int(found.group(1)),
    )
