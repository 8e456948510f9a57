"""The frozen corpus: the hashes of each rules revision's verdicts on a fixed set of logs.

A rules revision is a promise: the same input always gives the same verdicts and rejections,
byte for byte, in every later release (docs/rules.md, "Rules revisions"). The corpus is the
golden logs of ``tests/golden/`` and a simulated log of every family (``referee simulate``
with a fixed seed; the default mix, each layout, teams, each scoring during play, penalty
scoring and edition 1's rules), replayed under each revision. The simulated logs are
committed (``tests/corpus/logs/``, xz), not made again at each run: the simulator plays by
the judge and may change, and a revision's corpus must stay the same bytes for ever.
``revision-N.json`` keeps, per log, the SHA-256 of the log (so an edited log is told from a
change of the rules), of its verdict lines and of its rejection lines, and a short hash of
each game's verdicts, so that a difference names the games it touches.

    uv run --frozen python -m tests.corpus.corpus freeze N   # a NEW revision's file, once
    uv run --frozen python -m tests.corpus.corpus logs       # the simulated logs, once

A revision's file is written once, when the revision is added, and never again: a failing
check means the judge of an existing revision changed, which must instead be a new revision.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from referee.simulate import SimulationOptions, simulate
from referee.usecases.replay import replay

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
GOLDEN = ROOT / "tests" / "golden"
LOGS = HERE / "logs"

GAMES = 120
"""Games of each simulated family: every family's log replays in well under a second."""

FAMILIES: dict[str, SimulationOptions] = {
    "mix": SimulationOptions(games=GAMES, seed=37, bad_rate=0.01, duplicate_rate=0.01),
    "edition1": SimulationOptions(games=GAMES, seed=37, rules="edition1"),
    "line": SimulationOptions(games=GAMES, seed=37, layout="line"),
    "spinner": SimulationOptions(games=GAMES, seed=37, layout="spinner"),
    "trains": SimulationOptions(games=GAMES, seed=37, layout="trains"),
    "teams": SimulationOptions(games=GAMES, seed=37, teams=True),
    # scoring during play with its layout given: forced alone, the simulator may draw trains,
    # which cannot go with it, and stops (the mix draws it only where it can go)
    "fives": SimulationOptions(games=GAMES, seed=37, play_scoring="fives", layout="spinner"),
    "threes": SimulationOptions(games=GAMES, seed=37, play_scoring="threes", layout="line"),
    "fives_and_threes": SimulationOptions(
        games=GAMES, seed=37, play_scoring="fives_and_threes", layout="spinner"
    ),
    "penalty": SimulationOptions(games=GAMES, seed=37, scoring="penalty"),
}
"""The simulated logs, by family: the ``referee simulate`` options that made each committed
log (``write_logs``; the seed is fixed)."""


def log_file(family: str) -> Path:
    return LOGS / f"{family}.jsonl.xz"


def simulated_log(family: str) -> bytes:
    """The committed simulated log of ``family``."""
    return lzma.decompress(log_file(family).read_bytes())


def write_logs() -> list[Path]:
    """Writes the simulated log of every family that has none (never rewrites one)."""
    LOGS.mkdir(exist_ok=True)
    written = []
    for family, options in FAMILIES.items():
        path = log_file(family)
        if path.exists():
            continue
        log = b"".join(line + b"\n" for _, line in simulate(options))
        path.write_bytes(lzma.compress(log, preset=9))
        written.append(path)
    return written


def corpus_file(revision: int) -> Path:
    return HERE / f"revision-{revision}.json"


def logs() -> Iterator[tuple[str, bytes]]:
    """Every log of the corpus: (name, bytes)."""
    for path in sorted(GOLDEN.glob("*.jsonl")):
        if ".verdicts." not in path.name:
            yield f"golden/{path.name}", path.read_bytes()
    for family in FAMILIES:
        yield f"simulated/{family}", simulated_log(family)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fingerprint(log: bytes, revision: int) -> dict[str, object]:
    """The hashes of what ``revision`` gives on ``log``."""
    verdicts, rejected = io.BytesIO(), io.BytesIO()
    replay(io.BytesIO(log), verdicts, rejected, name="corpus", rules_revision=revision)
    by_game: dict[str, list[bytes]] = defaultdict(list)
    lines = verdicts.getvalue().splitlines()
    for line in lines:
        by_game[json.loads(line)["game_id"]].append(line)
    return {
        "log_sha256": _sha(log),
        "verdicts_sha256": _sha(verdicts.getvalue()),
        "rejections_sha256": _sha(rejected.getvalue()),
        "verdicts": len(lines),
        "rejections": len(rejected.getvalue().splitlines()),
        "games": {g: _sha(b"\n".join(v))[:16] for g, v in sorted(by_game.items())},
    }


def derive(revision: int) -> dict[str, dict[str, object]]:
    """The corpus of ``revision`` as this code gives it."""
    return {name: fingerprint(log, revision) for name, log in logs()}


@dataclass
class Check:
    """What re-deriving a revision's corpus found."""

    revision: int
    differences: list[str] = field(default_factory=list)
    games: list[tuple[str, str]] = field(default_factory=list)
    """(log, game) of every game whose verdicts changed."""

    @property
    def passed(self) -> bool:
        return not self.differences


def check(revision: int) -> Check:
    """Re-derives ``revision``'s corpus and compares it with the frozen file."""
    frozen: dict[str, dict[str, object]] = json.loads(corpus_file(revision).read_text())["logs"]
    found = Check(revision)
    now = derive(revision)
    for name in sorted(set(frozen) | set(now)):
        want, have = frozen.get(name), now.get(name)
        if want is None or have is None:
            where = "the code" if want is None else "the file"
            found.differences.append(f"{name}: in {where} only")
            continue
        if want["log_sha256"] != have["log_sha256"]:
            found.differences.append(
                f"{name}: the log itself changed (a golden file or a committed log edited: a "
                "revision's corpus is the same bytes for ever)"
            )
            continue
        for key in ("verdicts_sha256", "rejections_sha256"):
            if want[key] != have[key]:
                found.differences.append(f"{name}: {key} differs under revision {revision}")
        want_games = want["games"]
        have_games = have["games"]
        assert isinstance(want_games, dict)
        assert isinstance(have_games, dict)
        for game in sorted(set(want_games) | set(have_games)):
            if want_games.get(game) != have_games.get(game):
                found.games.append((name, game))
    if found.games:
        shown = ", ".join(f"{log}: {game}" for log, game in found.games[:10])
        found.differences.append(f"games whose verdicts changed: {shown}")
    return found


def freeze(revision: int) -> Path:
    """Writes a new revision's corpus file (refuses to overwrite a frozen one)."""
    path = corpus_file(revision)
    if path.exists():
        raise SystemExit(f"{path} is frozen: a changed verdict is a new rules revision")
    document = {
        "revision": revision,
        "about": "tests/corpus/corpus.py: hashes of this rules revision's verdicts; frozen",
        "logs": derive(revision),
    }
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    return path


if __name__ == "__main__":
    if sys.argv[1:] == ["logs"]:
        print("\n".join(str(p) for p in write_logs()) or "every log is there")
    elif len(sys.argv) == 3 and sys.argv[1] == "freeze":
        print(freeze(int(sys.argv[2])))
    else:
        raise SystemExit("usage: python -m tests.corpus.corpus freeze N | logs")
