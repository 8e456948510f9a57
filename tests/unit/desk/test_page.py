"""The page of a game, without a browser: hostile ids are text, never markup; the page's
script and style hold no game data; ``referee explain --html`` refuses what it cannot do.

A log's player ids may hold anything but a control character (quotes, markup, a right-to-left
override); its game ids only ``A-Z a-z 0-9 . _ : -``. The page is made safe for any text all
the same: the game id below, with markup and control characters, is put in by hand."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from referee.cli.desk import words
from referee.contracts.rejection import FileSource
from referee.desk.page import CSP, SCRIPT, STYLE, page
from referee.desk.steps import NotSeatedError, steps_of
from referee.desk.text import visible
from referee.domain.secrecy import viewer
from referee.processing.referee import Referee
from tests.hostile_ids import HOSTILE, HOSTILE_GAME, hostile_log

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden" / "false_pass_in_confirmation.jsonl"


def make_page(log: Path, game_id: str, view: str | None, shown_as: str | None = None) -> str:
    """The page of a game of a log; ``shown_as``: another game id, put in by hand."""
    lines = log.read_bytes().splitlines()
    records = ((line, FileSource("t", n)) for n, line in enumerate(lines, 1))
    steps = steps_of(records, game_id, viewer(view), Referee())
    assert steps is not None
    if shown_as is not None:
        steps = dataclasses.replace(steps, game_id=shown_as)
    return page(steps, words())


class Tags(HTMLParser):
    """Every start tag with its attributes, the text of each script, and the whole text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        self._in = tag

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts.append(data)
        self.text.append(data)


@pytest.mark.parametrize("view", [None, "spectator", HOSTILE["cid"], HOSTILE["ann"]])
def test_hostile_ids_are_text_never_markup(tmp_path: Path, view: str | None) -> None:
    log = hostile_log(tmp_path)
    html = make_page(log, "golden-false-pass", view, HOSTILE_GAME)
    parsed = Tags()
    parsed.feed(html)

    # the page's own markup only: one script (its own), no handler, no image, no extra tag
    assert [t for t, _ in parsed.tags if t == "script"] == ["script"]
    assert parsed.scripts == [SCRIPT]
    assert not [t for t, _ in parsed.tags if t == "img"]
    assert not [(t, a) for t, attrs in parsed.tags for a, _ in attrs if a.startswith("on")]
    # no control or format character reaches the page: each is written as its escape
    assert "\x1b" not in html
    assert "\u202e" not in html
    assert "\x07" not in html
    text = "".join(parsed.text)
    assert visible(HOSTILE["cid"]) in text
    assert "c\\u202eid</svg><img src=x onerror=alert(3)>" in text
    assert HOSTILE["ann"] in text  # as text: the parser read it as characters
    assert "g</title><script>alert(1)</script>\\x1b[31m\\x07'\"&amp;" in text
    title = html.split("<title>", 1)[1].split("</title>", 1)[0]
    assert "<" not in title
    # attribute values hold the ids escaped: the players' data attributes read back whole
    players = {v for _, attrs in parsed.tags for a, v in attrs if a == "data-player"}
    assert players == {visible(HOSTILE[p]) for p in ("ann", "bob", "cid")}


def test_the_script_and_the_style_hold_no_game_data(tmp_path: Path) -> None:
    html = make_page(hostile_log(tmp_path), "golden-false-pass", None, HOSTILE_GAME)
    assert html.count("<script>") == 1
    assert f"<style>{STYLE}</style>" in html
    assert f"<script>{SCRIPT}</script>" in html
    assert f'content="{CSP}"' in html  # only this style and this script may run
    for data in (r"[\[{]\d+[,|]\d+[\]}]", "data-tile=", "ann", "alert", "golden"):
        assert re.search(data, SCRIPT) is None
        assert re.search(data, STYLE) is None


def test_a_player_not_at_the_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotSeatedError):
        make_page(GOLDEN, "golden-false-pass", "dee")


def referee(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "referee", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ((), "give --game ID"),
        (("--game", "golden-false-pass", "--json"), "not both"),
        (("--game", "golden-false-pass", "--seq", "8"), "#step-N"),
        (("--game", "nowhere"), "no game 'nowhere'"),
        (("--game", "golden-false-pass", "--as", "dee"), "no such player"),
    ],
)
def test_explain_html_refuses_what_it_cannot_do(
    tmp_path: Path, extra: tuple[str, ...], said: str
) -> None:
    out = tmp_path / "page.html"
    done = referee("explain", GOLDEN, "--html", out, *extra)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
    assert not out.exists()


def test_explain_html_writes_the_page(tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    done = referee("explain", GOLDEN, "--game", "golden-false-pass", "--as", "ann", "--html", out)
    assert done.returncode == 0, done.stderr
    html = out.read_text(encoding="utf-8")
    assert html == make_page(GOLDEN, "golden-false-pass", "ann")
    assert "16 steps, 3 verdicts" in done.stderr
