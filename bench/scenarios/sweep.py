"""4b. Throughput vs batch size: the sweep log through ``referee serve`` at each batch size."""

from __future__ import annotations

from bench.context import Context, say
from bench.process import count_lines
from bench.scenarios.e2e import serve_run
from bench.services import fresh_topics, make_topics
from tools.testkit.kafkatools import keyed_lines, produce


async def run(ctx: Context) -> None:
    """One fresh database, verdict topic and group per batch size on one pre-produced topic."""
    say("4b. throughput vs batch size")
    logs = ctx.shared_logs()
    verdicts = count_lines(logs.sweep_verdicts)
    topics = fresh_topics()
    await make_topics(ctx, [topics.input])
    records = keyed_lines(logs.sweep)
    await produce(ctx.bootstrap, topics.input, records)
    rows = []
    for size in ctx.sizes.batch_sizes:
        run = await serve_run(
            ctx, fresh_topics(topics.input), len(records), verdicts, size, f"b{size}"
        )
        say(f"   batch {size}: {run['eps']:,.0f} events/s (steady {run['steady_eps']:,.0f})")
        rows.append((size, run))
    ctx.results["sweep"] = {"events": len(records), "rows": rows}
