"""The board drawn as SVG: the line, the spinner's arms, the trains and their markers, the
seats, the open ends, the boneyard's count, and the marks a verdict's evidence puts on them.

Everything drawn comes from a ``Step`` (already fit for its reader) and from the ``Marks`` the
page reads out of the evidence; nothing here knows a rule. Every tile drawn carries its tile
(``data-tile="a-b"``, smaller value first) and every end its place and value
(``data-place``, ``data-value``), so a test or a tool can read the drawing back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from referee.desk.steps import Step
from referee.desk.text import attr, esc
from referee.domain.tiles import Tile

U = 26
"""Half a tile's length: a tile is 2U by U."""
GAP = 2
R = 13
"""The radius of an end's badge."""
ROW = U + 34
"""The height of a train's row."""
TEAM_COLOURS = ("#dbeafe", "#fde68a", "#d1fae5", "#fbcfe8", "#e9d5ff", "#fed7aa")


@dataclass(slots=True)
class Marks:
    """What a step's verdicts draw on its board: classes on ends and seats, notes by the
    ends, ghost tiles at an end (a tile that would have played there, a play rejected)."""

    ends: dict[str, list[str]] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    ghosts: list[tuple[Tile, str, int | None, str]] = field(default_factory=list)
    """(tile, place, the value it matches there, class)."""
    seats: dict[str, list[str]] = field(default_factory=dict)

    def end(self, place: str, mark: str) -> None:
        """Puts a class on an end."""
        marks = self.ends.setdefault(place, [])
        if mark not in marks:
            marks.append(mark)

    def seat(self, player: str, mark: str) -> None:
        """Puts a class on a seat."""
        marks = self.seats.setdefault(player, [])
        if mark not in marks:
            marks.append(mark)


@dataclass(slots=True)
class _Canvas:
    parts: list[str] = field(default_factory=list)
    x0: float = 0
    y0: float = 0
    x1: float = 0
    y1: float = 0

    def grow(self, x: float, y: float, w: float, h: float) -> None:
        self.x0, self.y0 = min(self.x0, x), min(self.y0, y)
        self.x1, self.y1 = max(self.x1, x + w), max(self.y1, y + h)


def _tile(
    c: _Canvas, t: Tile, x: float, y: float, *, vertical: bool, cls: str = "t", extra: str = ""
) -> None:
    """Draws a tile as it lies, its first value left (or on top), its top left at (x, y)."""
    a, b = t
    key = f"{min(a, b)}-{max(a, b)}"
    w, h = (U, 2 * U) if vertical else (2 * U, U)
    c.grow(x, y, w, h)
    h1, h3 = U // 2, U + U // 2
    if vertical:
        frame = "#tv"
        texts = f'<text x="{h1}" y="{h1}">{a}</text><text x="{h1}" y="{h3}">{b}</text>'
    else:
        frame = "#th"
        texts = f'<text x="{h1}" y="{h1}">{a}</text><text x="{h3}" y="{h1}">{b}</text>'
    c.parts.append(
        f'<g class="{cls}" data-tile="{key}"{extra} transform="translate({x:g},{y:g})">'
        f'<use href="{frame}"/>{texts}</g>'
    )


FRAMES = (
    '<svg class="frames" width="0" height="0" aria-hidden="true"><defs>'
    f'<g id="th"><rect width="{2 * U}" height="{U}" rx="3"/>'
    f'<line x1="{U}" y1="0" x2="{U}" y2="{U}"/></g>'
    f'<g id="tv"><rect width="{U}" height="{2 * U}" rx="3"/>'
    f'<line x1="0" y1="{U}" x2="{U}" y2="{U}"/></g>'
    "</defs></svg>"
)
"""A tile's frame, lying and standing, drawn once a page: each tile uses one (its colours
are inherited from the tile's classes)."""


@dataclass(frozen=True, slots=True)
class _Anchor:
    x: float
    y: float
    dx: int
    dy: int


def _end(
    c: _Canvas, place: str, value: int, at: _Anchor, marks: Marks, *, named: bool = True
) -> None:
    """Draws an end's badge outward of ``at``, its name (``named``), its note, and the ghosts
    that mark it."""
    cx, cy = at.x + at.dx * (R + GAP), at.y + at.dy * (R + GAP)
    classes = " ".join(["end", *marks.ends.get(place, [])])
    c.grow(cx - R - 12, cy - R - 16, 2 * R + 24, 2 * R + 32)
    label_y = cy + R + 10 if at.dy >= 0 else cy - R - 4
    note = marks.notes.get(place)
    noted = (
        ""
        if note is None
        else f'<text class="note" x="{cx:g}" y="{cy - R - 4:g}">{esc(note)}</text>'
    )
    if note is not None:
        label_y = cy + R + 10
    c.parts.append(
        f'<g class="{classes}" data-place="{attr(place)}" data-value="{value}">'
        f'<circle cx="{cx:g}" cy="{cy:g}" r="{R}"/>'
        f'<text x="{cx:g}" y="{cy:g}">{value}</text>'
        + (f'<text class="label" x="{cx:g}" y="{label_y:g}">{esc(place)}</text>' if named else "")
        + f"{noted}</g>"
    )
    offset = 2 * R + 2 * GAP + 4
    extra = f' data-place="{attr(place)}"'
    for t, where, matched, cls in marks.ghosts:
        if where != place:
            continue
        a, b = t
        near, far = (a, b) if matched is None or a == matched else (b, a)
        gx, gy = at.x + at.dx * offset, at.y + at.dy * offset
        if at.dx:
            shown = (near, far) if at.dx > 0 else (far, near)
            x = gx if at.dx > 0 else gx - 2 * U
            _tile(c, shown, x, gy - U / 2, vertical=False, cls=f"t ghost {cls}", extra=extra)
        else:
            shown = (near, far) if at.dy > 0 else (far, near)
            y = gy if at.dy > 0 else gy - 2 * U
            _tile(c, shown, gx - U / 2, y, vertical=True, cls=f"t ghost {cls}", extra=extra)
        offset += 2 * U + 2 * GAP


def _line(c: _Canvas, step: Step, marks: Marks) -> None:
    board = step.board
    values = {e.place: e.value for e in step.ends}
    x = 0.0
    spin_x = 0.0
    for i, t in enumerate(board.line):
        vertical = t[0] == t[1] or i == board.spinner
        w, h = (U, 2 * U) if vertical else (2 * U, U)
        _tile(c, t, x, -h / 2, vertical=vertical, cls="t spinner" if i == board.spinner else "t")
        if i == board.spinner:
            spin_x = x + U / 2
        x += w + GAP
    right = x - GAP
    anchors = {"left": _Anchor(-GAP, 0, -1, 0), "right": _Anchor(right + GAP, 0, 1, 0)}
    if board.spinner is not None:
        y = -U - GAP
        for t in board.up:  # (the value by the spinner, the other): drawn upwards
            vertical = t[0] != t[1]
            w, h = (U, 2 * U) if vertical else (2 * U, U)
            _tile(c, (t[1], t[0]), spin_x - w / 2, y - h, vertical=vertical)
            y -= h + GAP
        anchors["up"] = _Anchor(spin_x, y, 0, -1)
        y = U + GAP
        for t in board.down:
            vertical = t[0] != t[1]
            w, h = (U, 2 * U) if vertical else (2 * U, U)
            _tile(c, t, spin_x - w / 2, y, vertical=vertical)
            y += h + GAP
        anchors["down"] = _Anchor(spin_x, y, 0, 1)
    for place, value in values.items():
        if place in anchors:
            _end(c, place, value, anchors[place], marks)


def _trains(c: _Canvas, step: Step, marks: Marks) -> None:
    board = step.board
    values = {e.place: e.value for e in step.ends}
    rows = len(step.trains)
    engine = board.engine if board.engine is not None else 0
    mid = rows * ROW / 2
    _tile(c, (engine, engine), 0, mid - U, vertical=True, cls="t engine")
    start = U + 30
    for i, (mark, tiles) in enumerate(zip(step.trains, board.trains, strict=True)):
        cy = i * ROW + ROW / 2 + 6
        state = "open" if mark.open else "closed"
        pending = " pending" if mark.pending else ""
        c.parts.append(
            f'<g class="train {state}{pending}" data-train="{attr(mark.name)}">'
            f'<path class="link" d="M{U} {mid:g} L{start - 4} {cy:g}"/>'
            f'<text class="label train-name" x="{start}" y="{cy - U / 2 - 6:g}">'
            f"train {esc(mark.name)} ({state}{', a double pending' if mark.pending else ''})"
            "</text>"
        )
        x = float(start)
        for j, t in enumerate(tiles):
            last = j == len(tiles) - 1
            cls = "t pending-double" if last and mark.pending else "t"
            _tile(c, t, x, cy - U / 2, vertical=False, cls=cls)
            x += 2 * U + GAP
        if mark.open:  # the marker that opens a personal train to everybody
            mx = x + 2 * R + 2 * GAP + 6
            c.parts.append(f'<path class="marker" d="M{mx:g} {cy + 8:g} l0 -16 l10 4 l-10 4"/>')
            c.grow(mx, cy - 10, 12, 20)
        c.parts.append("</g>")
        if mark.name in values:
            _end(c, mark.name, values[mark.name], _Anchor(x, cy, 1, 0), marks, named=False)
    c.grow(0, 0, start, rows * ROW)


def _seats(step: Step, marks: Marks, width: float) -> tuple[str, float]:
    """Draws the seats in the order of play (a team's colour, the tiles held, whose turn it
    is) and the boneyard's count; returns the drawing and its height."""
    parts = []
    x = 0.0
    teams: dict[str | None, str] = {}
    for seat in step.seats:
        colour = "#f3f4f6"
        if seat.team is not None:
            colour = teams.setdefault(seat.team, TEAM_COLOURS[len(teams) % len(TEAM_COLOURS)])
        label = seat.player + ("" if seat.team is None else f" ({seat.team})")
        w = 34 + 7.2 * len(label)
        classes = ["seat", *marks.seats.get(seat.player, [])]
        if step.turn == seat.player:
            classes.append("turn")
        turn = "&#9654; " if step.turn == seat.player else ""
        parts.append(
            f'<g class="{" ".join(classes)}" data-player="{attr(seat.player)}" '
            f'transform="translate({x:g},0)"><rect width="{w:g}" height="38" rx="6" '
            f'fill="{colour}"/><text x="8" y="15">{turn}{esc(label)}</text>'
            f'<text class="small" x="8" y="31">{seat.held} tiles</text></g>'
        )
        x += w + 6
    if step.boneyard is not None:
        parts.append(
            f'<g class="boneyard" data-count="{step.boneyard}" transform="translate({x:g},0)">'
            f'<rect width="96" height="38" rx="6"/><text x="8" y="15">boneyard</text>'
            f'<text class="small" x="8" y="31">{step.boneyard} tiles</text></g>'
        )
        x += 96
    return "".join(parts), max(x, width)


def board_svg(step: Step, marks: Marks) -> str:
    """Returns the step's board as one inline ``<svg>``."""
    c = _Canvas()
    if step.trains:
        _trains(c, step, marks)
    elif step.board.line:
        _line(c, step, marks)
    else:
        c.parts.append('<text class="label empty" x="0" y="0">no tile on the table yet</text>')
        c.grow(0, -U, 160, 2 * U)
    seats, seats_width = _seats(step, marks, 0)
    pad = 10
    width = max(c.x1 - c.x0, seats_width) + 2 * pad
    top = 38 + 18
    height = c.y1 - c.y0 + top + 2 * pad
    board = "".join(c.parts)
    return (
        f'<svg class="board" xmlns="http://www.w3.org/2000/svg" width="{width:g}" '
        f'height="{height:g}" viewBox="0 0 {width:g} {height:g}" role="img" '
        f'aria-label="the table after seq {step.seq}">'
        f'<g class="seats" transform="translate({pad},{pad})">{seats}</g>'
        f'<g class="layout" transform="translate({pad - c.x0:g},{pad + top - c.y0:g})">{board}</g>'
        "</svg>"
    )
