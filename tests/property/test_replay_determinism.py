"""Properties of ``referee replay``: the same log always gives the same bytes.

EVENTS.md: "The same input log always gives the same verdicts, byte for byte", for any
number of workers, and games may be interleaved "in any order that keeps each game's own
order".
"""

from __future__ import annotations

import io
import json
import random
import tempfile
from collections import defaultdict
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.simulate import RULE_CHOICES, SimulationOptions, simulate
from referee.usecases.replay import replay

options = st.builds(
    SimulationOptions,
    games=st.integers(1, 25),
    seed=st.integers(0, 10**6),
    rules=st.sampled_from(RULE_CHOICES),
    layout=st.sampled_from((None, None, "line", "spinner", "trains")),
    teams=st.booleans(),
    foul_rate=st.sampled_from((0.0, 0.05, 0.3)),
    bad_rate=st.sampled_from((0.0, 0.05, 0.2)),
    duplicate_rate=st.sampled_from((0.0, 0.05, 0.2)),
    concurrency=st.integers(1, 10),
    max_rounds=st.integers(1, 3),
)


def run(log: Path, workers: int) -> tuple[bytes, bytes]:
    verdicts, rejected = io.BytesIO(), io.BytesIO()
    replay(log, verdicts, rejected, workers=workers)
    return verdicts.getvalue(), rejected.getvalue()


def write_log(directory: Path, lines: list[bytes], name: str = "log.jsonl") -> Path:
    log = directory / name
    log.write_bytes(b"".join(line + b"\n" for line in lines))
    return log


@settings(max_examples=12, deadline=None)
@given(options=options)
def test_replays_are_identical_for_any_number_of_workers(options: SimulationOptions) -> None:
    lines = [line for _, line in simulate(options)]
    with tempfile.TemporaryDirectory() as tmp:
        log = write_log(Path(tmp), lines)
        once = run(log, workers=1)
        assert run(log, workers=1) == once
        assert run(log, workers=2) == once
        assert run(log, workers=3) == once
    verdicts, rejected = once
    assert verdicts.count(b"\n") == len(verdicts.splitlines())
    if options.bad_rate == 0.0 and options.duplicate_rate == 0.0:
        assert rejected == b""


@settings(max_examples=25, deadline=None)
@given(options=options, shuffle_seed=st.integers(0, 2**32))
def test_each_games_verdicts_do_not_depend_on_the_interleaving(
    options: SimulationOptions, shuffle_seed: int
) -> None:
    keyed = list(simulate(options))
    by_game: dict[str, list[bytes]] = defaultdict(list)
    for game_id, line in keyed:
        by_game[game_id].append(line)
    # another interleaving that keeps every game's own order
    rng = random.Random(shuffle_seed)
    queues = {g: list(reversed(ls)) for g, ls in by_game.items()}
    reshuffled: list[bytes] = []
    while queues:
        game = rng.choice(sorted(queues))
        reshuffled.append(queues[game].pop())
        if not queues[game]:
            del queues[game]
    with tempfile.TemporaryDirectory() as tmp:
        first = run(write_log(Path(tmp), [line for _, line in keyed], "a.jsonl"), workers=1)
        second = run(write_log(Path(tmp), reshuffled, "b.jsonl"), workers=1)
    assert per_game(first[0]) == per_game(second[0])
    assert sorted(reasons(first[1])) == sorted(reasons(second[1]))


def per_game(verdicts: bytes) -> dict[str, list[bytes]]:
    games: dict[str, list[bytes]] = defaultdict(list)
    for line in verdicts.splitlines():
        games[json.loads(line)["game_id"]].append(line)
    return dict(games)


def reasons(rejected: bytes) -> list[tuple[str, str, str]]:
    out = []
    for line in rejected.splitlines():
        record = json.loads(line)
        out.append((str(record["game_id"]), record["reason"], record["raw"]))
    return out
