"""The compiled build: the referee's hot modules compiled to C extensions by mypyc.

    python -m tools.native build [TREE]   compile in place in TREE (default: this checkout)
    python -m tools.native copy DEST      copy this checkout's ``referee`` to DEST, compile there
    python -m tools.native clean [TREE]   remove the compiled modules and their manifest
    python -m tools.native status [TREE]  say which modules are compiled, and whether any is stale
    python -m tools.native check          say whether this environment can build

The build needs mypyc and setuptools, the ``native`` dependency group, and a C compiler:
from a clone, ``uv run --group native python -m tools.native build`` (the README's command).

The same ``.py`` files run interpreted or compiled: mypyc compiles the type-annotated code
(checked by ``mypy --strict`` anyway) to C that calls its own functions and reads its own
classes' attributes directly. The service image compiles (Dockerfile), the benchmark measures
the compiled build (bench/run.py), and the suite checks that both give the same bytes
(tests/packaging/test_native.py). Why, and what it gained: docs/design.md, "The compiled build".

A compiled module shadows its ``.py`` (Python's import system tries extension modules first),
so the build writes ``referee/_native.json`` with each source's hash, and ``import referee``
refuses to run a tree where a compiled source has changed since (``referee/_native_guard.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

NATIVE_MODULES: tuple[str, ...] = (
    # the domain core: every rule, the layouts, the state (block.py stays interpreted:
    # mypyc cannot compile its exception class deriving from AssertionError)
    "referee/domain/errors.py",
    "referee/domain/events.py",
    "referee/domain/fouls.py",
    "referee/domain/judge.py",
    "referee/domain/layout.py",
    "referee/domain/line.py",
    "referee/domain/options.py",
    "referee/domain/play_scoring.py",
    "referee/domain/rules.py",
    "referee/domain/scoring.py",
    "referee/domain/spinner.py",
    "referee/domain/state.py",
    "referee/domain/teams.py",
    "referee/domain/tiles.py",
    "referee/domain/trains.py",
    "referee/domain/verdicts.py",
    # the referee (decode, judge, encode per record), the parser and the state codec
    "referee/processing/referee.py",
    "referee/contracts/parse.py",
    "referee/contracts/state_codec.py",
)
"""The compiled modules, relative to the tree (the profile's hot path: bench/notes.md)."""

GROUP = "referee._native"
"""mypyc's shared library: ``referee/_native__mypyc.*.so``, inside the package."""

MANIFEST = "referee/_native.json"

TOOLS = ("mypyc", "setuptools")
"""What the build imports beyond the referee's dependencies: the ``native`` dependency group."""

COMMAND = "uv run --group native python -m tools.native build"
"""The build from a clone, with its tools (the README's command)."""

# mypy as mypyc needs it: the project's strictness is checked by `mypy` in the suite; here
# only the types matter (third-party packages without stubs are opaque objects).
MYPY_CONFIG = "[mypy]\npython_version = 3.11\nignore_missing_imports = True\n"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compiled_files(tree: Path) -> list[Path]:
    """Every C extension under ``tree/referee`` (the build's and any left behind)."""
    return sorted((tree / "referee").rglob("*.so"))


def clean(tree: Path) -> int:
    """Removes the compiled modules and the manifest; returns how many files went."""
    gone = 0
    for path in [*compiled_files(tree), tree / MANIFEST]:
        if path.exists():
            path.unlink()
            gone += 1
    return gone


def missing() -> list[str]:
    """Returns what the build needs that this environment lacks: its Python tools, a C
    compiler."""
    lacking = [name for name in TOOLS if importlib.util.find_spec(name) is None]
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        lacking.append(f"a C compiler ({compiler})")
    return lacking


def require_tools() -> None:
    """Stops with what to do when the build's tools are missing."""
    lacking = missing()
    if lacking:
        raise SystemExit(
            f"the compiled build needs {', '.join(lacking)}: `{COMMAND}` brings mypyc and "
            "setuptools (the native dependency group); the C compiler is the system's (gcc)"
        )


def build(tree: Path, jobs: int | None = None) -> dict[str, object]:
    """Compiles ``NATIVE_MODULES`` in place in ``tree``; returns the manifest written."""
    require_tools()
    import mypy.version

    clean(tree)
    with tempfile.TemporaryDirectory(prefix="referee-native-") as tmp:
        config = Path(tmp) / "mypy.ini"
        config.write_text(MYPY_CONFIG)
        setup = Path(tmp) / "setup.py"
        setup.write_text(
            "import sys\n"
            "from setuptools import setup\n"
            "from mypyc.build import mypycify\n"
            f"modules = {list(NATIVE_MODULES)!r}\n"
            "setup(\n"
            "    name='referee-native',\n"
            "    packages=[],\n"
            "    py_modules=[],\n"
            f"    ext_modules=mypycify(['--config-file', {str(config)!r}, *modules],\n"
            f"                         opt_level='3', group_name={GROUP!r}),\n"
            ")\n"
        )
        command = [
            sys.executable,
            str(setup),
            "--quiet",
            "build_ext",
            "--inplace",
            "--build-temp",
            str(Path(tmp) / "temp"),
            "--parallel",
            str(jobs or os.cpu_count() or 1),
        ]
        # setuptools reads the project's pyproject.toml from the working directory; an
        # empty directory of the build's own keeps it to the setup above.
        env = {**os.environ, "PYTHONSAFEPATH": "1"}
        done = subprocess.run(
            command, cwd=tree, env=env, capture_output=True, text=True, check=False
        )
        shutil.rmtree(tree / "build", ignore_errors=True)
        if done.returncode != 0:
            raise SystemExit(
                f"mypyc build failed ({done.returncode}):\n{done.stdout[-4000:]}\n"
                f"{done.stderr[-4000:]}"
            )
    built = compiled_files(tree)
    expected = len(NATIVE_MODULES) + 1  # and the shared library
    if len(built) != expected:
        raise SystemExit(f"mypyc built {len(built)} extensions, expected {expected}: {built}")
    manifest: dict[str, object] = {
        "mypy": mypy.version.__version__,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "sources": {module: digest(tree / module) for module in NATIVE_MODULES},
    }
    (tree / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def copy(dest: Path) -> Path:
    """Copies this checkout's ``referee``, ``migrations`` and ``pyproject.toml`` to ``dest``
    (without compiled files or bytecode) and compiles there; returns ``dest``."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "_native.json")
    for name in ("referee", "migrations"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")
    build(dest)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", "referee", "migrations"],
        cwd=dest,
        check=True,
        capture_output=True,
    )
    return dest


def status(tree: Path) -> str:
    from referee._native_guard import stale_sources

    built = compiled_files(tree)
    if not built:
        return f"{tree}: interpreted (no compiled modules)"
    stale = stale_sources(tree / "referee")
    if stale:
        return f"{tree}: compiled, STALE: {', '.join(stale)} changed since the build"
    return f"{tree}: compiled ({len(built) - 1} modules), up to date"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.native", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("build", "clean", "status"):
        sub.add_parser(name).add_argument("tree", nargs="?", type=Path, default=ROOT)
    sub.add_parser("copy").add_argument("dest", type=Path)
    sub.add_parser("check")
    args = parser.parse_args(argv)
    if args.command == "check":
        require_tools()
        print(f"ready to build: {', '.join(TOOLS)} and a C compiler are installed")
    elif args.command == "build":
        manifest = build(args.tree.resolve())
        sources = manifest["sources"]
        assert isinstance(sources, dict)
        print(f"compiled {len(sources)} modules in {args.tree} (mypyc {manifest['mypy']})")
    elif args.command == "copy":
        dest = copy(args.dest.resolve())
        print(f"compiled tree: {dest}")
    elif args.command == "clean":
        print(f"removed {clean(args.tree.resolve())} files from {args.tree}")
    else:
        print(status(args.tree.resolve()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
