"""The games the page tests open, the pages made of them, and what the auditor's fold says of
each step: the tiles on the table, and the tiles each reader may not see then.

The expectations are read from the referee's state after each event (every hand and the
boneyard), not from the page's own fold: the tiles on the table are the engine and every
tile a play took out of its player's hand in the round; a reader's secrets are the other
hands while the round is in play and the boneyard at every moment, less a tile the reader
named in their own action (as ``tests/property/test_explain_secrecy.py`` defines them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from referee.cli.desk import words
from referee.contracts.parse import parse_event
from referee.contracts.rejection import FileSource
from referee.contracts.wire import GameStartedWire, InputEvent
from referee.desk.page import page
from referee.desk.steps import steps_of
from referee.domain.events import RoundStarted, TileDrawn, TilePlayed
from referee.domain.secrecy import SPECTATOR, viewer
from referee.domain.tiles import Tile, sorted_tiles, tile
from referee.processing.referee import Referee
from tests.families import FAMILIES, family_games

PAGE_FAMILIES = sorted(name for name in FAMILIES if name != "mixed")
"""Every family of the rulebook (line: block and draw; spinner with play scoring: All Fives,
threes, fives and threes; trains; partnerships; penalty scoring)."""


@dataclass
class Game:
    """A simulated game of a family, and the auditor's facts after each seq."""

    family: str
    game_id: str
    lines: list[bytes]
    players: tuple[str, ...]
    on_table: dict[int, list[Tile]] = field(default_factory=dict)
    hands: dict[int, dict[str, set[Tile]]] = field(default_factory=dict)
    boneyard: dict[int, set[Tile]] = field(default_factory=dict)
    round_over: dict[int, bool] = field(default_factory=dict)
    named: dict[int, tuple[str, Tile]] = field(default_factory=dict)
    """The tile an action named, by seq, with its actor."""

    def secrets(self, seq: int, reader: str | None) -> set[Tile]:
        """The tiles ``reader`` (``None``: a spectator) may not see after ``seq``."""
        hidden = set(self.boneyard.get(seq, set()))
        if not self.round_over.get(seq, True):
            for player, hand in self.hands[seq].items():
                if player != reader:
                    hidden |= hand
        named = self.named.get(seq)
        if named is not None and named[0] == reader:
            hidden.discard(named[1])
        return hidden


@cache
def family_game(family: str) -> Game:
    """The first game of a family that ``simulate`` plays (seed 3, fouls of every kind) with
    a false pass in it."""
    games = family_games(family, 8, games=60, seed=3, foul_rate=0.25)
    game_id, lines = next((g, ls) for g, ls in games.items() if _false_pass_in(ls))
    first = parse_event(lines[0])
    assert isinstance(first, GameStartedWire)
    game = Game(family, game_id, lines, tuple(first.players))
    referee = Referee()
    table: list[Tile] = []
    held: dict[str, set[Tile]] = {}
    for number, line in enumerate(lines, 1):
        parsed = referee.parse(line)
        result = referee.apply(line, FileSource("sim", number), parsed)
        if not result.took_place or result.seq is None:
            continue
        seq = result.seq
        state = referee.games[game_id].state
        rnd = state.round
        event = parsed.to_domain() if isinstance(parsed, InputEvent) else None
        if isinstance(event, TilePlayed | TileDrawn):
            game.named[seq] = (event.player, tile(*event.tile))
        if rnd is None:
            game.on_table[seq] = []
            continue
        before = held
        held = {p: set(sorted_tiles(m)) for p, m in zip(state.players, rnd.hand_masks, strict=True)}
        if isinstance(event, RoundStarted):
            table = [] if event.engine is None else [tile(*event.engine)]
        elif isinstance(event, TilePlayed):
            played = tile(*event.tile)
            if played in before.get(event.player, set()) - held[event.player]:
                table.append(played)
        yard = set(sorted_tiles(rnd.boneyard_mask))
        game.on_table[seq] = sorted(table)
        game.hands[seq] = held
        game.boneyard[seq] = yard
        game.round_over[seq] = rnd.ended
    return game


def _false_pass_in(lines: list[bytes]) -> bool:
    referee = Referee()
    for number, line in enumerate(lines, 1):
        for verdict in referee.process(line, FileSource("sim", number)).verdicts:
            if getattr(verdict, "foul", None) == "false_pass":
                return True
    return False


def views_of(game: Game) -> list[str]:
    """Every restricted view of a game: each player's and a spectator's."""
    return [*game.players, SPECTATOR]


def write_page(game: Game, view: str | None, where: Path) -> Path:
    """Writes the page of ``game`` under ``view`` (``None``: the auditor's); returns it."""
    records = ((line, FileSource("sim", n)) for n, line in enumerate(game.lines, 1))
    steps = steps_of(records, game.game_id, viewer(view), Referee())
    assert steps is not None
    path = where / f"{game.family}-{view or 'auditor'}.html"
    path.write_text(page(steps, words()), encoding="utf-8")
    return path


DATA_TILE = re.compile(r'data-tile="(\d+)-(\d+)"')
TILE_TEXT = re.compile(r"[\[{](\d+)[,|](\d+)[\]}]")


def tiles_in(html: str) -> set[Tile]:
    """Every tile a piece of a page names: drawn (``data-tile``), or written (``[a,b]``,
    ``[a|b]``, ``{a|b}``, in a text or an attribute such as a title)."""
    found = {tile(int(a), int(b)) for a, b in DATA_TILE.findall(html)}
    return found | {tile(int(a), int(b)) for a, b in TILE_TEXT.findall(html)}
