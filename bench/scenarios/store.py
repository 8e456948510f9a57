"""2. Store replay into PostgreSQL against a raw COPY ceiling."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import asyncpg
import msgspec

from bench.context import Context, say
from bench.journal import ceiling_row
from bench.process import parse_speed, run_cli
from bench.services import fresh_database
from referee.contracts.wire import EnvelopeProbe
from referee.processing.rows import JOURNAL_COLUMNS


async def copy_ceiling_file(url: str, log: Path, batch_size: int) -> tuple[int, float]:
    """COPYs the raw lines into a fresh ``journal`` (same table and indexes), a commit per
    batch; the indexed keys are read with the cheapest probe decode. (lines, seconds)"""
    probe = msgspec.json.Decoder(EnvelopeProbe)
    conn = await asyncpg.connect(url)
    topic = f"file:{log}"
    try:
        started = time.perf_counter()
        batch: list[tuple[Any, ...]] = []
        n = 0

        async def flush() -> None:
            async with conn.transaction():
                await conn.copy_records_to_table("journal", records=batch, columns=JOURNAL_COLUMNS)
            batch.clear()

        with log.open("rb") as f:
            for number, line in enumerate(f, 1):
                n += 1
                batch.append(ceiling_row(n, topic, 0, number, line.rstrip(b"\n"), probe))
                if len(batch) >= batch_size:
                    await flush()
        if batch:
            await flush()
        return n, time.perf_counter() - started
    finally:
        await conn.close()


async def run(ctx: Context) -> None:
    """``referee replay --database`` of the main log into a fresh database, against the raw
    COPY ceiling, alternating (referee, ceiling, referee, ...), best of ``repeats`` each, as
    the in-memory replay is measured: one run of either moves too much on a shared machine
    (bench/notes.md)."""
    say("2. store replay")
    log = ctx.shared_logs().main
    batch = 2000
    runs: list[tuple[int, float, float]] = []
    ceilings: list[float] = []
    for attempt in range(ctx.sizes.repeats):
        url = await fresh_database(ctx, f"store{attempt}", migrate=False)
        wall, err = run_cli(
            [
                "replay",
                str(log),
                "--database",
                url,
                "--batch-size",
                str(batch),
                "--output",
                "/dev/null",
            ],
            timeout=900,
        )
        records, seconds = parse_speed(err)
        runs.append((records, seconds, wall))
        say(f"   referee: {records / seconds:,.0f} events/s ({seconds:.1f} s, wall {wall:.1f} s)")
        ceil_url = await fresh_database(ctx, f"storeceil{attempt}", migrate=True)
        lines, ceil_seconds = await copy_ceiling_file(ceil_url, log, batch)
        ceilings.append(lines / ceil_seconds)
        say(f"   ceiling (COPY raw): {lines / ceil_seconds:,.0f} lines/s")
    records, seconds, wall = min(runs, key=lambda r: r[1])
    ctx.results["store"] = {
        "events": records,
        "eps": records / seconds,
        "seconds": seconds,
        "wall": wall,
        "wall_eps": records / wall,
        "ceiling_eps": max(ceilings),
        "all_eps": [r / s for r, s, _ in runs],
        "all_ceiling_eps": ceilings,
        "batch": batch,
    }
    ctx.note(f"uv run referee replay {log} --database URL --batch-size {batch} --output /dev/null")
