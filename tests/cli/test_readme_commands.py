"""The README's commands, run as written: its quick tour, and the compiled build's
dependencies from a clone.

Each runs through ``uv`` as a reader would type it, offline and with the lock as it is
(``UV_OFFLINE``, ``UV_FROZEN``: a test neither downloads nor relocks).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tools import native

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
TOUR = "### The commands at a glance"


def _tour() -> list[str]:
    """The commands of the README's quick tour: the lines of the block under its heading."""
    after = README.split(TOUR, 1)[1]
    block = re.search(r"```sh\n(.*?)```", after, flags=re.DOTALL)
    assert block is not None, "the tour's commands are a sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def _uv_env(**extra: str) -> dict[str, str]:
    uv = os.environ.get("UV") or shutil.which("uv")
    assert uv is not None, "uv runs the README's commands (scripts/test installs it)"
    path = f"{Path(uv).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "UV_OFFLINE": "1", "UV_FROZEN": "1", **extra}


def _run(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_tour_holds_the_quick_commands() -> None:
    tour = _tour()
    assert "uv run referee --version" in tour
    assert any(line.startswith("uv run referee replay ") for line in tour)
    assert any(line.startswith("uv run referee simulate ") for line in tour)
    assert "uv run python -m tools.native status" in tour


@pytest.mark.parametrize("command", _tour())
def test_each_command_of_the_tour_runs_as_written(command: str) -> None:
    done = _run(command, _uv_env())
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip(), f"{command} printed nothing"


def _build_command() -> str:
    found: list[str] = re.findall(r"`(uv run [^`]*python -m tools\.native build)`", README)
    assert found == [native.COMMAND], "the README's build command is tools.native's"
    return found[0]


def test_the_build_commands_dependencies_resolve_in_a_fresh_clone(tmp_path: Path) -> None:
    # A fresh environment, as a clone's first ``uv run`` makes (linked to uv's cache, so
    # quick): the README's flags must bring what the build imports; ``check`` is the build's
    # own first step, without the compiling.
    command = _build_command().removesuffix(" build") + " check"
    env = _uv_env(UV_PROJECT_ENVIRONMENT=str(tmp_path / "venv"), UV_LINK_MODE="symlink")
    done = _run(command, env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ready to build" in done.stdout
    without = _run(
        command.replace(" --group native", ""),
        env | {"UV_PROJECT_ENVIRONMENT": str(tmp_path / "bare")},
    )
    assert without.returncode != 0
    assert native.COMMAND in without.stderr, "the build says what to run instead"
