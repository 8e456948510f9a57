"""Views that keep secrets: no tile of another hand reaches a restricted view before its round
ends, through any field.

Simulated games of every family (``tests/families.py``: block, draw, All Fives, Mexican Train,
partnerships, penalty scoring, threes, fives and threes, and all of them mixed; fouls of every
kind included) are explained for each of
their players and for a spectator, as text (the story, the board, the evidence) and as JSON,
and every message ``referee explain`` could print about them (an event asked for by ``--seq``,
a reader who is not at the table) is collected too. Against the auditor's state after each
event, the secrets are the tiles of every other hand while the round is in play, and the
boneyard's at every moment; the one exception is a tile the reader named in their own action.
A tile is looked for in every shape it is written in: ``[a,b]`` and ``[a|b]`` (in either
order), ``{a|b}``, and a JSON array of two integers.
"""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.cli.errors import UsageError
from referee.cli.explain import check_found
from referee.cli.explain_text import render
from referee.contracts.explanation import explanation_wire
from referee.contracts.parse import parse_event
from referee.contracts.rejection import FileSource
from referee.contracts.verdicts import encode_canonical
from referee.contracts.wire import InputEvent
from referee.domain.events import TileDrawn, TilePlayed
from referee.domain.secrecy import SPECTATOR, viewer
from referee.domain.tiles import Tile, sorted_tiles, tile
from referee.usecases.explanations import Explained, Explainer, Request
from tests.families import FAMILIES, family_games, game_started

TILE_TEXT = re.compile(r"[\[{](\d+)[,|](\d+)[\]}]")


def tiles_in_text(text: str) -> set[Tile]:
    return {tile(int(a), int(b)) for a, b in TILE_TEXT.findall(text)}


def tiles_in_json(node: object) -> set[Tile]:
    if isinstance(node, list):
        if len(node) == 2 and all(type(x) is int for x in node):
            return {tile(node[0], node[1])}
        return set().union(*(tiles_in_json(x) for x in node)) if node else set()
    if isinstance(node, dict):
        return set().union(*(tiles_in_json(v) for v in node.values())) if node else set()
    return set()


def secrets(auditor: Explainer, game_id: str, reader: str | None) -> set[Tile]:
    """The tiles ``reader`` may not see now: other hands while the round is in play, and the
    boneyard."""
    state = auditor.referee.games[game_id].state
    rnd = state.round
    if rnd is None:
        return set()
    hidden = set(sorted_tiles(rnd.boneyard_mask))
    if not rnd.ended:
        for player, hand in zip(state.players, rnd.hand_masks, strict=True):
            if player != reader:
                hidden |= set(sorted_tiles(hand))
    return hidden


def named_by(line: bytes, reader: str | None) -> set[Tile]:
    """The tile the reader named in their own action (theirs to know)."""
    wire = parse_event(line)
    assert isinstance(wire, InputEvent)
    event = wire.to_domain()
    if isinstance(event, TilePlayed | TileDrawn) and event.player == reader:
        return {tile(*event.tile)}
    return set()


def what_a_reader_sees(
    lines: list[bytes], game_id: str, reader: str | None, asked: int
) -> list[tuple[set[Tile], set[Tile], str]]:
    """Explains a game for ``reader``; returns, per record, the secrets then, what was seen
    (the tiles of every chapter as text and as JSON) and the words of it all."""
    name = SPECTATOR if reader is None else reader
    auditor = Explainer(Request(game_id))
    explainer = Explainer(Request(game_id, reader=viewer(name)))
    seen = []
    for number, line in enumerate(lines, 1):
        chapters = explainer.feed(line, FileSource("sim", number))
        auditor.feed(line, FileSource("sim", number))
        text = "\n".join(line for chapter in chapters for line in render(chapter))
        found = tiles_in_text(text)
        for chapter in chapters:
            if isinstance(chapter, Explained):
                wire = explanation_wire(
                    chapter.verdict, chapter.evidence, view=name, action=chapter.action
                )
                found |= tiles_in_json(json.loads(encode_canonical(wire)))
        hidden = secrets(auditor, game_id, reader) - named_by(line, reader)
        seen.append((hidden, found, text))
    # what --seq N says of a record, and of a reader who is not there
    for request in (
        Request(game_id, asked, viewer(name)),
        Request(game_id, None, viewer("nobody-at-this-table")),
    ):
        told = Explainer(request)
        for number, line in enumerate(lines, 1):
            told.feed(line, FileSource("sim", number))
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.suppress(UsageError):
            try:
                check_found(told, request, "the log")
            except UsageError as failed:
                err.write(failed.message)
                raise
        seen.append((secrets(auditor, game_id, reader), tiles_in_text(err.getvalue()), ""))
    return seen


@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), asked=st.integers(1, 400))
def test_no_tile_of_another_hand_reaches_a_restricted_view_before_its_round_ends(
    family: str, seed: int, asked: int
) -> None:
    games = family_games(family, 2, games=30, seed=seed, foul_rate=0.25)
    assert len(games) == 2, f"fewer than 2 games of {family}"  # the family is covered
    for game_id, lines in games.items():
        first = parse_event(lines[0])
        players = first.players  # type: ignore[union-attr]
        for reader in (*players, None):
            for hidden, found, text in what_a_reader_sees(lines, game_id, reader, asked):
                leaked = hidden & found
                assert not leaked, f"{sorted(leaked)} reached {reader or SPECTATOR}: {text}"


def test_the_search_finds_a_tile_in_every_shape_it_is_written_in() -> None:
    """Guards the search: a leak in any of these shapes would be found."""
    assert tiles_in_text("a [3,4] b [5|2] c {6|6} d [12,0]") == {(3, 4), (2, 5), (6, 6), (0, 12)}
    assert tiles_in_json({"a": [[1, 2]], "b": {"c": [4, 3]}, "d": [1, 2, 3]}) == {(1, 2), (3, 4)}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_auditor_would_see_the_secrets_the_others_may_not(family: str) -> None:
    """Guards the property, family by family: the games explained are of the family, and the
    secrets it protects are in the full view, so the restricted views leave out something
    real."""
    games = family_games(family, 1, games=30, seed=5, foul_rate=0.25)
    [(game_id, lines)] = games.items()
    started = game_started(lines[0])
    assert started is not None
    assert FAMILIES[family].member(started)
    auditor = Explainer(Request(game_id))
    revealed = 0
    for number, line in enumerate(lines, 1):
        chapters = auditor.feed(line, FileSource("sim", number))
        text = "\n".join(x for chapter in chapters for x in render(chapter))
        revealed += len(tiles_in_text(text) & secrets(auditor, game_id, None))
    assert revealed > 0
