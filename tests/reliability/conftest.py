"""Fixtures of the reliability scenarios: the integration fixtures, a sized stack, cached logs.

The short form runs in CI; ``REFEREE_SOAK=1`` makes every scenario longer (bigger streams,
more kills). Figures are printed and, if ``REFEREE_RELIABILITY_REPORT`` names a file, appended
to it as JSON lines.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import (
    admin_url,
    earlier_release,
    empty_database,
    migrated_database,
)
from tests.integration.kafka.conftest import Stack, bootstrap, close_stack, open_stack
from tools.testkit.kafkatools import probe_group

__all__ = ["admin_url", "bootstrap", "earlier_release", "empty_database", "migrated_database"]

MakeStack = Callable[..., Any]
"""``await make_stack(partitions=4, migrated=True)``: an isolated stack (database and
topics)."""
Simulated = Callable[..., Path]
"""``simulated(games, seed, *extra)``: a cached ``referee simulate`` log."""


@pytest.fixture
async def make_stack(
    bootstrap: str, admin_url: str, tmp_path: Path
) -> AsyncIterator[Callable[..., object]]:
    """Returns an async factory of isolated stacks (database + topics); cleans them all up."""
    made: list[Stack] = []

    async def factory(partitions: int = 4, *, migrated: bool = True) -> Stack:
        s = await open_stack(bootstrap, admin_url, tmp_path, partitions, migrated=migrated)
        made.append(s)
        # a broker restarted by the scenario before may still be loading the group's
        # coordinator (docs/reliability.md): start once the group can be joined
        await probe_group(bootstrap, s.group, s.topics.input)
        return s

    yield factory
    for s in made:
        await close_stack(s, admin_url)


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
