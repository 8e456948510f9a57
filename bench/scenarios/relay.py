"""7. The relay's publishing rate: a full outbox, one leader, until the topic holds it all.

The verdicts of the edition-2 log (every family, scoring during play: many verdicts) are
stored with ``referee replay --database`` (no relay runs there); then ``referee serve``
starts on an empty input topic and its relay publishes the whole outbox. The rate is the
single leader's ceiling, which bounds a cluster's (see docs/design.md, "Scale ceiling").
"""

from __future__ import annotations

import time

import asyncpg

from bench.context import Context, say
from bench.process import run_cli, start_serve, stop_process
from bench.readers import committed_reader
from bench.services import fresh_database, fresh_topics, make_topics


async def run(ctx: Context) -> None:
    """Publishes a stored outbox of the main log's verdicts and measures the rate."""
    say("7. the relay's publishing rate")
    logs = ctx.shared_logs()
    url = await fresh_database(ctx, "relay", migrate=True)
    run_cli(["replay", str(logs.edition2), "--database", url, "--output", "/dev/null"])
    conn = await asyncpg.connect(url)
    try:
        verdicts = int(await conn.fetchval("SELECT count(*) FROM verdicts"))
        dead = int(await conn.fetchval("SELECT count(*) FROM dead_letters"))
        events = int(await conn.fetchval("SELECT count(*) FROM journal"))
    finally:
        await conn.close()
    topics = fresh_topics()
    await make_topics(ctx, [topics.input, topics.verdicts, topics.dlq])
    served = await start_serve(ctx, url, topics, name="relay")
    try:
        first_ms, last_ms = await send_times(ctx, topics.verdicts, verdicts, limit=300)
    finally:
        stop_process(served.process)
    # The span between the first and the last record's producer timestamp: the relay may
    # publish much of the outbox before /readyz answers, so the process's clock would not do.
    seconds = max(last_ms - first_ms, 1) / 1000
    rate = (verdicts - 1) / seconds
    say(f"   {verdicts} verdicts published in {seconds:.1f} s: {rate:,.0f} verdicts/s")
    ctx.results["relay"] = {
        "verdicts": verdicts,
        "events": events,
        "dead_letters": dead,
        "seconds": seconds,
        "verdicts_per_second": rate,
    }
    ctx.note("uv run referee replay EDITION2 --database URL   # then serve on an empty input topic")


async def send_times(ctx: Context, topic: str, expected: int, limit: float) -> tuple[int, int]:
    """The first and last producer timestamps (ms) once ``topic`` holds ``expected`` records."""
    consumer = await committed_reader(ctx, topic)
    try:
        seen = 0
        first = last = 0
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            got = await consumer.getmany(timeout_ms=50)
            for records in got.values():
                for record in records:
                    first = record.timestamp if seen == 0 else min(first, record.timestamp)
                    last = max(last, record.timestamp)
                    seen += 1
            if seen >= expected:
                return first, last
    finally:
        await consumer.stop()
    raise RuntimeError(f"{topic} did not reach {expected} records in {limit:.0f} s")
