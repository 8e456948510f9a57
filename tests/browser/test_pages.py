"""The page of a game (``referee explain --html``) in a real browser, for every family.

Headless Chromium opens the page: the board at step N shows the tiles the referee's fold
says are on the table; the arrow keys, Home, End, ``#step-N`` and the verdict list step
through it; a false pass's evidence is drawn on the tile and the end its JSON names; and no
tile hidden from a view appears anywhere in that view's page, as the browser holds it (text,
attributes, scripts).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from referee.domain.secrecy import SPECTATOR
from referee.domain.tiles import Tile, tile
from tests.browser.games import (
    PAGE_FAMILIES,
    Game,
    family_game,
    tiles_in,
    views_of,
    write_page,
)

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SHOWN = ("block", "all_fives", "mexican_train", "partnership", "penalty")
"""The families whose page docs/disputes.md shows (REFEREE_SCREENSHOTS=docs/img)."""
GOLDEN_FALSE_PASS = ROOT / "tests" / "golden" / "false_pass_in_confirmation.jsonl"


def current(browser: WebDriver) -> str:
    """The id of the step the page shows; checks that it is the only one shown."""
    shown = browser.execute_script(
        "return Array.from(document.querySelectorAll('section.step'))"
        ".filter(s => s.getClientRects().length > 0).map(s => s.id)"
    )
    assert len(shown) == 1, shown
    return str(shown[0])


def open_page(browser: WebDriver, path: Path, step: int | None = None) -> None:
    browser.get(path.as_uri() + ("" if step is None else f"#step-{step}"))
    if step is not None:  # a page already open at another step moves on hashchange
        browser.execute_script(f"location.hash = '#step-{step}'")
    browser.find_element(By.CSS_SELECTOR, "section.step.current")


def board_tiles(browser: WebDriver, step: int) -> list[Tile]:
    """The tiles drawn on the table of a step (not the ghosts of the evidence), each of them
    rendered with a size."""
    drawn = browser.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]), g => "
        "[g.getAttribute('data-tile'), g.getBoundingClientRect().width > 0])",
        f"#step-{step} svg.board .layout g.t:not(.ghost)",
    )
    assert all(visible for _, visible in drawn)
    return sorted(tile(*map(int, str(key).split("-"))) for key, _ in drawn)


def explain_json(log: Path, game_id: str, view: str | None = None) -> list[dict[str, Any]]:
    args = [sys.executable, "-m", "referee", "explain", str(log), "--game", game_id, "--json"]
    if view is not None:
        args += ["--as", view]
    done = subprocess.run(args, capture_output=True, text=True, check=True, timeout=120)
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize("family", PAGE_FAMILIES)
def test_the_board_at_each_step_shows_the_tiles_the_fold_says(
    family: str, browser: WebDriver, tmp_path: Path, screenshots: Path | None
) -> None:
    game = family_game(family)
    path = write_page(game, None, tmp_path)
    seqs = sorted(game.on_table)
    # every step with a verdict, each round's last step, and a spread of the others
    browser.get(path.as_uri())
    verdicts = set(
        browser.execute_script(
            "return Array.from(document.querySelectorAll('section.step.has-verdict'), "
            "s => Number(s.getAttribute('data-seq')))"
        )
    )
    ends = {s for s in seqs if game.round_over.get(s) and not game.round_over.get(s - 1)}
    chosen = sorted(verdicts | ends | set(seqs[:: max(1, len(seqs) // 12)]))
    assert len(chosen) > 10
    open_page(browser, path)
    for seq in chosen:
        browser.execute_script(f"location.hash = '#step-{seq}'")
        assert current(browser) == f"step-{seq}"
        assert board_tiles(browser, seq) == game.on_table[seq], f"seq {seq}"
    assert any(game.on_table[s] for s in chosen)  # the table was not always empty
    if screenshots is not None and family in SHOWN:
        _screenshot(browser, path, game, screenshots)


def _screenshot(browser: WebDriver, path: Path, game: Game, where: Path) -> None:
    """Saves the family's page at its first verdict with evidence drawn on the board."""
    html = path.read_text(encoding="utf-8")
    marked = [
        seq
        for seq in sorted(game.on_table)
        if f'id="step-{seq}"' in html
        and any(
            cls in html.split(f'id="step-{seq}"', 1)[1].split("</section>", 1)[0]
            for cls in ("ghost", "end counted", "end blocked")
        )
    ]
    seq = marked[len(marked) // 2] if marked else sorted(game.on_table)[-1]
    open_page(browser, path, seq)
    shoot(browser, where / f"desk-{game.family}.png")


def shoot(browser: WebDriver, png: Path) -> None:
    """Saves what the window shows, from the top of the page."""
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(str(png))


@pytest.mark.parametrize("family", ["block", "mexican_train"])
def test_stepping_with_the_keys_the_links_and_the_verdict_list(
    family: str, browser: WebDriver, tmp_path: Path
) -> None:
    game = family_game(family)
    path = write_page(game, None, tmp_path)
    seqs = sorted(game.on_table)
    first, last = seqs[0], seqs[-1]
    middle = seqs[len(seqs) // 2]

    browser.get(path.as_uri())
    assert current(browser) == f"step-{first}"  # no link: the first step
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.ARROW_RIGHT)
    assert current(browser) == f"step-{first + 1}"
    assert browser.current_url.endswith(f"#step-{first + 1}")
    body.send_keys(Keys.ARROW_RIGHT, Keys.ARROW_RIGHT)
    assert current(browser) == f"step-{first + 3}"
    body.send_keys(Keys.ARROW_LEFT)
    assert current(browser) == f"step-{first + 2}"
    body.send_keys(Keys.END)
    assert current(browser) == f"step-{last}"
    body.send_keys(Keys.ARROW_RIGHT)  # past the last: stays
    assert current(browser) == f"step-{last}"
    body.send_keys(Keys.HOME)
    assert current(browser) == f"step-{first}"
    body.send_keys(Keys.ARROW_LEFT)
    assert current(browser) == f"step-{first}"
    browser.back()  # the steps taken are in the history
    assert current(browser) == f"step-{last}"

    browser.get(path.as_uri() + f"#step-{middle}")  # a link to a step opens it
    assert current(browser) == f"step-{middle}"
    assert board_tiles(browser, middle) == game.on_table[middle]
    browser.find_element(By.CSS_SELECTOR, f"#step-{middle} a[data-rel=next]").click()
    assert current(browser) == f"step-{middle + 1}"

    entries = browser.find_elements(By.CSS_SELECTOR, "nav.verdict-list a")
    assert entries
    target = entries[-1]
    seq = str(target.get_attribute("href")).rsplit("#step-", 1)[1]
    target.click()
    assert current(browser) == f"step-{seq}"
    assert "current" in str(target.get_attribute("class"))
    shown = browser.find_element(By.CSS_SELECTOR, f"#step-{seq}")
    verdict_id = str(target.get_attribute("data-verdict"))
    assert shown.find_element(By.ID, f"verdict-{verdict_id}").is_displayed()


def test_every_step_reads_without_javascript(browser: WebDriver, tmp_path: Path) -> None:
    """With scripts off every step is shown, one after the other, each with its board: the
    script only hides all but one."""
    game = family_game("block")
    path = write_page(game, None, tmp_path)
    browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        browser.get(path.as_uri())
        sections = browser.find_elements(By.CSS_SELECTOR, "section.step")
        assert [s.get_attribute("id") for s in sections] == [
            f"step-{seq}" for seq in sorted(game.on_table)
        ]
        assert all(s.is_displayed() for s in sections[:3] + sections[-3:])
        boards = browser.find_elements(By.CSS_SELECTOR, "section.step svg.board")
        assert len(boards) == len(sections)
        assert not browser.find_elements(By.CSS_SELECTOR, "section.step.current")
    finally:
        browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})


@pytest.mark.parametrize("family", ["golden", *PAGE_FAMILIES])
def test_a_false_pass_is_drawn_on_the_tile_and_the_end_the_json_names(
    family: str, browser: WebDriver, tmp_path: Path, screenshots: Path | None
) -> None:
    if family == "golden":
        lines = GOLDEN_FALSE_PASS.read_bytes().splitlines()
        game = Game("golden", "golden-false-pass", lines, ("ann", "bob", "cid"))
    else:
        game = family_game(family)
    log = tmp_path / "game.jsonl"
    log.write_bytes(b"\n".join(game.lines) + b"\n")
    passes = [
        e for e in explain_json(log, game.game_id) if e["verdict"].get("foul") == "false_pass"
    ]
    assert passes
    path = write_page(game, None, tmp_path)
    open_page(browser, path)
    for explained in passes:
        seq = explained["cause_seq"]
        open_page(browser, path, seq)
        assert current(browser) == f"step-{seq}"
        section = browser.find_element(By.ID, f"step-{seq}")
        playable = explained["evidence"]["playable"]
        assert playable, explained
        named = {(tuple(p["tile"]), p["place"]) for p in playable}
        ghosts = section.find_elements(By.CSS_SELECTOR, "svg.board g.t.ghost.playable")
        drawn = set()
        at: dict[str, list[dict[str, float]]] = {}
        for ghost in ghosts:
            a, b = str(ghost.get_attribute("data-tile")).split("-")
            place = str(ghost.get_attribute("data-place"))
            drawn.add(((int(a), int(b)), place))
            assert ghost.is_displayed()
            at.setdefault(place, []).append(ghost.rect)
        assert drawn == named
        for place, boxes in at.items():  # drawn at that end, one beyond the other
            end = section.find_element(
                By.CSS_SELECTOR, f'svg.board g.end.match[data-place="{place}"] circle'
            )
            assert end.is_displayed()
            assert _chained(end.rect, boxes), (place, end.rect, boxes)
        actor = explained["verdict"]["player"]
        lit = section.find_elements(
            By.CSS_SELECTOR, f'ul.hands li[data-player="{actor}"] .tile.playable'
        )
        assert {tuple(map(int, str(t.get_attribute("data-tile")).split("-"))) for t in lit} == {
            t for t, _ in named
        }
    if screenshots is not None and family == "golden":
        open_page(browser, path, passes[0]["cause_seq"])
        shoot(browser, screenshots / "desk-false-pass.png")


def _chained(end: dict[str, float], boxes: list[dict[str, float]]) -> bool:
    """Checks that the ghosts of an end lie in a row from it: the nearest next to the end,
    each of the others next to one nearer."""
    placed = [end]
    rest = sorted(boxes, key=lambda b: math.hypot(b["x"] - end["x"], b["y"] - end["y"]))
    for box in rest:
        if not _near(placed[-1], box):
            return False
        placed.append(box)
    return True


def _near(a: dict[str, float], b: dict[str, float]) -> bool:
    """Checks that two drawn boxes are neighbours: their gap is under a tile's width."""
    dx = max(0.0, max(a["x"], b["x"]) - min(a["x"] + a["width"], b["x"] + b["width"]))
    dy = max(0.0, max(a["y"], b["y"]) - min(a["y"] + a["height"], b["y"] + b["height"]))
    return math.hypot(dx, dy) < 20


@pytest.mark.parametrize("family", PAGE_FAMILIES)
def test_no_tile_hidden_from_a_view_appears_in_its_page(
    family: str, browser: WebDriver, tmp_path: Path
) -> None:
    game = family_game(family)
    auditor = write_page(game, None, tmp_path)
    _open(browser, auditor)
    # the detector finds secrets where they are: the auditor's page shows every hand
    seen_by_auditor = _by_step(browser)
    assert any(game.secrets(seq, SPECTATOR) & tiles for seq, tiles in seen_by_auditor.items()), (
        "the auditor's page shows no hand: the check below could not fail"
    )
    for view in views_of(game):
        reader = None if view == SPECTATOR else view
        path = write_page(game, view, tmp_path)
        _open(browser, path)
        outside = str(
            browser.execute_script(
                "const page = document.documentElement.cloneNode(true);"
                "page.querySelectorAll('section.step').forEach(s => s.remove());"
                "return page.outerHTML"
            )
        )
        assert "section" not in outside.split("<main>", 1)[1].split("</main>", 1)[0]
        assert not tiles_in(outside), f"tiles outside the steps of {view}'s page"
        scripts = browser.execute_script(
            "return Array.from(document.scripts, s => s.textContent).join('\\n')"
        )
        assert not tiles_in(str(scripts))
        assert game.game_id not in str(scripts)  # the script holds no game data at all
        for seq, tiles in _by_step(browser).items():
            leaked = game.secrets(seq, reader) & tiles
            assert not leaked, f"{sorted(leaked)} reached {view} at seq {seq}"


def _open(browser: WebDriver, path: Path) -> None:
    browser.get(path.as_uri())
    browser.find_element(By.CSS_SELECTOR, "section.step.current")


def _by_step(browser: WebDriver) -> dict[int, set[Tile]]:
    """The tiles each step's section names, as the browser holds the document."""
    sections = browser.execute_script(
        "return Array.from(document.querySelectorAll('section.step'), "
        "s => [s.getAttribute('data-seq'), s.outerHTML])"
    )
    return {int(seq): tiles_in(str(html)) for seq, html in sections}
