"""A whole run: services up, the shared logs, the chosen scenarios, cleanup, the report."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from bench.context import BENCH, FULL, NOTES, OWNER_AB, QUICK, ROOT, Context, Options, say
from bench.logs import simulate_logs
from bench.process import imported_from, stop_process
from bench.report import Run, machine, plots, render, render_ab
from bench.scenarios import SCENARIOS, ab
from bench.sections.base import Page
from bench.services import delete_topics, drop_databases, start_service, stop_services


async def run_all(ctx: Context) -> None:
    """Simulates the shared logs, then runs every scenario ``--only`` selects, in order."""
    ctx.logs = simulate_logs(ctx)
    only = set(ctx.options.only.split(",")) if ctx.options.only else None
    for name, scenario in SCENARIOS.items():
        if only is None or name in only:
            await scenario(ctx)


async def cleanup(ctx: Context) -> None:
    """Stops the processes the run started, drops its databases and deletes its topics."""
    for p in ctx.processes:
        stop_process(p, grace=5)
    if ctx.admin_url:
        with contextlib.suppress(Exception):
            await drop_databases(ctx)
    if ctx.bootstrap:
        with contextlib.suppress(Exception):
            await delete_topics(ctx)


def measured_at() -> str:
    """Returns now, as the report says when it was measured."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[0:3])


def ab_main(ctx: Context) -> int:
    """``--ab-before``: the end-to-end A/B only, interpreted on both sides; the section goes to
    bench/one-owner-ab.md (section 6b of the report)."""
    info = machine()
    try:
        ctx.admin_url = start_service(ctx, "postgres.sh", "DATABASE_URL")
        ctx.bootstrap = start_service(ctx, "kafka.sh", "KAFKA_BOOTSTRAP")
        asyncio.run(ab.run(ctx))
    finally:
        asyncio.run(cleanup(ctx))
        if not ctx.options.keep_services:
            stop_services(ctx)
    page = Page(ctx.sizes, quick=False, img="", kept=BENCH)
    run = Run(info, load_average(), minutes=0.0, measured_at=measured_at(), commands=[], page=page)
    text = render_ab(ctx.results, run, ctx.options.rounds)
    output = ctx.options.output or (ctx.work / "ab.md" if ctx.options.quick else OWNER_AB)
    output.write_text(text + "\n", encoding="utf-8")
    (ctx.work / "ab-results.json").write_text(json.dumps(ctx.results, indent=2, default=str))
    print(text)
    return 0


def compile_bytecode() -> None:
    """Compiles the environment's and the referee's bytecode, as the image does at build
    (Dockerfile: UV_COMPILE_BYTECODE=1), so the referee processes timed here start as a
    deployed one does: with PYTHONDONTWRITEBYTECODE=1 and no bytecode, every start compiled
    every module it imports, which a deployed referee never pays (bench/notes.md,
    "Bytecode")."""
    targets = [sysconfig.get_paths()["purelib"], str(ROOT / "referee"), str(ROOT / "migrations")]
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", *targets],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    say("bytecode compiled (as the image is)")


def use_build(ctx: Context) -> str:
    """Makes every referee process of the run import the compiled build (tools/native.py,
    compiled here into WORKDIR/native, as the image compiles it), unless --interpreted;
    returns what the report says of the build."""
    if ctx.options.interpreted:
        return "interpreted (`--interpreted`: this checkout's sources)"
    if importlib.util.find_spec("setuptools") is None:
        raise SystemExit(
            "the compiled build needs the native dependency group: run "
            "`uv run --group native python bench/run.py` (or pass --interpreted)"
        )
    from tools.native import NATIVE_MODULES, copy

    tree = copy(ctx.work / "native")
    # PYTHONSAFEPATH: the working directory (this checkout) must not come before PYTHONPATH
    os.environ["PYTHONPATH"] = str(tree)
    os.environ["PYTHONSAFEPATH"] = "1"
    found = imported_from({})
    if not found.startswith(str(tree)):
        raise SystemExit(f"referee imported from {found}, not the compiled tree {tree}")
    manifest = json.loads((tree / "referee" / "_native.json").read_text())
    say(f"compiled build in {tree}")
    return (
        f"compiled (`python -m tools.native`, mypyc {manifest['mypy']}:"
        f" {len(NATIVE_MODULES)} modules), as the image ships"
    )


def main(options: Options) -> int:
    """Runs the benchmarks ``options`` ask for and writes their report; the exit status."""
    work = options.workdir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    ctx = Context(options, QUICK if options.quick else FULL, work)
    if options.ab_before is not None:
        return ab_main(ctx)
    output = options.output or (
        work / "benchmarks.md" if options.quick else ROOT / "docs/benchmarks.md"
    )
    img = output.parent / "img"
    started = time.perf_counter()
    info = machine()
    compile_bytecode()
    info["build"] = use_build(ctx)
    try:
        ctx.admin_url = start_service(ctx, "postgres.sh", "DATABASE_URL")
        ctx.bootstrap = start_service(ctx, "kafka.sh", "KAFKA_BOOTSTRAP")
        say(f"services: {ctx.admin_url.split('@')[-1]} and {ctx.bootstrap}")
        asyncio.run(run_all(ctx))
    finally:
        asyncio.run(cleanup(ctx))
        if not options.keep_services:
            stop_services(ctx)
    load_end = load_average()
    runtime = time.perf_counter() - started
    if NOTES.exists() and not options.quick:
        ctx.results["notes"] = NOTES.read_text(encoding="utf-8").strip().splitlines()
    plots(ctx.results, img)
    page = Page(ctx.sizes, options.quick, os.path.relpath(img, output.parent), BENCH)
    run = Run(info, load_end, runtime / 60, measured_at(), ctx.commands, page)
    output.write_text(render(ctx.results, run) + "\n", encoding="utf-8")
    (work / "results.json").write_text(json.dumps(ctx.results, indent=2, default=str))
    say(f"wrote {output} in {runtime / 60:.1f} min")
    return 0
