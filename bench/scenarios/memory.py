"""5. Peak memory: ``referee serve`` holding many open games in its hot cache."""

from __future__ import annotations

import asyncio
import random
import time

import asyncpg

from bench.context import Context, say
from bench.process import proc_status, start_serve, stop_process, tail
from bench.services import fresh_database, fresh_topics, make_topics
from referee.simulate import SimulationOptions, game_log
from tools.testkit.kafkatools import produce


def opening_lines(games: int, seed: int) -> list[tuple[bytes, bytes]]:
    """GameStarted + RoundStarted of ``games`` games (all left open)."""
    options = SimulationOptions(games=games, seed=seed, max_rounds=1, rules="edition1")
    rng = random.Random(seed)
    out: list[tuple[bytes, bytes]] = []
    for index in range(games):
        game_id = f"mem-{seed}-{index:06d}"
        it = game_log(game_id, random.Random(rng.getrandbits(64)), options)
        for _ in range(2):
            _, line = next(it)
            out.append((game_id.encode(), line))
    return out


async def processed_count(url: str, group_prefix: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        value = await conn.fetchval(
            'SELECT coalesce(sum("offset" + 1), 0) FROM current_positions WHERE group_id LIKE $1',
            group_prefix + "%",
        )
        return int(value)
    finally:
        await conn.close()


async def run(ctx: Context) -> None:
    """The openings of ``Sizes.memory_games`` games, then the process's VmHWM."""
    say("5. peak memory with many open games")
    games = ctx.sizes.memory_games
    lines = opening_lines(games, 4242)
    topics = fresh_topics()
    await make_topics(ctx, [topics.input, topics.verdicts, topics.dlq])
    url = await fresh_database(ctx, "memory", migrate=True)
    served = await start_serve(ctx, url, topics, name="memory")
    try:
        await asyncio.sleep(1.0)
        idle = proc_status(served.process.pid)
        started = time.perf_counter()
        await produce(ctx.bootstrap, topics.input, lines)
        deadline = time.monotonic() + 600
        done = 0
        while time.monotonic() < deadline:
            done = await processed_count(url, "bench-memory")
            if done >= len(lines):
                break
            if served.process.poll() is not None:
                raise RuntimeError(f"referee serve died:\n{tail(served.log)}")
            await asyncio.sleep(0.5)
        seconds = time.perf_counter() - started
        after = proc_status(served.process.pid)
    finally:
        stop_process(served.process)
    if done < len(lines):
        raise RuntimeError(f"only {done} of {len(lines)} opening events processed")
    ctx.results["memory"] = {
        "games": games,
        "events": len(lines),
        "idle_hwm": idle["VmHWM"],
        "hwm": after["VmHWM"],
        "rss": after["VmRSS"],
        "per_game": (after["VmHWM"] - idle["VmHWM"]) * 1024 / games,
        "seconds": seconds,
    }
    say(f"   VmHWM {after['VmHWM'] / 1024:,.0f} MiB (idle {idle['VmHWM'] / 1024:,.0f} MiB)")
