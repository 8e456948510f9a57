"""A/B (``--ab-before DIR``): the end-to-end scenario, another checkout's code against this one."""

from __future__ import annotations

from pathlib import Path

from bench.context import E2E_BATCH, ROOT, Context, say
from bench.process import count_lines, imported_from, run_cli
from bench.readers import high_watermarks
from bench.scenarios.e2e import serve_run
from bench.services import fresh_topics, make_topics
from tools.testkit.kafkatools import keyed_lines, produce


async def measure(ctx: Context, before: Path, log: Path, verdicts_file: Path) -> dict[str, object]:
    """The end-to-end scenario of section 3, the code of ``before`` (absolute) against this one.

    Both run ``referee serve`` from their own source tree (PYTHONPATH) on the same input topic,
    each on a fresh database and fresh output topics, alternating (before, after, then after,
    before, ...) so drift on a shared machine falls on both alike.
    """
    rounds = ctx.options.rounds
    say(f"A/B end to end: before = {before}, after = {ROOT}, {rounds} rounds each")
    expected = count_lines(verdicts_file)
    topics = fresh_topics()
    await make_topics(ctx, [topics.input])
    records = keyed_lines(log)
    await produce(ctx.bootstrap, topics.input, records)
    trees = {"before": before, "after": ROOT}
    # PYTHONSAFEPATH: the working directory (this checkout) must not come before PYTHONPATH
    envs = {k: {"PYTHONPATH": str(v), "PYTHONSAFEPATH": "1"} for k, v in trees.items()}
    for label, env in envs.items():
        found = imported_from(env)
        if not found.startswith(str(trees[label])):
            raise SystemExit(f"{label}: referee imported from {found}, not {trees[label]}")
        say(f"   {label}: referee from {found}")
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for i in range(rounds):
        for label in ("before", "after") if i % 2 == 0 else ("after", "before"):
            out = fresh_topics(topics.input)
            run = await serve_run(
                ctx,
                out,
                len(records),
                expected,
                E2E_BATCH,
                f"ab-{label}{i}",
                extra_env=envs[label],
            )
            # a transactional relay leaves a commit marker per partition per transaction
            run["markers"] = await high_watermarks(ctx, out.verdicts) - expected
            say(
                f"   {label} {i}: {run['eps']:,.0f} events/s ({run['seconds']:.1f} s), "
                f"{run['markers']:.0f} markers on the verdict topic"
            )
            runs[label].append(run)
    return {
        "events": len(records),
        "verdicts": expected,
        "before": str(before),
        "runs": runs,
    }


LOGS = (("edition 1", "edition1"), ("the mix of every family", "random"))
"""The logs of the A/B: edition 1's and the simulator's default mix (heavier), as section 3."""


async def run(ctx: Context) -> None:
    """Simulates edition 1's log and the default mix, then measures ``--ab-before`` on each."""
    if ctx.options.ab_before is None:
        raise RuntimeError("the A/B scenario needs --ab-before DIR")
    measured = []
    for label, rules in LOGS:
        log = ctx.work / f"ab-{rules}.jsonl"
        games = ctx.sizes.games
        simulate = ["simulate", "--games", str(games), "--seed", "7", "--rules", rules]
        run_cli([*simulate, "--output", str(log)])
        verdicts = ctx.work / f"ab-{rules}.verdicts.jsonl"
        run_cli(["replay", str(log), "--output", str(verdicts), "--workers", "1"])
        say(f"A/B on {label}")
        measured.append({"log": label} | await measure(ctx, ctx.options.ab_before, log, verdicts))
    ctx.results["ab"] = {"logs": measured}
