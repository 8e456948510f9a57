"""1. In-memory replay: ``referee replay`` of the main log against a typed-decode ceiling."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import msgspec

from bench.context import Context, say
from bench.process import parse_speed, run_cli
from referee.contracts.verdicts import encode_canonical
from referee.contracts.wire import InputEvent
from referee.processing.referee import Referee


def decode_ceiling(log: Path) -> tuple[int, float]:
    """msgspec-decodes (typed, validating) every line of the log; returns (lines, seconds)."""
    decoder = msgspec.json.Decoder(InputEvent)
    decode = decoder.decode
    started = time.perf_counter()
    n = 0
    with log.open("rb") as f:
        for line in f:
            decode(line)
            n += 1
    return n, time.perf_counter() - started


def stage_breakdown(log: Path, repeats: int) -> list[tuple[str, float]]:
    """Seconds per line for cumulative stages of the in-memory referee (one process, best of
    ``repeats`` passes each)."""
    from referee.contracts.parse import parse_event
    from referee.contracts.rejection import FileSource

    lines = log.read_bytes().splitlines()
    n = len(lines)
    decoder = msgspec.json.Decoder(InputEvent)
    out: list[tuple[str, float]] = []
    # A simulated log holds only well-formed events (its fouls break rules, not the wire), so
    # every line parses; typed once here so that the timed loop does no more than before.
    parse_valid = cast("Callable[[bytes], InputEvent]", parse_event)

    def timed(label: str, fn: Callable[[], None]) -> None:
        best = math.inf
        for _ in range(repeats):
            started = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - started)
        out.append((label, best / n))

    def decode_only() -> None:
        for line in lines:
            decoder.decode(line)

    def parse_only() -> None:
        for line in lines:
            parse_event(line)

    def parse_domain() -> None:
        for line in lines:
            parse_valid(line).to_domain()

    def referee_only() -> None:
        ref = Referee()
        name = str(log)
        for number, line in enumerate(lines, 1):
            ref.process(line, FileSource(name, number))

    def referee_encode() -> None:
        ref = Referee()
        name = str(log)
        for number, line in enumerate(lines, 1):
            for v in ref.process(line, FileSource(name, number)).verdicts:
                encode_canonical(v)

    timed("typed msgspec decode (the ceiling)", decode_only)
    timed("+ edge checks (`parse_event`)", parse_only)
    timed("+ wire -> domain conversion", parse_domain)
    timed("full `Referee.process` (sequencing, dedupe, judge)", referee_only)
    timed("+ canonical verdict encoding", referee_encode)
    return out


async def measure(ctx: Context, log: Path, key: str) -> None:
    """Replays ``log`` with one and two workers and its ceiling; results under ``key``."""
    say(f"1. in-memory replay ({key}: {log.name})")
    repeats = ctx.sizes.repeats
    results: dict[str, Any] = {}
    for workers in (1, 2):
        runs = []
        for _ in range(repeats):
            wall, err = run_cli(
                ["replay", str(log), "--output", "/dev/null", "--workers", str(workers)]
            )
            records, seconds = parse_speed(err)
            runs.append((records / seconds, records / wall, seconds, wall))
        best = max(runs, key=lambda r: r[0])
        results[f"workers{workers}"] = {
            "internal_eps": best[0],
            "wall_eps": max(r[1] for r in runs),
            "seconds": best[2],
            "wall": min(r[3] for r in runs),
            "all": [r[0] for r in runs],
        }
        say(f"   --workers {workers}: {best[0]:,.0f} events/s (best of {repeats})")
    ceilings = [decode_ceiling(log) for _ in range(repeats)]
    lines, seconds = min(ceilings, key=lambda c: c[1])
    results["ceiling_eps"] = lines / seconds
    results["events"] = lines
    say(f"   ceiling (typed decode): {lines / seconds:,.0f} lines/s")
    results["stages"] = stage_breakdown(log, repeats)
    ctx.results[key] = results
    ctx.note(f"uv run referee replay {log} --output /dev/null --workers 1   # and --workers 2")


async def run(ctx: Context) -> None:
    """The in-memory replay of the main (edition 1) log."""
    await measure(ctx, ctx.shared_logs().main, "replay")
