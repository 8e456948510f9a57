"""The compiled build (tools/native.py): it compiles what it lists, it gives the same bytes as
the interpreted referee on every log the suite keeps, the rules' tests pass on it, and a
source edited after the build is refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.native import NATIVE_MODULES, ROOT, copy

pytestmark = pytest.mark.slow

LOGS = sorted(
    [
        *(ROOT / "examples").glob("*.jsonl"),
        *(p for p in (ROOT / "tests" / "golden").glob("*.jsonl") if ".verdicts." not in p.name),
        *(p for p in (ROOT / "tests" / "hostile").glob("*.jsonl") if ".expected." not in p.name),
    ]
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy(tmp_path_factory.mktemp("native") / "tree")


def env_for(tree: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    if tree is not None:
        # PYTHONSAFEPATH: the working directory (this checkout) must not come first
        env |= {"PYTHONPATH": str(tree), "PYTHONSAFEPATH": "1"}
    return env


def python(tree: Path | None, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, *args], env=env_for(tree), capture_output=True, check=False, cwd="/"
    )


def test_every_listed_module_runs_compiled(tree: Path) -> None:
    modules = [m.removesuffix(".py").replace("/", ".") for m in NATIVE_MODULES]
    code = (
        f"import importlib\nfor m in {modules!r}:\n    print(importlib.import_module(m).__file__)\n"
    )
    done = python(tree, "-c", code)
    assert done.returncode == 0, done.stderr.decode()
    files = done.stdout.decode().split()
    assert len(files) == len(modules)
    assert all(f.startswith(str(tree)) and f.endswith(".so") for f in files), files


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Logs of every family, with fouls, bad lines and duplicates."""
    out = tmp_path_factory.mktemp("simulated")
    logs = []
    for name, args in {
        "edition1": ["--rules", "edition1", "--games", "150"],
        "random": ["--rules", "random", "--games", "150", "--bad-rate", "0.02"],
        "trains": ["--layout", "trains", "--games", "60", "--duplicate-rate", "0.02"],
        "fives": ["--layout", "spinner", "--play-scoring", "fives", "--teams", "--games", "60"],
    }.items():
        log = out / f"{name}.jsonl"
        done = python(None, "-m", "referee", "simulate", "--seed", "5", *args, "--output", str(log))
        assert done.returncode == 0, done.stderr.decode()
        logs.append(log)
    return logs


def replay(tree: Path | None, log: Path, out: Path) -> tuple[bytes, bytes]:
    verdicts, rejected = out / "verdicts.jsonl", out / "rejected.jsonl"
    out.mkdir(parents=True, exist_ok=True)
    done = python(
        tree, "-m", "referee", "replay", str(log), "--workers", "1",
        "--output", str(verdicts), "--rejected", str(rejected),
    )  # fmt: skip
    # exit 0, or the documented exit code of a log with rejected lines
    assert done.returncode in (0, 3), done.stderr.decode()[-2000:]
    return verdicts.read_bytes(), rejected.read_bytes()


def test_compiled_and_interpreted_give_the_same_bytes(
    tree: Path, simulated: list[Path], tmp_path: Path
) -> None:
    assert len(LOGS) >= 10
    compared = 0
    for log in [*LOGS, *simulated]:
        interpreted = replay(None, log, tmp_path / "i" / log.stem)
        compiled = replay(tree, log, tmp_path / "c" / log.stem)
        assert compiled == interpreted, f"{log}: the compiled build differs"
        compared += bool(interpreted[0] or interpreted[1])
    assert compared == len(LOGS) + len(simulated)


def test_the_rules_tests_pass_on_the_compiled_build(tree: Path) -> None:
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            # this checkout after the compiled tree on the path, so `referee` is the tree's
            "-o", "pythonpath=", "--import-mode=append",
            "-m", "not postgres and not kafka and not peer and not reliability",
            "tests/unit/domain", "tests/unit/contracts", "tests/unit/processing",
            "tests/golden", "tests/hostile", "tests/property", "tests/compat",
        ],
        env=env_for(tree), capture_output=True, check=False, cwd=ROOT,
    )  # fmt: skip
    out = done.stdout.decode()
    assert done.returncode == 0, out[-4000:]
    assert " passed" in out


def test_a_source_edited_after_the_build_is_refused(tree: Path) -> None:
    source = tree / "referee" / "domain" / "judge.py"
    original = source.read_bytes()
    try:
        source.write_bytes(original + b"\n# edited\n")
        done = python(tree, "-c", "import referee")
        assert done.returncode != 0
        assert b"referee/domain/judge.py changed after" in done.stderr
    finally:
        source.write_bytes(original)
    assert python(tree, "-c", "import referee").returncode == 0
