"""Fixtures of the reliability scenarios: the integration fixtures, a sized stack, cached logs.

The short form runs in CI; ``REFEREE_SOAK=1`` makes every scenario longer (bigger streams,
more kills). Figures are printed and, if ``REFEREE_RELIABILITY_REPORT`` names a file, appended
to it as JSON lines.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from tests.integration.conftest import (
    admin_url,
    create_database,
    drop_database,
    empty_database,
    migrated_database,
)
from tests.integration.kafka.conftest import Stack, bootstrap
from tests.integration.kafka.kafkatools import Topics, create_topics

__all__ = ["admin_url", "bootstrap", "empty_database", "migrated_database"]


@pytest.fixture
async def make_stack(
    bootstrap: str, admin_url: str, tmp_path: Path
) -> AsyncIterator[Callable[..., object]]:
    """Returns an async factory of isolated stacks (database + topics); cleans them all up."""
    made: list[tuple[Stack, str]] = []

    async def factory(partitions: int = 4) -> Stack:
        url = await create_database(admin_url)
        await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "referee", "migrate", "--database", url],
            check=True,
            capture_output=True,
        )
        topics = Topics.fresh()
        await create_topics(bootstrap, topics, partitions=partitions)
        s = Stack(bootstrap, url, topics, tmp_path, group=f"g-{topics.input}")
        made.append((s, url))
        return s

    yield factory
    for s, url in made:
        for p in s.processes:
            if p.poll() is None:
                p.kill()
                p.wait()
        await drop_database(admin_url, url)


_LOGS: dict[tuple[int, int, str], Path] = {}


@pytest.fixture(scope="session")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """Returns ``make(games, seed, *extra)``: a cached ``referee simulate`` log."""

    def make(games: int, seed: int, *extra: str) -> Path:
        key = (games, seed, " ".join(extra))
        if key not in _LOGS:
            path = tmp_path_factory.mktemp("logs") / f"sim-{games}-{seed}.jsonl"
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "referee",
                    "simulate",
                    "--games",
                    str(games),
                    "--seed",
                    str(seed),
                    "--output",
                    str(path),
                    *extra,
                ],
                check=True,
                capture_output=True,
            )
            _LOGS[key] = path
        return _LOGS[key]

    return make
