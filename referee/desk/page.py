"""A game's page: one self-contained HTML file, every step rendered, the board drawn at each.

The page is made from a game's ``Steps`` (``steps.py``), already fit for their reader, and
from the evidence of each verdict, in the words of ``referee explain`` (handed in as
``Words``: the page has no words of its own for the evidence, and no rules). Every step is in
the file, so it reads without JavaScript; the script only shows one step at a time and steps
with the arrow keys, Home and End. The script and the style hold no game data.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Sequence
from typing import NamedTuple

from referee.desk.drawing import FRAMES, Marks, board_svg
from referee.desk.steps import GameSteps, Step
from referee.desk.text import attr, esc
from referee.domain.evidence import (
    BlockFacts,
    CountFacts,
    Evidence,
    HandFacts,
    HeldHand,
    PlaceFacts,
    PlayableFacts,
    RoundFacts,
    TurnFacts,
)
from referee.domain.tiles import Tile
from referee.usecases.explanations import Explained, Opened


class Words(NamedTuple):
    """The words of ``referee explain`` the page uses: a game's head and a verdict's facts."""

    opened: Callable[[Opened], list[str]]
    facts: Callable[[Evidence], list[str]]


def page(game: GameSteps, words: Words, links: Sequence[tuple[str, str]] = ()) -> str:
    """Returns the whole page of a game; ``links`` (label, address) go in its header."""
    steps = game.steps
    parts = [
        "<!doctype html>\n",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>game {esc(game.game_id)} as {esc(game.view)} sees it</title>",
        f"<style>{STYLE}</style></head><body>",
        FRAMES,
        _header(game, words, links),
        '<div class="main"><nav class="verdict-list" aria-label="verdicts">',
        _verdict_list(steps),
        "</nav><main>",
    ]
    ids = [f"step-{s.seq}" for s in steps]
    for i, step in enumerate(steps):
        parts.append(_step(step, words, ids, i))
    parts += ["</main></div>", f"<script>{SCRIPT}</script></body></html>\n"]
    return "".join(parts)


def _header(game: GameSteps, words: Words, links: Sequence[tuple[str, str]]) -> str:
    lines = words.opened(game.opened)
    shown = "".join(f"<li>{esc(line)}</li>" for line in lines[1:])
    nav = " · ".join(f'<a href="{attr(href)}">{esc(label)}</a>' for label, href in links)
    view = {
        "auditor": "the auditor's view: every hand at every moment",
        "spectator": "a spectator's view: no hand until its round ends",
    }.get(game.view, f"{game.view}'s view: their own hand, every hand once a round ends")
    return (
        f'<header><h1>game <span class="id">{esc(game.game_id)}</span></h1>'
        f'<p class="view" data-view="{attr(game.view)}">{esc(view)}</p>'
        + (f'<p class="links">{nav}</p>' if links else "")
        + f'<ul class="head">{shown}</ul>'
        '<p class="keys">step with &larr; and &rarr;, Home and End; every step has its '
        "link (#step-N)</p></header>"
    )


def verdict_title(chapter: Explained) -> str:
    """Returns a verdict's name: its type, a foul's kind and whether the action stood."""
    verdict = chapter.verdict
    kind = str(verdict.__struct_config__.tag)
    foul = getattr(verdict, "foul", None)
    if foul is None:
        return kind
    how = (
        "applied: the action stood"
        if getattr(verdict, "applied", False)
        else ("rejected: nothing changed")
    )
    return f"{kind} {foul} ({how})"


def _verdict_list(steps: Sequence[Step]) -> str:
    items = []
    for step in steps:
        for chapter in step.verdicts:
            actor = chapter.evidence.actor
            who = "" if actor is None else f" · {actor}"
            items.append(
                f'<li><a href="#step-{step.seq}" data-verdict="{attr(chapter.verdict.verdict_id)}">'
                f"seq {step.seq} · round {chapter.verdict.round} · "
                f"{esc(verdict_title(chapter))}{esc(who)}</a></li>"
            )
    if not items:
        return "<h2>verdicts</h2><p>none</p>"
    return f"<h2>verdicts ({len(items)})</h2><ol>{''.join(items)}</ol>"


def _stepper(ids: Sequence[str], i: int) -> str:
    last = len(ids) - 1

    def link(label: str, j: int, rel: str) -> str:
        if j == i or j < 0 or j > last:
            return f'<span class="off">{label}</span>'
        return f'<a href="#{ids[j]}" data-rel="{rel}">{label}</a>'

    return (
        '<nav class="stepper">'
        f"{link('&laquo; first', 0, 'first')} {link('&lsaquo; previous', i - 1, 'prev')} "
        f'<span class="where">step {i + 1} of {last + 1}</span> '
        f"{link('next &rsaquo;', i + 1, 'next')} {link('last &raquo;', last, 'last')}</nav>"
    )


def _step(step: Step, words: Words, ids: Sequence[str], i: int) -> str:
    marks = marks_of(step)
    round_text = "" if step.round is None else f", round {step.round}"
    dealt = ""
    if step.dealt is not None:
        d = step.dealt
        sizes = ", ".join(f"{p} {n}" for p, n in d.hand_sizes.items())
        engine = "" if d.engine is None else f"; engine [{d.engine}|{d.engine}]"
        dealt = (
            f'<p class="dealt">dealt (tiles in each hand): {esc(sizes)}; boneyard {d.boneyard}; '
            f"{esc(d.leader)} leads{engine}</p>"
        )
    over = ' <span class="over">(the round is over: every hand is shown)</span>'
    classes = "step" + (" has-verdict" if step.verdicts else "")
    return (
        f'<section class="{classes}" id="step-{step.seq}" data-seq="{step.seq}"'
        f' data-round="{"" if step.round is None else step.round}">'
        + _stepper(ids, i)
        + f"<h2>seq {step.seq}{round_text}: {esc(step.action)}</h2>"
        + dealt
        + f'<div class="table">{board_svg(step, marks)}</div>'
        + '<div class="side">'
        + _hands(step, marks)
        + (over if step.round_over else "")
        + _scores(step)
        + "</div>"
        + "".join(_verdict(chapter, words) for chapter in step.verdicts)
        + "</section>"
    )


def _tiles(tiles: Sequence[Tile], mark: Callable[[Tile], str] | None = None) -> str:
    return "".join(
        f'<span class="tile{"" if mark is None else mark(t)}" data-tile="{t[0]}-{t[1]}" '
        f'title="[{t[0]},{t[1]}]"><b>{t[0]}</b><b>{t[1]}</b></span>'
        for t in tiles
    )


def _hands(step: Step, marks: Marks) -> str:
    rows = []
    playable = {
        (chapter.evidence.actor, p.tile)
        for chapter in step.verdicts
        if isinstance(chapter.evidence.facts, PlayableFacts)
        for p in chapter.evidence.facts.playable or ()
    }
    for seat in step.seats:
        if seat.hand is None:
            shown = '<span class="tile back"></span>' * seat.held
            note = f'<span class="secret">{seat.held} tiles, secret from this view</span>'
        else:
            player = seat.player

            def mark(t: Tile, player: str = player) -> str:
                return " playable" if (player, t) in playable else ""

            shown = _tiles(seat.hand, mark) if seat.hand else '<span class="none">no tile</span>'
            note = ""
        classes = " ".join(["hand", *marks.seats.get(seat.player, [])])
        rows.append(
            f'<li class="{classes}" data-player="{attr(seat.player)}">'
            f'<span class="who">{esc(seat.player)}</span>{shown}{note}</li>'
        )
    return f'<h3>hands</h3><ul class="hands">{"".join(rows)}</ul>'


def _scores(step: Step) -> str:
    rows = "".join(
        f'<tr data-side="{attr(s.side)}"><td>{esc(s.side)}</td>'
        f"<td>{esc(', '.join(s.members)) if s.members != (s.side,) else ''}</td>"
        f'<td class="n">{s.score}</td></tr>'
        for s in step.sides
    )
    return f'<table class="scores"><caption>scores</caption>{rows}</table>'


def _verdict(chapter: Explained, words: Words) -> str:
    evidence = chapter.evidence
    verdict = chapter.verdict
    facts = evidence.facts
    foul = getattr(verdict, "foul", None)
    lines = "".join(f"<li>{esc(line)}</li>" for line in words.facts(evidence))
    withheld = ""
    if evidence.withheld:
        withheld = (
            f'<p class="withheld">withheld from this view until the round ends: '
            f"{esc(', '.join(evidence.withheld))}</p>"
        )
    drawn = ""
    if isinstance(facts, BlockFacts | RoundFacts):
        drawn = _held(facts.hands, block=isinstance(facts, BlockFacts))
    return (
        f'<article class="verdict" id="verdict-{attr(verdict.verdict_id)}" '
        f'data-type="{attr(str(verdict.__struct_config__.tag))}"'
        + ("" if foul is None else f' data-foul="{attr(str(foul))}"')
        + f"><h3>{esc(verdict_title(chapter))}</h3>"
        f'<p class="rule">{esc(evidence.rule)} · '
        f'<span class="vid">{esc(verdict.verdict_id)}</span></p>'
        f'<ul class="evidence">{lines}</ul>{drawn}{withheld}</article>'
    )


def _held(hands: Sequence[HeldHand], *, block: bool) -> str:
    """Draws each hand against the places open to its holder (a block) or with its pips."""
    rows = []
    for hand in hands:
        places = "".join(
            f'<span class="place" data-place="{attr(p.place)}">{esc(p.place)} {p.value}</span>'
            for p in hand.places or ()
        )
        values = sorted({p.value for p in hand.places or ()})
        if block:
            verdict = f"no tile shows {' or '.join(map(str, values)) or 'anything open'}"
        else:
            verdict = f"{hand.pips} pips"
        rows.append(
            f'<tr data-player="{attr(hand.player)}"><td>{esc(hand.player)}</td>'
            f"<td>{places}</td><td>{_tiles(hand.hand) or 'none'}</td><td>{esc(verdict)}</td></tr>"
        )
    head = "places open to them" if block else "places"
    return (
        f'<table class="held"><tr><th>player</th><th>{head}</th><th>hand</th><th></th></tr>'
        f"{''.join(rows)}</table>"
    )


def marks_of(step: Step) -> Marks:
    """Returns what the step's verdicts draw on its board, read from their evidence."""
    marks = Marks()
    for chapter in step.verdicts:
        evidence = chapter.evidence
        facts = evidence.facts
        actor = evidence.actor
        if actor is not None:
            marks.seat(actor, "actor")
        if isinstance(facts, PlayableFacts):
            for p in facts.places or ():
                marks.end(p.place, "open-to-actor")
            for play in facts.playable or ():
                if play.place is not None:
                    marks.end(play.place, "match")
                    marks.ghosts.append((play.tile, play.place, play.value, "playable"))
        elif isinstance(facts, PlaceFacts):
            for p in facts.places or ():
                marks.end(p.place, "open-to-actor")
            named = facts.end if facts.end is not None else facts.train
            if named is not None:
                marks.end(named, "named")
                if facts.tile is not None:
                    marks.ghosts.append((facts.tile, named, None, "rejected"))
        elif isinstance(facts, TurnFacts):
            marks.seat(facts.turn, "whose-turn")
        elif isinstance(facts, HandFacts):
            pass
        elif isinstance(facts, CountFacts):
            for e in facts.ends:
                marks.end(e.end, "counted")
                marks.notes[e.end] = f"x{e.times}"
        elif isinstance(facts, BlockFacts):
            for p in facts.open_ends:
                marks.end(p.place, "blocked")
    return marks


STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#111;background:#fafaf9}
header{padding:10px 16px;background:#1f2937;color:#f9fafb}
header h1{margin:0;font-size:20px}header a{color:#93c5fd}
header ul.head{margin:4px 0;padding-left:18px}.keys{margin:0;color:#9ca3af;font-size:12px}
.main{display:flex;align-items:flex-start}
nav.verdict-list{flex:0 0 280px;max-height:calc(100vh - 20px);overflow:auto;padding:8px 12px;
border-right:1px solid #ddd;position:sticky;top:0;font-size:13px}
nav.verdict-list ol{padding-left:20px;margin:0}
nav.verdict-list a.current{font-weight:bold;background:#fef3c7}
main{flex:1;padding:8px 16px;min-width:0}
section.step{border-bottom:1px solid #ddd;padding-bottom:12px}
.js section.step{display:none;border:0}.js section.step.current{display:block}
section.step h2{font-size:17px;margin:6px 0}
.stepper{font-size:13px}.stepper .off{color:#9ca3af}.stepper .where{margin:0 8px}
.table{overflow-x:auto;background:#14532d;border-radius:8px;padding:4px;margin:6px 0}
svg.board{display:block;max-width:none}
svg.board text{font:bold 15px system-ui,sans-serif;text-anchor:middle;dominant-baseline:central}
svg.frames{position:absolute;width:0;height:0}
svg.board .t{fill:#fffdf5;stroke:#111;stroke-width:1.2}svg.board .t text{fill:#111;stroke:none}
svg.board .t.spinner,svg.board .t.engine{fill:#fde68a}
svg.board .t.pending-double{fill:#fecaca;stroke:#b91c1c;stroke-width:2.5}
svg.board .t.ghost{fill:#dcfce7;stroke:#16a34a;stroke-width:2.5;stroke-dasharray:4 2}
svg.board .t.ghost.rejected{fill:#fee2e2;stroke:#dc2626}
svg.board .end circle{fill:#e5e7eb;stroke:#374151;stroke-width:1.5}
svg.board .end.open-to-actor circle{fill:#bfdbfe;stroke:#1d4ed8}
svg.board .end.match circle{fill:#86efac;stroke:#15803d;stroke-width:3}
svg.board .end.named circle{fill:#fecaca;stroke:#b91c1c;stroke-width:3}
svg.board .end.blocked circle{fill:#fca5a5;stroke:#7f1d1d;stroke-width:3}
svg.board .end.counted circle{fill:#fde68a;stroke:#92400e;stroke-width:3}
svg.board text.label,svg.board text.note,svg.board .seat text.small,svg.board .boneyard text.small
{font:11px system-ui,sans-serif;fill:#f9fafb}
svg.board text.note{fill:#fde68a;font-weight:bold}
svg.board .seats text{text-anchor:start;fill:#111;font-size:12px}
svg.board .seats text.small{fill:#374151}
svg.board .seat rect{stroke:#374151}svg.board .seat.turn rect{stroke:#facc15;stroke-width:3}
svg.board .seat.actor rect{stroke:#dc2626;stroke-width:3}
svg.board .boneyard rect{fill:#d6d3d1;stroke:#374151}
svg.board .train text.train-name{text-anchor:start}
svg.board .train path.link{stroke:#a3a3a3;fill:none;stroke-dasharray:3 3}
svg.board .train.closed text.train-name{fill:#d1d5db}
svg.board path.marker{fill:#f59e0b;stroke:#78350f}
svg.board text.empty{text-anchor:start;fill:#f9fafb}
.side{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.side h3{margin:4px 0;font-size:14px;width:100%}
ul.hands{list-style:none;padding:0;margin:0}ul.hands li{margin:3px 0}
ul.hands .who{display:inline-block;min-width:110px;font-weight:600}
li.hand.actor .who{color:#b91c1c}
.tile{display:inline-flex;border:1.5px solid #111;border-radius:3px;margin:1px;background:#fffdf5}
.tile b{display:inline-block;width:16px;text-align:center;font-size:12px}
.tile b+b{border-left:1px solid #111}
.tile.back{width:32px;height:17px;background:#4b5563;vertical-align:middle}
.tile.playable{background:#86efac;border-color:#15803d;box-shadow:0 0 0 2px #15803d}
.secret{color:#6b7280;font-size:12px;margin-left:6px}
table.scores{border-collapse:collapse}
table.scores td{padding:1px 8px;border-bottom:1px solid #e5e7eb}
table.scores caption{text-align:left;font-weight:600}td.n{text-align:right}
article.verdict{border-left:4px solid #2563eb;background:#fff;padding:6px 12px;margin:10px 0}
article.verdict[data-type=FoulRecorded]{border-color:#dc2626}
article.verdict h3{margin:2px 0;font-size:15px}.rule{margin:0;color:#4b5563;font-size:12px}
ul.evidence{margin:4px 0;padding-left:18px}
table.held{border-collapse:collapse;margin:4px 0}table.held td,table.held th{padding:2px 6px;
text-align:left;border-bottom:1px solid #e5e7eb}
.place{display:inline-block;background:#fca5a5;border-radius:8px;padding:0 6px;margin:1px}
.withheld{color:#6b7280;font-style:italic}.over{color:#92400e}
"""

SCRIPT = """
(function () {
  var steps = Array.prototype.slice.call(document.querySelectorAll('section.step'));
  if (!steps.length) { return; }
  document.documentElement.classList.add('js');
  var links = Array.prototype.slice.call(document.querySelectorAll('nav.verdict-list a'));
  var current = -1;
  function indexOf(hash) {
    for (var i = 0; i < steps.length; i++) {
      if ('#' + steps[i].id === hash) { return i; }
    }
    return -1;
  }
  function show(i) {
    i = Math.max(0, Math.min(steps.length - 1, i));
    if (current >= 0) { steps[current].classList.remove('current'); }
    current = i;
    steps[i].classList.add('current');
    var hash = '#' + steps[i].id;
    links.forEach(function (a) {
      a.classList.toggle('current', a.getAttribute('href') === hash);
    });
    document.body.setAttribute('data-step', steps[i].id);
  }
  function go(i) {
    i = Math.max(0, Math.min(steps.length - 1, i));
    if (i === current) { return; }
    show(i);
    history.pushState(null, '', '#' + steps[i].id);
  }
  window.addEventListener('hashchange', function () {
    var i = indexOf(location.hash);
    if (i >= 0) { show(i); }
  });
  window.addEventListener('popstate', function () {
    var i = indexOf(location.hash);
    show(i >= 0 ? i : 0);
  });
  document.addEventListener('keydown', function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) { return; }
    var t = e.target;
    if (t && t.closest && t.closest('input, textarea, select')) { return; }
    if (e.key === 'ArrowRight') { go(current + 1); }
    else if (e.key === 'ArrowLeft') { go(current - 1); }
    else if (e.key === 'Home') { go(0); }
    else if (e.key === 'End') { go(steps.length - 1); }
    else { return; }
    e.preventDefault();
  });
  var start = indexOf(location.hash);
  show(start >= 0 ? start : 0);
  window.addEventListener('load', function () { window.scrollTo(0, 0); });
})();
"""


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


CSP = (
    f"default-src 'none'; style-src {_sha256(STYLE)}; script-src {_sha256(SCRIPT)}; "
    "form-action 'self'; base-uri 'none'"
)
"""Only the page's own style and script apply: an id that slipped through as markup could
run nothing (the desk sends it as a header too)."""
