"""Fixtures for tests on the real Apache Kafka broker and PostgreSQL server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.integration.conftest import _require, create_database, drop_database
from tests.integration.kafka.kafkatools import Topics, create_topics, free_port, serve

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

    def start(self, name: str = "referee", **kwargs: object) -> tuple[subprocess.Popen[bytes], int]:
        port = free_port()
        process = serve(
            self.bootstrap,
            self.database_url,
            self.topics,
            group=self.group,
            port=port,
            log_path=self.workdir / f"{name}.log",
            extra_env={"REFEREE_KAFKA_SESSION_TIMEOUT_MS": "6000"},
            **kwargs,  # type: ignore[arg-type]
        )
        self.processes.append(process)
        return process, port

    def logs(self) -> str:
        return "\n".join(
            p.read_text(errors="replace")[-4000:] for p in sorted(self.workdir.glob("*.log"))
        )


@pytest.fixture
async def stack(bootstrap: str, admin_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    """A migrated database and fresh 4-partition topics; stops every referee afterwards."""
    url = await create_database(admin_url)
    await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "referee", "migrate", "--database", url],
        check=True,
        capture_output=True,
    )
    topics = Topics.fresh()
    await create_topics(bootstrap, topics, partitions=4)
    s = Stack(bootstrap, url, topics, tmp_path, group=f"g-{topics.input}")
    yield s
    for p in s.processes:
        if p.poll() is None:
            p.kill()
            p.wait()
    await drop_database(admin_url, url)


@pytest.fixture(scope="session")
def simulated_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A simulated log of interleaved games with fouls, bad lines and duplicates."""
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


def replay_in_memory(log: Path, workdir: Path) -> tuple[list[str], list[dict[str, object]]]:
    """Returns the verdict lines and the rejections of ``referee replay`` without a database."""
    import json

    out, rejected = workdir / "replay.jsonl", workdir / "rejected.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "referee",
            "replay",
            str(log),
            "--output",
            str(out),
            "--rejected",
            str(rejected),
        ],
        check=True,
        capture_output=True,
    )
    return (
        out.read_text(encoding="utf-8").splitlines(),
        [json.loads(line) for line in rejected.read_text(encoding="utf-8").splitlines()],
    )
