"""7. The relay's publishing rate: a full outbox, one leader, until the topic holds it all.

The verdicts of the main log are stored with ``referee replay --database`` (no relay runs
there); then ``referee serve`` starts on an empty input topic and its relay publishes the
whole outbox. The rate is the single leader's ceiling, which bounds a cluster's (see
docs/design.md, "Scale ceiling").
"""

from __future__ import annotations

import asyncpg

from bench.context import Context, say
from bench.process import count_lines, run_cli, start_serve, stop_process
from bench.readers import wait_for_count
from bench.services import fresh_database, fresh_topics, make_topics


async def run(ctx: Context) -> None:
    """Publishes a stored outbox of the main log's verdicts and measures the rate."""
    say("7. the relay's publishing rate")
    logs = ctx.shared_logs()
    verdicts = count_lines(logs.main_verdicts)
    url = await fresh_database(ctx, "relay", migrate=True)
    run_cli(["replay", str(logs.main), "--database", url, "--output", "/dev/null"])
    conn = await asyncpg.connect(url)
    try:
        dead = int(await conn.fetchval("SELECT count(*) FROM dead_letters"))
    finally:
        await conn.close()
    topics = fresh_topics()
    await make_topics(ctx, [topics.input, topics.verdicts, topics.dlq])
    served = await start_serve(ctx, url, topics, name="relay")
    try:
        done = await wait_for_count(ctx, served, topics.verdicts, verdicts, limit=300)
    finally:
        stop_process(served.process)
    seconds = done - served.ready_at
    rate = verdicts / seconds
    say(f"   {verdicts} verdicts published in {seconds:.1f} s: {rate:,.0f} verdicts/s")
    ctx.results["relay"] = {
        "verdicts": verdicts,
        "dead_letters": dead,
        "seconds": seconds,
        "verdicts_per_second": rate,
    }
    ctx.note("uv run referee replay MAIN --database URL   # then serve on an empty input topic")
