"""Refuses a compiled tree whose sources changed after the build (tools/native.py).

A compiled module (``judge.cpython-311-*.so``) shadows its ``judge.py``: Python's import system
tries extension modules first. Were ``judge.py`` edited after the build, the referee would run
the old rules while the source shows the new ones. The build writes ``referee/_native.json``
with each compiled source's SHA-256; ``import referee`` compares them (19 small files, well
under a millisecond) and stops with the remedy when one differs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

MANIFEST = "_native.json"


class StaleNativeBuildError(ImportError):
    """A compiled module's source changed after the build."""


def stale_sources(package: Path) -> list[str]:
    """The compiled sources (relative to the tree) whose bytes differ from the build's."""
    manifest = package / MANIFEST
    try:
        recorded = json.loads(manifest.read_text())["sources"]
    except FileNotFoundError:
        return []
    tree = package.parent
    stale = []
    for source, sha in sorted(recorded.items()):
        try:
            now = hashlib.sha256((tree / source).read_bytes()).hexdigest()
        except FileNotFoundError:
            now = ""
        if now != sha:
            stale.append(source)
    return stale


def check(package: Path) -> None:
    stale = stale_sources(package)
    if stale:
        tree = package.parent
        raise StaleNativeBuildError(
            f"{', '.join(stale)} changed after {tree} was compiled: its compiled modules would "
            f"run the old code. Run `uv run python -m tools.native build` to compile again, or "
            f"`uv run python -m tools.native clean` to run interpreted."
        )
