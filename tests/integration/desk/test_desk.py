"""``referee desk`` on a real PostgreSQL, opened in a real browser (headless Chromium).

A store with the games of every edition-2 family and a game whose players' ids are hostile is
served by ``referee desk`` as a login of ``referee_reader``: the games are found by id,
player and foul; a game's page under a view is the page ``referee explain --html`` writes of
the same game from the log; the auditor's view is refused unless the desk allows it; hostile
ids are shown as text. The desk's sessions act as ``referee_reader`` in read-only
transactions, and a login that is not of that role is refused (exit 3).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import selectors
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait
from sqlalchemy import text
from sqlalchemy.engine import make_url

from referee.store.database import create_engine
from referee.store.game_views import GameViews, as_reader
from tests.hostile_ids import HOSTILE, hostile_log
from tests.integration.conftest import execute

pytestmark = [pytest.mark.postgres, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[3]
EDITION2 = ROOT / "examples" / "edition2.jsonl"


def referee(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")}
    return subprocess.run(
        [sys.executable, "-m", "referee", *map(str, args)],
        capture_output=True,
        check=False,
        timeout=300,
        text=True,
        env=env,
    )


@contextmanager
def desk(url: str, *flags: str) -> Iterator[str]:
    """Runs ``referee desk`` on any free port of loopback; yields its address."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")}
    args = [sys.executable, "-m", "referee", "desk", "--database", url, "--port", "0", *flags]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stderr, selectors.EVENT_READ)
            deadline = time.monotonic() + 60
            line = ""
            while time.monotonic() < deadline and not line.startswith("referee desk: http"):
                assert sel.select(timeout=deadline - time.monotonic()), "the desk did not start"
                line = proc.stderr.readline()
                assert line or proc.poll() is None, f"the desk stopped: {proc.returncode}"
        found = re.search(r"http://127\.0\.0\.1:\d+", line)
        assert found, line
        yield found.group(0)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
async def store(migrated_database: str, tmp_path: Path) -> tuple[str, Path]:
    """The store with edition 2's games and the hostile game; the log of them all."""
    log = tmp_path / "desk.jsonl"
    log.write_bytes(EDITION2.read_bytes() + hostile_log(tmp_path).read_bytes())
    done = await asyncio.to_thread(referee, "replay", log, "--database", migrated_database)
    assert done.returncode == 0, done.stderr
    return migrated_database, log


@pytest.fixture
async def reader_url(store: tuple[str, Path]) -> AsyncIterator[str]:
    """A login of ``referee_reader`` on the store."""
    url, _ = store
    login = f"desk_{uuid.uuid4().hex[:8]}"
    await execute(url, f"CREATE ROLE {login} LOGIN PASSWORD 'pw' IN ROLE referee_reader")
    yield make_url(url).set(username=login, password="pw").render_as_string(hide_password=False)
    await execute(url, f"DROP OWNED BY {login}")
    await execute(url, f"DROP ROLE {login}")


def main_of(html: str) -> str:
    """A page's steps and verdict list (its header's links differ: the desk's lead to views)."""
    return html.split('<div class="main">', 1)[1]


def served(browser: WebDriver) -> str:
    """The page the browser shows, as the desk sent it."""
    with urllib.request.urlopen(browser.current_url.split("#")[0], timeout=60) as answer:
        body: bytes = answer.read()
    return body.decode()


def games_listed(browser: WebDriver) -> set[str]:
    rows = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.found tr[data-game]'), "
        "r => r.getAttribute('data-game'))"
    )
    return {str(r) for r in rows}


def submit(browser: WebDriver, query: str) -> None:
    """Sends the search form and waits for the answer (its address holds ``query``)."""
    browser.find_element(By.CSS_SELECTOR, "form.search button").click()
    WebDriverWait(browser, 60).until(
        lambda b: (
            query in b.current_url and b.execute_script("return document.readyState") == "complete"
        )
    )


def no_alert(browser: WebDriver) -> None:
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018 - reading it is the check


async def test_the_desk_finds_games_and_serves_their_pages(
    store: tuple[str, Path],
    reader_url: str,
    browser: WebDriver,
    tmp_path: Path,
    screenshots: Path | None,
) -> None:
    _, log = store
    explained = [json.loads(line) for line in referee("explain", log, "--json").stdout.splitlines()]
    every_game = {e["game_id"] for e in explained}
    fouled = {e["game_id"] for e in explained if e["verdict"].get("foul") == "false_pass"}
    assert len(every_game) > 3
    assert fouled
    game = sorted(every_game - {"golden-false-pass"})[0]
    player = next(
        e["verdict"]["player"]
        for e in explained
        if e["game_id"] == game and "player" in e["verdict"]
    )
    with_player = {e["game_id"] for e in explained if player in json.dumps(e["verdict"])} | {game}

    with desk(reader_url) as address:
        browser.get(address + "/")
        assert games_listed(browser) == every_game
        assert "the auditor's is not served here" in browser.page_source

        browser.find_element(By.NAME, "player").send_keys(player)
        submit(browser, "player=")
        assert game in games_listed(browser)
        assert games_listed(browser) <= with_player

        browser.get(address + "/")
        Select(browser.find_element(By.NAME, "foul")).select_by_value("false_pass")
        submit(browser, "foul=false_pass")
        assert games_listed(browser) == fouled
        if screenshots is not None:
            browser.find_element(By.TAG_NAME, "body").screenshot(
                str(screenshots / "desk-search.png")
            )

        browser.get(address + "/?game=" + quote(game[-6:]))
        assert game in games_listed(browser)
        browser.find_element(By.CSS_SELECTOR, f'tr[data-game="{game}"] a.game').click()
        WebDriverWait(browser, 60).until(lambda b: "/games/" in b.current_url)
        browser.find_element(By.CSS_SELECTOR, "section.step.current")
        written = tmp_path / "spectator.html"
        done = referee("explain", log, "--game", game, "--as", "spectator", "--html", written)
        assert done.returncode == 0, done.stderr
        assert main_of(served(browser)) == main_of(written.read_text(encoding="utf-8"))
        assert browser.find_elements(By.CSS_SELECTOR, "ul.hands .tile.back")  # hands hidden

        browser.get(address + f"/games/{game}?view={quote(player)}")
        done = referee("explain", log, "--game", game, "--as", player, "--html", written)
        assert main_of(served(browser)) == main_of(written.read_text(encoding="utf-8"))

        browser.get(address + f"/games/{game}?view=auditor")
        assert "is not served by this desk" in browser.page_source
        assert not browser.find_elements(By.CSS_SELECTOR, "section.step")

        browser.get(address + "/games/" + quote("<script>alert(1)</script>", safe=""))
        assert (
            "no game '<script>alert(1)</script>' in the store"
            in browser.find_element(By.TAG_NAME, "body").text
        )
        no_alert(browser)

        hostile = HOSTILE["ann"]
        browser.get(address + "/?player=" + quote(hostile))
        assert games_listed(browser) == {"golden-false-pass"}
        assert browser.find_element(By.NAME, "player").get_attribute("value") == hostile
        browser.get(address + "/games/golden-false-pass?view=" + quote(hostile) + "#step-8")
        seats = browser.find_elements(By.CSS_SELECTOR, "#step-8 ul.hands li")
        assert [s.get_attribute("data-player") for s in seats] == [
            HOSTILE["ann"],
            HOSTILE["bob"],
            "c\\u202eid</svg><img src=x onerror=alert(3)>",
        ]
        no_alert(browser)

    with desk(reader_url, "--auditor") as address:
        browser.get(address + f"/games/{game}?view=auditor")
        done = referee("explain", log, "--game", game, "--html", written)
        assert main_of(served(browser)) == main_of(written.read_text(encoding="utf-8"))


async def test_a_login_that_is_not_a_reader_is_refused(store: tuple[str, Path]) -> None:
    url, _ = store
    login = f"desk_{uuid.uuid4().hex[:8]}"
    await execute(url, f"CREATE ROLE {login} LOGIN PASSWORD 'pw'")
    try:
        other = make_url(url).set(username=login, password="pw")
        done = await asyncio.to_thread(
            referee, "desk", "--database", other.render_as_string(hide_password=False)
        )
    finally:
        await execute(url, f"DROP ROLE {login}")
    assert done.returncode == 3, done.stderr
    assert "GRANT referee_reader TO" in done.stderr


async def test_the_desk_reads_as_referee_reader_and_writes_nothing(
    store: tuple[str, Path],
) -> None:
    url, _ = store  # the tables' owner: the desk still acts as the reader
    engine = as_reader(create_engine(url))
    try:
        async with engine.connect() as conn:
            assert await conn.scalar(text("SELECT current_user")) == "referee_reader"
            assert await conn.scalar(text("SHOW transaction_read_only")) == "on"
        async with engine.connect() as conn:
            with pytest.raises(Exception, match="read-only transaction"):
                await conn.execute(text("CREATE TABLE desk_was_here (x int)"))
        found = await GameViews(engine).find(player=HOSTILE["bob"])
        assert [g.game_id for g in found] == ["golden-false-pass"]
        assert found[0].players == (HOSTILE["ann"], HOSTILE["bob"], HOSTILE["cid"])
    finally:
        await engine.dispose()
