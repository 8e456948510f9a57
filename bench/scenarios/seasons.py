"""10. A store that lives for seasons (issue 35): bytes an event in PostgreSQL and in the
Parquet archive, ``referee archive`` against reading its files, ``referee audit --archive``
against today's audit of the same data still live, and ``referee serve``'s latency while an
archive runs.

The mix's log (``referee simulate --games N --seed 7``, the default rules: every family) is
replayed once into a template database whose partitions last a minute
(``REFEREE_PARTITION_INTERVAL=1m``); once they have ended (and a minute more, so that
``REFEREE_ARCHIVE_KEEP_PRINTS=1m`` has passed for every row) each measurement works on a copy
of it (``CREATE DATABASE ... TEMPLATE``), so every archive run has the same work to do.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
from aiokafka import AIOKafkaProducer

from bench.context import PY, ROOT, Context, say
from bench.process import imported_from, parse_speed, run_cli, start_serve, stop_process
from bench.scenarios.latency import VerdictWatcher, measure_phase, phase_lines, verdicts_of
from bench.services import clone_database, fresh_database, fresh_topics, make_topics
from referee.archive import parquet_to_rows
from referee.store.partitions import PARTITIONED, list_partitions

INTERVAL = {"REFEREE_PARTITION_INTERVAL": "1m", "REFEREE_PARTITIONS_AHEAD": "1"}
"""Every referee process of the scenario: partitions of a minute, so they end in the run."""
KEEP = {"REFEREE_ARCHIVE_KEEP_PRINTS": "1m"}
"""The archive's: prints of finished games stay only a minute (in service: 7 days, far shorter
than the retention, so archived games that ended are past it, as here)."""
LOAD = 1000
"""The offered load (events/s) of the latency runs."""
WINDOW = 60.0
"""Seconds measured at ``LOAD``: longer than an archive of the mix's log takes beside ``serve``
(docs/benchmarks.md, section 10b), so the window holds its detach and drop too, not only its
writing."""
SUMMARY = re.compile(r"archived (\d+) segment\(s\) \([^)]*\): (\d+) rows, (\d+) files")
CARRIED = re.compile(
    r"carried into the live partitions: (\d+) states, (\d+) positions, (\d+) prints"
)

STORE_BYTES = """
SELECT coalesce(p.relname, c.relname)::text, sum(pg_total_relation_size(c.oid))::int8
FROM pg_class c
LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
LEFT JOIN pg_class p ON p.oid = i.inhparent
WHERE c.relnamespace = to_regnamespace(current_schema()) AND c.relkind IN ('r', 'm')
GROUP BY 1
"""
"""Bytes of every table of the schema (a partition counted under its table), each with its
indexes and TOAST (``pg_total_relation_size``)."""


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[0:3])


def referee(args: list[str], env: dict[str, str], timeout: float = 900) -> tuple[float, str, str]:
    """Runs ``referee ARGS`` with ``env`` added; (wall seconds, stdout, stderr). Raises on a
    non-zero exit."""
    started = time.perf_counter()
    done = subprocess.run(
        [PY, "-m", "referee", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **env},
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"referee {args[0]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall, done.stdout, done.stderr


async def store_bytes(url: str) -> dict[str, int]:
    """Bytes of each table of the referee's schema, partitions, indexes and TOAST included."""
    conn = await asyncpg.connect(url)
    try:
        return {str(t): int(n) for t, n in await conn.fetch(STORE_BYTES)}
    finally:
        await conn.close()


def archive_bytes(directory: Path) -> dict[str, int]:
    """Bytes of the archive's files, by top directory (a table's, or ``manifests``)."""
    out: dict[str, int] = {}
    for path in directory.rglob("*"):
        if path.is_file():
            top = path.relative_to(directory).parts[0]
            out[top] = out.get(top, 0) + path.stat().st_size
    return out


def read_ceiling(directory: Path) -> tuple[int, float]:
    """Every Parquet file of the archive read from disk and decoded to Python rows by the
    archive reader's own decoder (``parquet_to_rows``: pyarrow, then each column to Python
    values); nothing verified, nothing compared. (rows, seconds)"""
    started = time.perf_counter()
    rows = 0
    for path in sorted(directory.rglob("*.parquet")):
        table = path.relative_to(directory).parts[0]
        rows += len(parquet_to_rows(table, path.read_bytes()))
    return rows, time.perf_counter() - started


async def one_long_partition(url: str) -> datetime:
    """Makes, after the partitions of a minute made so far, one partition a table lasting a
    day (by hand, as the tables' owner would; tests/integration/archive/seasons.py makes short
    ones so): later writes go there, and every copy of the store then has the same ended
    segments to archive whenever it runs (``referee archive`` carries rows into the partition
    of its clock and makes none itself). Returns where it starts."""
    conn = await asyncpg.connect(url)
    try:
        start = max(p.upper for p in await list_partitions(conn) if p.table == "journal")
        end = start + timedelta(days=1)
        for table in PARTITIONED:
            await conn.execute(
                f"CREATE TABLE {table}_p{start.astimezone(UTC):%Y%m%dt%H%M%S} PARTITION OF"
                f" {table} FOR VALUES FROM ('{start.isoformat()}') TO ('{end.isoformat()}')"
            )
        return start
    finally:
        await conn.close()


async def wait_for_partitions_to_end(url: str, last_end: datetime, margin: float = 65.0) -> None:
    """Sleeps until the partitions of a minute have ended (``last_end``) and ``margin``
    seconds have passed since the newest journal row (the archive's prints of finished games
    then stay behind)."""
    conn = await asyncpg.connect(url)
    try:
        newest: datetime = await conn.fetchval("SELECT max(recorded_at) FROM journal")
        now: datetime = await conn.fetchval("SELECT clock_timestamp()")
    finally:
        await conn.close()
    until = max(last_end.timestamp() + 1.0, newest.timestamp() + margin)
    delay = until - now.timestamp()
    say(f"   waiting {delay:.0f} s for the partitions to end (newest row {newest:%H:%M:%S})")
    await asyncio.sleep(max(delay, 0.0))


def parse_archive(stderr: str) -> dict[str, int]:
    summary = SUMMARY.search(stderr)
    carried = CARRIED.search(stderr)
    if summary is None or carried is None:
        raise RuntimeError(f"no archive summary in: {stderr[-1000:]}")
    return {
        "segments": int(summary.group(1)),
        "rows": int(summary.group(2)),
        "files": int(summary.group(3)),
        "carried_states": int(carried.group(1)),
        "carried_positions": int(carried.group(2)),
        "carried_prints": int(carried.group(3)),
    }


def fresh_dir(ctx: Context, name: str) -> Path:
    """An archive directory under the work directory, emptied of an earlier run's files."""
    path = ctx.work / name
    shutil.rmtree(path, ignore_errors=True)
    return path


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


async def archive_and_audit(ctx: Context, template: str, events: int) -> dict[str, Any]:
    """Items 1-3: bytes, ``archive`` against reading its files, ``audit --archive`` against
    ``audit`` of the live data; the rounds alternate, best of each."""
    env = {**INTERVAL, **KEEP}
    rounds: list[dict[str, Any]] = []
    first: dict[str, Any] = {}
    # start-up alone: an archive with nothing older than --before, an audit of an empty store
    empty = await clone_database(ctx, template, "snoop")
    noop, _, _ = await asyncio.to_thread(
        referee,
        ["archive", "--database", empty, "--to", str(fresh_dir(ctx, "seasons-noop")),
         "--before", "2000-01-01T00:00:00Z"],
        env,
    )  # fmt: skip
    bare = await fresh_database(ctx, "sbare", migrate=True, env=INTERVAL)
    bare_audit, _, _ = await asyncio.to_thread(referee, ["audit", "--database", bare], INTERVAL)
    say(f"   start-up: archive with nothing to do {noop:.2f} s, audit of an empty store"
        f" {bare_audit:.2f} s")  # fmt: skip
    for attempt in range(ctx.sizes.repeats):
        one: dict[str, Any] = {}
        wall, out, _ = await asyncio.to_thread(
            referee, ["audit", "--database", template, "--json"], INTERVAL
        )
        live = json.loads(out)
        if not live["passed"] or live["journal_rows"] != events:
            raise RuntimeError(f"audit of the live store: {out[-2000:]}")
        one["audit_live"] = {"seconds": wall, "eps": events / wall, "load": load_average()}
        say(f"   audit (live): {wall:.1f} s = {events / wall:,.0f} events/s")

        copy = await clone_database(ctx, template, f"sarch{attempt}")
        directory = fresh_dir(ctx, f"seasons-archive-{attempt}")
        wall, _, err = await asyncio.to_thread(
            referee,
            ["archive", "--database", copy, "--to", str(directory), "--before", now_iso()],
            env,
        )
        done = parse_archive(err)
        one["archive"] = {
            **done,
            "seconds": wall,
            "rows_per_s": done["rows"] / wall,
            "load": load_average(),
        }
        say(
            f"   archive: {done['rows']:,} rows in {wall:.1f} s = {done['rows'] / wall:,.0f} rows/s"
        )
        rows, seconds = await asyncio.to_thread(read_ceiling, directory)
        if rows != done["rows"]:
            raise RuntimeError(f"the archive's files hold {rows} rows, the run said {done['rows']}")
        one["ceiling"] = {"rows": rows, "seconds": seconds, "rows_per_s": rows / seconds}
        say(f"   ceiling (read the files): {seconds:.2f} s = {rows / seconds:,.0f} rows/s")

        wall, out, _ = await asyncio.to_thread(
            referee,
            ["audit", "--database", copy, "--archive", str(directory), "--json"],
            INTERVAL,
        )
        both = json.loads(out)
        if not both["passed"] or both["archived_rows"] != events:
            raise RuntimeError(f"audit --archive: {out[-2000:]}")
        one["audit_archive"] = {"seconds": wall, "eps": events / wall, "load": load_average()}
        say(f"   audit --archive: {wall:.1f} s = {events / wall:,.0f} events/s")
        if attempt == 0:
            first = {
                "archive_bytes": archive_bytes(directory),
                "live_after": await store_bytes(copy),
            }
        rounds.append(one)
    return {
        **first,
        "rounds": rounds,
        "noop_archive_seconds": noop,
        "empty_audit_seconds": bare_audit,
        "keep_default": await keep_default(ctx, template),
    }


async def keep_default(ctx: Context, template: str) -> dict[str, Any]:
    """The archive with the default REFEREE_ARCHIVE_KEEP_PRINTS (7 days): every print of
    these games (all played minutes ago) stays in PostgreSQL."""
    copy = await clone_database(ctx, template, "sarchkeep")
    _, _, err = await asyncio.to_thread(
        referee,
        ["archive", "--database", copy, "--to", str(fresh_dir(ctx, "seasons-archive-keep")),
         "--before", now_iso()],
        INTERVAL,
    )  # fmt: skip
    return {**parse_archive(err), "live_after": await store_bytes(copy)}


async def bytes_only(ctx: Context, template: str) -> dict[str, Any]:
    """Item 1 alone (``--seasons-bytes-only``): one archive of a copy, its bytes and the live
    store's after, then the same with the default REFEREE_ARCHIVE_KEEP_PRINTS."""
    copy = await clone_database(ctx, template, "sarch")
    directory = fresh_dir(ctx, "seasons-archive-0")
    wall, _, err = await asyncio.to_thread(
        referee,
        ["archive", "--database", copy, "--to", str(directory), "--before", now_iso()],
        {**INTERVAL, **KEEP},
    )
    archived = {**parse_archive(err), "seconds": wall, "load": load_average()}
    return {
        "archive_bytes": archive_bytes(directory),
        "live_after": await store_bytes(copy),
        "archived": archived,
        "keep_default": await keep_default(ctx, template),
    }


@dataclass
class ArchiveLoop:
    """``referee archive`` run again and again on one database until told to stop (the run
    in hand finishes first); when each ran, and what it archived."""

    url: str
    directory: Path
    runs: list[dict[str, Any]] = field(default_factory=list)
    stopping: bool = False
    process: asyncio.subprocess.Process | None = None
    task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        env = {**os.environ, **INTERVAL, **KEEP}
        while not self.stopping:
            started = time.monotonic()
            self.process = await asyncio.create_subprocess_exec(
                PY, "-m", "referee", "archive", "--database", self.url, "--to",
                str(self.directory), "--before", now_iso(),
                env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            _, err = await self.process.communicate()
            text = err.decode(errors="replace")
            run: dict[str, Any] = {"start": started, "end": time.monotonic()}
            if self.process.returncode == 0:
                run |= parse_archive(text)
            else:
                run["error"] = text[-500:]
            self.runs.append(run)
            if not self.stopping:
                await asyncio.sleep(1.0)

    async def stop(self) -> None:
        self.stopping = True
        if self.task is not None:
            await self.task

    def kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()


def overlap(runs: list[dict[str, Any]], start: float, end: float) -> float:
    """The share of [start, end] during which an archive run was running."""
    covered = sum(max(0.0, min(r["end"], end) - max(r["start"], start)) for r in runs)
    return covered / (end - start) if end > start else 0.0


async def latency_run(
    ctx: Context,
    template: str,
    warm: tuple[list[Any], int],
    measured: tuple[list[Any], int],
    *,
    archiving: bool,
    label: str,
) -> dict[str, Any]:
    """One ``referee serve`` on a copy of the pre-filled store: a warm-up at 500 events/s,
    then ``LOAD`` events/s measured, with ``referee archive`` running through it or not."""
    url = await clone_database(ctx, template, f"slat{label}")
    topics = fresh_topics()
    await make_topics(ctx, [topics.input, topics.verdicts, topics.dlq])
    served = await start_serve(ctx, url, topics, name=f"seasons-{label}", extra_env=INTERVAL)
    watcher = VerdictWatcher(ctx, topics.verdicts)
    await watcher.start()
    producer = AIOKafkaProducer(
        bootstrap_servers=ctx.bootstrap, enable_idempotence=True, linger_ms=0
    )
    await producer.start()
    loop = ArchiveLoop(url, fresh_dir(ctx, f"seasons-latency-{label}"))
    try:
        await asyncio.sleep(1.0)
        await measure_phase(served, watcher, producer, topics.input, 500, *warm)
        if archiving:
            loop.start()
        started = time.monotonic()
        row = await measure_phase(served, watcher, producer, topics.input, LOAD, *measured)
        ended = time.monotonic()
        await loop.stop()
    finally:
        loop.kill()
        await producer.stop()
        await watcher.stop()
        stop_process(served.process)
    row["archiving"] = archiving
    row["load_average"] = load_average()
    row["window"] = ended - started
    if archiving:
        row["archive_runs"] = [
            {k: v - started if k in ("start", "end") else v for k, v in r.items()}
            for r in loop.runs
        ]
        row["archive_overlap"] = overlap(loop.runs, started, ended)
        row["archived_rows"] = sum(r.get("rows", 0) for r in loop.runs if r["start"] < ended)
    say(
        f"   serve at {LOAD}/s, {'with' if archiving else 'without'} an archive: p50"
        f" {row['p50']:.0f} ms, p99 {row['p99']:.0f} ms ({row['verdicts']}/{row['expected']}"
        " verdicts)"
        + (f", archive running {row['archive_overlap']:.0%} of the window" if archiving else "")
    )
    return row


async def latencies(ctx: Context, template: str) -> list[dict[str, Any]]:
    """Item 4: without and with an archive, alternating, ``repeats`` - 1 (at least 2) each."""
    seconds = dict(ctx.sizes.loads).get(LOAD, WINDOW) if ctx.options.quick else WINDOW
    warm_lines = phase_lines(500, ctx.sizes.warmup_seconds, 950)
    lines = phase_lines(LOAD, seconds, 951)
    warm = (warm_lines, verdicts_of(warm_lines))
    measured = (lines, verdicts_of(lines))
    rows = []
    for i in range(max(2, ctx.sizes.repeats - 1)):
        for archiving in (False, True):
            label = f"{'with' if archiving else 'without'}{i}"
            rows.append(
                await latency_run(ctx, template, warm, measured, archiving=archiving, label=label)
            )
    return rows


async def before_after(ctx: Context, before: Path) -> dict[str, Any]:
    """The store replay of edition 1's log and of the mix, the code of ``before`` (the commit
    before migration 0010) against this checkout's, both interpreted, alternating."""
    logs = ctx.shared_logs()
    trees = {"before": before, "after": ROOT}
    envs = {k: {"PYTHONPATH": str(v), "PYTHONSAFEPATH": "1"} for k, v in trees.items()}
    for label, env in envs.items():
        found = imported_from(env)
        if not found.startswith(str(trees[label])):
            raise SystemExit(f"{label}: referee imported from {found}, not {trees[label]}")
    out: dict[str, Any] = {"before": str(before)}
    for key, log in (("edition1", logs.main), ("mix", logs.edition2)):
        runs: dict[str, list[float]] = {"before": [], "after": []}
        for i in range(ctx.sizes.repeats):
            for label in ("before", "after") if i % 2 == 0 else ("after", "before"):
                url = await fresh_database(ctx, f"s0010{label}{i}", migrate=False)
                _, err = await asyncio.to_thread(
                    run_cli,
                    ["replay", str(log), "--database", url, "--batch-size", "2000", "--output",
                     os.devnull],
                    900,
                    envs[label],
                )  # fmt: skip
                records, secs = parse_speed(err)
                runs[label].append(records / secs)
                say(f"   store replay, {key}, {label}: {records / secs:,.0f} events/s")
        out[key] = {"runs": runs, "events": records, "load": load_average()}
    return out


async def run(ctx: Context) -> None:
    """Items 1-4 on the mix's log, and (``--seasons-before DIR``) the store replay before and
    after migration 0010."""
    say("10. a store that lives for seasons")
    log = ctx.shared_logs().edition2
    template = await fresh_database(ctx, "seasons", migrate=True, env=INTERVAL)
    _, err = await asyncio.to_thread(
        run_cli,
        ["replay", str(log), "--database", template, "--source-name", "s", "--output", os.devnull],
        900,
        INTERVAL,
    )
    events, seconds = parse_speed(err)
    live = await store_bytes(template)
    say(f"   replayed {events:,} events ({events / seconds:,.0f}/s): {sum(live.values()):,} bytes")
    result: dict[str, Any] = {
        "log": log.name,
        "games": ctx.sizes.games,
        "log_bytes": log.stat().st_size,
        "events": events,
        "replay_eps": events / seconds,
        "live": live,
        "load_replay": load_average(),
    }
    await wait_for_partitions_to_end(template, await one_long_partition(template))
    if ctx.options.seasons_bytes_only:
        result |= await bytes_only(ctx, template)
    else:
        result |= await archive_and_audit(ctx, template, events)
        result["latency"] = await latencies(ctx, template)
    if ctx.options.seasons_before is not None:
        result["before_after"] = await before_after(ctx, ctx.options.seasons_before)
    ctx.results["seasons"] = result
    ctx.note(
        f"REFEREE_PARTITION_INTERVAL=1m uv run referee replay {log} --database URL"
        " --source-name s --output /dev/null   # then, once the partitions ended, on copies:"
    )
    ctx.note(
        "REFEREE_ARCHIVE_KEEP_PRINTS=1m uv run referee archive --database URL --to DIR --before"
        " NOW; uv run referee audit --database URL [--archive DIR]"
        "   # see bench/scenarios/seasons.py"
    )
