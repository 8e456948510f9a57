"""Earlier releases of the referee, built from their commits for the upgrade tests.

``EARLIER`` names, for every schema revision this release migrates from, the last commit
whose migration head is that revision (the parent of the commit that added the next
migration file, found with ``git log --diff-filter=A -- migrations/versions/``; at 0010,
release 0.3.0), and the log that commit can referee. :func:`build` extracts a commit's
tree (``git archive``) and installs its own locked environment in its ``.venv`` (``uv sync
--frozen``), so that it runs exactly the code and the dependencies that revision shipped
with; ``uv`` caches the wheels, so a second build of the same lock is a matter of links.
"""

from __future__ import annotations

import os
import subprocess
import tarfile
import threading
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from alembic.script import ScriptDirectory

from referee.store.database import MIGRATIONS

ROOT = Path(__file__).resolve().parents[1]

EDITION1 = ("--rules", "edition1")
"""Games the referee judged before edition 2 (trains, spinners, partnerships, penalty
scoring) was merged at dec6ed4: only edition 1's rules (the same seed gives edition 1's
log, byte for byte)."""


@dataclass(frozen=True)
class Release:
    """The last commit at one schema revision, and what it can referee."""

    schema: str
    commit: str
    what: str
    simulate: tuple[str, ...] = ()
    """``referee simulate`` flags of a log this commit judges as this release does."""
    last: bool = True
    """Whether it is the last commit at its revision (the parent of the commit that added
    the next migration); False for a release chosen at its revision instead."""


EARLIER: tuple[Release, ...] = (
    Release(
        "0001",
        "38bda69d87ab99c2ab1c77b3ec52a700fe93ca82",
        "the first store (edition 1), before the relay's checkpoints (0002)",
        EDITION1,
    ),
    Release(
        "0002",
        "8eef4f5898b45f2070151ec1457af1ddd81b289b",
        "edition 1's referee, before the widened columns of 0003",
        EDITION1,
    ),
    Release(
        "0003",
        "41a881ed85be2b34e71ae73932174ade2a0acc2e",
        "bigint seq and bytea keys, still edition 1 (edition 2 was merged after 0004)",
        EDITION1,
    ),
    Release(
        "0004",
        "10b29cb288a4f6439021bf2959a77b5c3f6c096a",
        "the reader role; every family of edition 2",
    ),
    Release(
        "0005",
        "9cc1b0f5e458782ebaf8c1e73d8f9212b81a51fe",
        "alembic_version readable by both roles",
    ),
    Release("0006", "1b16d607e1ea134cc48286e20a272801580cab2c", "the fence function"),
    Release(
        "0007",
        "d45172308a390cd4adf94af2e8eeac77eab1b903",
        "release 0.1.0 (tag v0.1.0): the state as text, one global relay",
    ),
    Release(
        "0008",
        "4e1809589ebabad7b8ffa04219e588325fcbc7c3",
        "release 0.2.0 before rules revisions: the outbox per input partition",
    ),
    Release(
        "0009",
        "612e0c3b541f950cd3facab44869a8b4011e3d4a",
        "0.2.0 after its tag (v0.2.0, 1b2a141, is at 0009 too): games pinned to their rules "
        "revision",
    ),
    # the release at 0010, rather than the last commit there: 0.4.0's development went on
    # at 0010 (a rolling upgrade from 0.3.0, docs/releases.md) until the next migration
    Release(
        "0010",
        "bccb1eb3f30dbdc1a444cf924135e1c86bd1b359",
        "release 0.3.0 (tag v0.3.0): the time partitions",
        last=False,
    ),
    Release(
        "0011",
        "d2966b64530e798e5118a487f8b5a45d3cf2c8b9",
        "release 0.4.1 and after: each journal row names its writer; partitions made in place",
    ),
)

BY_SCHEMA = {release.schema: release for release in EARLIER}


def newest_schema() -> str:
    """The head revision of this release's migrations, as Alembic computes it from the
    scripts in ``migrations/`` (whatever revision main has reached)."""
    head = ScriptDirectory(str(MIGRATIONS)).get_current_head()
    assert head is not None, "the migrations have no single head"
    return head


def build(commit: str, tree: Path) -> Path:
    """The tree of ``commit`` in ``tree`` with its locked environment in ``tree/.venv``.

    ``--no-dev``: the service's dependencies only; some early locks' development groups no
    longer install on this Python (and the tests do not need them).
    """
    tree.mkdir(parents=True, exist_ok=True)
    archive = tree / "source.tar"
    with archive.open("wb") as out:
        subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", commit], check=True, stdout=out
        )
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    archive.unlink()
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    }
    done = subprocess.run(
        ["uv", "sync", "--frozen", "--quiet", "--no-dev"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"uv sync of {commit} failed:\n{done.stderr}")
    return tree


def python_of(tree: Path) -> str:
    """The interpreter of a built tree's environment."""
    return str(tree / ".venv" / "bin" / "python")


def version_of(tree: Path) -> str:
    """The package version a built tree declares (what its ``GameStarted`` rows record)."""
    with (tree / "pyproject.toml").open("rb") as f:
        version: str = tomllib.load(f)["project"]["version"]
    return version


class Builds:
    """Builds each commit once in a session (the session fixture ``earlier_release``)."""

    def __init__(self, directory: Callable[[str], Path]) -> None:
        self._directory = directory
        self._built: dict[str, Path] = {}
        self._lock = threading.Lock()

    def __call__(self, commit: str) -> Path:
        with self._lock:
            if commit not in self._built:
                self._built[commit] = build(commit, self._directory(f"release-{commit[:7]}"))
            return self._built[commit]
