"""The built wheel is a referee on its own: installed in a fresh environment, away from the
source tree, it migrates a database and runs its demo."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
        timeout=600,
    )
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def test_the_installed_wheel_migrates_and_runs_the_demo_without_the_source_tree(
    tmp_path: Path, empty_database: str
) -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("uv is not on PATH: scripts/test installs it")
    dist = tmp_path / "dist"
    run(uv, "build", "--wheel", "--out-dir", dist, cwd=ROOT)
    (wheel,) = dist.glob("referee-*.whl")
    venv = tmp_path / "venv"
    run(uv, "venv", "--python", sys.executable, venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    run(uv, "pip", "install", "--python", python, f"{wheel}[embedded]", cwd=tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    clean = {"PYTHONPATH": "", "VIRTUAL_ENV": str(venv)}
    referee = venv / "bin" / "referee"

    out = run(referee, "migrate", "--database", empty_database, cwd=elsewhere, env=clean)
    assert "newest revision" in out
    demo = run(referee, "demo", cwd=elsewhere, env=clean)
    assert "audit passed" in demo
    assert "verdicts: 71 stored, 71 re-derived" in demo
    located = run(
        python, "-c", "import referee, sys; print(referee.__file__)", cwd=elsewhere, env=clean
    )
    assert str(ROOT) not in located, "the wheel, not the source tree, was run"
