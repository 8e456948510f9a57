"""The page of a game and the dispute desk, on the longest game of the benchmark log.

    uv run --frozen python bench/desk.py --database URL [--runs 3] [--workdir DIR] [--keep]

URL: a PostgreSQL server and a role that may create databases (the test server's superuser);
one database is made on it, filled and dropped at the end (``--keep`` keeps it). The log is
``referee simulate --games 1900 --seed 7`` (303,584 events, every family), written once into
the work directory; its longest game (the most records) is the page measured:

1. ``referee explain LOG --game ID --html FILE`` as a person runs it (start-up and the fold
   of the whole log included), the auditor's view and a spectator's: seconds, best of
   ``--runs``, and the file's bytes;
2. the browser's time to show the first step: Debian's headless Chromium (through Selenium
   and Debian's chromedriver) opens the file, fresh each time; from the navigation's start
   to the first contentful paint, and to the end of the load event (the page's script has
   shown the first step by then), best of ``--runs``;
3. the desk's page time: the log replayed into the new database (``referee replay
   --database``), ``referee desk --auditor`` started on it, and the game's page asked for over
   HTTP under each view (the request's round trip: the game's journal rows read, folded and
   drawn), best of ``--runs``; the search page for a player beside it.

One JSON object on stdout, then the Markdown of docs/benchmarks.md's section. Not part of
``bench/run.py``'s full run: its figures go by hand into bench/desk.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

import asyncpg
from sqlalchemy.engine import make_url

SIMULATE = ["simulate", "--games", "1900", "--seed", "7"]
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1300,1000",
)


def referee(*args: str | Path, env: dict[str, str]) -> float:
    """Runs ``referee ARGS`` to the end; returns its wall-clock seconds."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "referee", *map(str, args)],
        env=env,
        capture_output=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"referee {args[0]} failed: {done.stderr.decode()[-2000:]}")
    return seconds


def longest_game(log: Path) -> tuple[str, int]:
    """Returns the game with the most records in the log, and how many."""
    counts: Counter[str] = Counter()
    pattern = re.compile(rb'"game_id":"([^"]+)"')
    with log.open("rb") as lines:
        for line in lines:
            found = pattern.search(line)
            if found:
                counts[found.group(1).decode()] += 1
    game, records = counts.most_common(1)[0]
    return game, records


def first_step_times(page: Path, runs: int, profile: Path) -> dict[str, float]:
    """Opens the page in headless Chromium ``runs`` times; returns the best milliseconds from
    the navigation's start to the first contentful paint and to the load event's end."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    options = Options()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    best = {"first_contentful_paint_ms": float("inf"), "load_end_ms": float("inf")}
    try:
        for _ in range(runs):
            driver.get("about:blank")
            driver.get(page.as_uri())
            driver.find_element(By.CSS_SELECTOR, "section.step.current")
            timing = driver.execute_script(
                "const n = performance.getEntriesByType('navigation')[0];"
                "const p = performance.getEntriesByName('first-contentful-paint')[0];"
                "return [p ? p.startTime : null, n.loadEventEnd];"
            )
            paint, load = timing
            if paint is not None:
                best["first_contentful_paint_ms"] = min(
                    best["first_contentful_paint_ms"], float(paint)
                )
            best["load_end_ms"] = min(best["load_end_ms"], float(load))
    finally:
        driver.quit()
    return {k: round(v, 1) for k, v in best.items()}


def get(url: str) -> tuple[float, int]:
    """Asks for a page; returns the seconds to its last byte and its bytes."""
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as answer:
        body = answer.read()
    return time.perf_counter() - started, len(body)


def desk_times(
    url: str, game: str, players: list[str], runs: int, env: dict[str, str]
) -> dict[str, Any]:
    """Starts ``referee desk --auditor`` on the store; times the game's page under each
    view and the search for a player, best of ``runs``."""
    args = [sys.executable, "-m", "referee", "desk", "--database", url, "--port", "0"]
    proc = subprocess.Popen([*args, "--auditor"], stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+", line)
        if not found:
            raise SystemExit(f"the desk did not start: {line}{proc.stderr.read()[-2000:]}")
        base = found.group(0)
        path = f"{base}/games/{quote(game, safe='')}?view="
        asked = {
            "page, a spectator's view": path + "spectator",
            "page, a player's view": path + quote(players[0]),
            "page, the auditor's view": path + "auditor",
            "search by player": f"{base}/?player={quote(players[0])}",
        }
        found_times: dict[str, Any] = {}
        for what, address in asked.items():
            times = []
            size = 0
            for _ in range(runs):
                seconds, size = get(address)
                times.append(seconds)
            found_times[what] = {"seconds": round(min(times), 3), "bytes": size}
        return found_times
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def make_database(admin: str) -> str:
    name = f"referee_desk_bench_{uuid.uuid4().hex[:8]}"
    plain = make_url(admin).set(drivername="postgresql")
    conn = await asyncpg.connect(plain.render_as_string(hide_password=False))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return make_url(admin).set(database=name).render_as_string(hide_password=False)


async def drop_database(admin: str, url: str) -> None:
    plain = make_url(admin).set(drivername="postgresql")
    conn = await asyncpg.connect(plain.render_as_string(hide_password=False))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)')
    finally:
        await conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True, metavar="URL", help="a server (superuser)")
    parser.add_argument("--runs", type=int, default=3, help="best of this many")
    parser.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "referee-bench"
    )
    parser.add_argument("--keep", action="store_true", help="keep the database")
    options = parser.parse_args()
    work = options.workdir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")}
    log = work / "simulate-1900-7.jsonl"
    if not log.exists():
        referee(*SIMULATE, "--output", log, env=env)
    game, records = longest_game(log)
    with log.open(encoding="utf-8") as lines:
        first = json.loads(
            next(line for line in lines if f'"{game}"' in line and '"GameStarted"' in line)
        )
    players = list(first["players"])
    result: dict[str, Any] = {"log": " ".join(SIMULATE), "game": game, "records": records}

    pages = {}
    for view in ("auditor", "spectator"):
        page = work / f"desk-{view}.html"
        as_view = [] if view == "auditor" else ["--as", view]
        seconds = min(
            referee("explain", log, "--game", game, *as_view, "--html", page, env=env)
            for _ in range(options.runs)
        )
        steps = page.read_text(encoding="utf-8").count('<section class="step')
        pages[view] = {"seconds": round(seconds, 2), "bytes": page.stat().st_size, "steps": steps}
        pages[view] |= first_step_times(page, options.runs, work / f"chromium-{view}")
    result["explain_html"] = pages

    url = asyncio.run(make_database(options.database))
    try:
        referee("migrate", "--database", url, env=env)
        started = time.perf_counter()
        referee("replay", log, "--database", url, "--output", os.devnull, env=env)
        result["replay_into_store_seconds"] = round(time.perf_counter() - started, 1)
        result["desk"] = desk_times(url, game, players, options.runs, env)
    finally:
        if not options.keep:
            asyncio.run(drop_database(options.database, url))
    print(json.dumps(result, indent=2))
    print(markdown(result))
    return 0


def markdown(r: dict[str, Any]) -> str:
    """The figures as docs/benchmarks.md shows them."""
    rows = [
        "| what | auditor's view | spectator's view |",
        "|---|---|---|",
    ]
    a, s = r["explain_html"]["auditor"], r["explain_html"]["spectator"]
    rows += [
        (
            f"| `referee explain LOG --game ID --html FILE`: seconds | {a['seconds']} | "
            f"{s['seconds']} |"
        ),
        f"| the file: bytes ({a['steps']} steps) | {a['bytes']:,} | {s['bytes']:,} |",
        (
            f"| the browser: first contentful paint | {a['first_contentful_paint_ms']} ms | "
            f"{s['first_contentful_paint_ms']} ms |"
        ),
        (
            f"| the browser: load event ended (the first step shown) | {a['load_end_ms']} ms"
            f" | {s['load_end_ms']} ms |"
        ),
    ]
    desk = r["desk"]
    rows += ["", "| the desk, over HTTP | seconds | bytes |", "|---|---|---|"]
    rows += [f"| {what} | {v['seconds']} | {v['bytes']:,} |" for what, v in desk.items()]
    return "\n".join(rows)


if __name__ == "__main__":
    raise SystemExit(main())
