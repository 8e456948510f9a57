"""A game step by step, as one reader may see it: the table after every event that took place.

``explain`` hands out a chapter at each verdict; a page that can be stepped through needs the
table after every event too. The records are folded by the same ``Explainer`` (so the same
referee, the same verdicts and ids, the same board, the same evidence fit for its reader), and
after each event that took its place in the game the table is read from the fold's state: the
board, the values the ends show, the trains' markers, each seat's count and, where the reader
may see it, its hand, the boneyard's count and the scores. Nothing is judged here, and what a
restricted view may not see is left out before it leaves this module: a hand the reader may
not see is ``None`` (its count stays, as at the table).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from referee.contracts.parse import Unparsed
from referee.contracts.rejection import Source
from referee.domain.board import Board
from referee.domain.events import GameEvent, GameStarted, RoundStarted
from referee.domain.evidence import PlaceValue
from referee.domain.explain import sides
from referee.domain.secrecy import Viewer
from referee.domain.state import GameState
from referee.domain.tiles import Tile, sorted_tiles
from referee.domain.trains import Trains
from referee.processing.referee import Referee
from referee.usecases.explanations import (
    Dealt,
    Explained,
    Explainer,
    Opened,
    Request,
    told,
)

if TYPE_CHECKING:  # the store's modules load only for a store
    from referee.store.game_views import GameViews, JournalRow


@dataclass(frozen=True, slots=True)
class Seat:
    """A player at the table after a step, as the reader may see them."""

    player: str
    team: str | None
    """The player's team (``None``: every player a team of one)."""
    held: int
    """How many tiles the player holds (public)."""
    hand: tuple[Tile, ...] | None
    """The tiles, where the reader may see them (``None``: a secret)."""


@dataclass(frozen=True, slots=True)
class TrainMark:
    """A train's public marks: open (a marker on it) or closed, a double pending on it."""

    name: str
    open: bool
    pending: bool


@dataclass(frozen=True, slots=True)
class Side:
    """A side's cumulative score after a step."""

    side: str
    members: tuple[str, ...]
    score: int


@dataclass(frozen=True, slots=True)
class Step:
    """The table after one event of the game (its seq), and the verdicts the event gave."""

    seq: int
    round: int | None
    action: str
    """What the event was, in words fit for the reader."""
    board: Board
    ends: tuple[PlaceValue, ...]
    """Every end (or train) and the value it shows (none before the first round)."""
    trains: tuple[TrainMark, ...]
    seats: tuple[Seat, ...]
    turn: str | None
    """Whose turn it is next (``None``: no round in play)."""
    boneyard: int | None
    """How many tiles the boneyard holds (``None``: no round yet)."""
    sides: tuple[Side, ...]
    round_over: bool
    verdicts: tuple[Explained, ...]
    dealt: Dealt | None
    """The deal, at the step that dealt a round."""
    rejected: bool = False
    """Whether the event was rejected as invalid input (it took its seq, changed nothing)."""


@dataclass(frozen=True, slots=True)
class GameSteps:
    """A game's page: its head and every step, as one reader may see them."""

    game_id: str
    view: str
    """``auditor``, ``spectator`` or a player id."""
    opened: Opened
    steps: tuple[Step, ...]


class NotSeatedError(LookupError):
    """The reader is a player who does not sit at the game."""


def steps_of(
    records: Iterable[tuple[bytes, Source]], game_id: str, reader: Viewer, referee: Referee
) -> GameSteps | None:
    """Folds the records of a log (or a store) and returns the steps of ``game_id`` as
    ``reader`` may see them; ``None`` if the game is not there. Raises ``NotSeatedError`` for a
    player who does not sit at it."""
    folding = _Folding(Explainer(Request(game_id, None, reader), referee), game_id)
    for raw, source in records:
        folding.feed(raw, source)
    return folding.result()


def steps_of_rows(
    rows: Iterable[JournalRow],
    game_id: str,
    reader: Viewer,
    referee: Referee,
    max_event_bytes: int,
) -> GameSteps | None:
    """Returns the steps of a game from its journal rows, read as the audit reads them: each
    row under the size limit it was judged under; ``referee`` pinned to the game's revision
    (``pinned``)."""
    from referee.domain.errors import RejectionReason
    from referee.usecases.audit import source_of

    folding = _Folding(Explainer(Request(game_id, None, reader), referee), game_id)
    for row in rows:
        if row.reason == RejectionReason.INTERNAL_ERROR:
            continue  # took no place and changed no game (as the audit passes it)
        limit = row.max_event_bytes
        referee.max_event_bytes = max_event_bytes if limit is None else int(limit)
        source = source_of(row.source_topic, row.source_partition, row.source_offset)
        folding.feed(bytes(row.raw), source)
    return folding.result()


def pinned(game_id: str, revision: int | None, max_event_bytes: int) -> Referee:
    """Returns a referee that judges ``game_id`` under its stored rules revision (``None``:
    the game has no row, it started before revisions were recorded)."""
    from referee.usecases.audit import UNRECORDED_REVISION

    referee = Referee(max_event_bytes)
    referee.pin({} if revision is None else {game_id: revision}, UNRECORDED_REVISION)
    return referee


async def store_rows(views: GameViews, game_id: str) -> tuple[int | None, list[JournalRow]]:
    """Returns a game's rules revision and its journal rows, in arrival order."""
    revision = await views.revision(game_id)
    return revision, [row async for row in views.game_journal(game_id)]


class _Folding:
    """Feeds one game's records to an ``Explainer`` and reads the table after each."""

    def __init__(self, explainer: Explainer, game_id: str) -> None:
        self.explainer = explainer
        self.game_id = game_id
        self.opened: Opened | None = None
        self.steps: list[Step] = []

    def feed(self, raw: bytes, source: Source) -> None:
        explainer = self.explainer
        referee = explainer.referee
        parsed = referee.parse(raw)
        if isinstance(parsed, Unparsed) or parsed.game_id != self.game_id:
            referee.apply(raw, source, parsed)  # judged all the same: nothing of this game
            return
        ledger = referee.games.get(self.game_id)
        before = None if ledger is None else ledger.state
        last = 0 if ledger is None else ledger.last_seq
        chapters = explainer.feed(raw, source)
        ledger = referee.games.get(self.game_id)
        if ledger is None or ledger.last_seq == last:
            return  # a duplicate, or rejected without taking a place
        table = explainer.tables.get(self.game_id)
        if table is None or not table.seated:
            return
        after = ledger.state
        event = parsed.to_domain()
        dealt = None
        verdicts = []
        for chapter in chapters:
            if isinstance(chapter, Opened):
                self.opened = chapter
            elif isinstance(chapter, Dealt):
                dealt = chapter
            else:
                verdicts.append(chapter)
        rejected = after is before and not verdicts
        reader = explainer.request.reader
        self.steps.append(
            _step(
                parsed.seq,
                after,
                table.board,
                reader,
                _action(event, before, after, reader, rejected),
                tuple(verdicts),
                dealt,
                rejected=rejected,
            )
        )

    def result(self) -> GameSteps | None:
        if not self.explainer.seats_reader() and self.explainer.tables:
            raise NotSeatedError(self.explainer.request.reader.name)
        if self.opened is None:
            return None
        return GameSteps(
            self.game_id, self.explainer.request.reader.name, self.opened, tuple(self.steps)
        )


def _action(
    event: GameEvent, before: GameState | None, after: GameState, reader: Viewer, rejected: bool
) -> str:
    if rejected:
        return "an event rejected as invalid input: it took its seq and changed nothing"
    if isinstance(event, GameStarted):
        return "the game starts"
    rnd = after.round
    if isinstance(event, RoundStarted):
        assert rnd is not None
        return f"round {event.round} is dealt; {event.leader} leads"
    assert rnd is not None
    applied = before is None or before.round is None or rnd is not before.round
    return told(event, applied, reader, rnd.ended)


def _step(
    seq: int,
    game: GameState,
    board: Board,
    reader: Viewer,
    action: str,
    verdicts: tuple[Explained, ...],
    dealt: Dealt | None,
    *,
    rejected: bool,
) -> Step:
    """Returns the table after an event, fit for ``reader``."""
    rnd = game.round
    teams = game.teams
    named = sides(game)
    team_of = {
        player: (None if teams.ids is None else teams.ids[teams.of_seat[seat]])
        for seat, player in enumerate(game.players)
    }
    side_scores = tuple(
        Side(side, members, score)
        for (side, members), score in zip(named, game.scores, strict=True)
    )
    if rnd is None:
        seats = tuple(Seat(p, team_of[p], 0, None) for p in game.players)
        return Step(
            seq,
            None,
            action,
            board,
            (),
            (),
            seats,
            None,
            None,
            side_scores,
            round_over=False,
            verdicts=verdicts,
            dealt=dealt,
            rejected=rejected,
        )
    over = rnd.ended
    seats = tuple(
        Seat(
            player,
            team_of[player],
            mask.bit_count(),
            tuple(sorted_tiles(mask)) if reader.may_see_hand(player, round_over=over) else None,
        )
        for player, mask in zip(game.players, rnd.hand_masks, strict=True)
    )
    layout = rnd.layout
    trains: tuple[TrainMark, ...] = ()
    if isinstance(layout, Trains):
        trains = tuple(
            TrainMark(name, bool(layout.open >> i & 1), layout.pending == i)
            for i, name in enumerate(layout.table.names)
        )
    ends = tuple(PlaceValue(p, v) for p, v in layout.open_ends().items()) if _laid(board) else ()
    return Step(
        seq,
        rnd.round_number,
        action,
        board,
        ends,
        trains,
        seats,
        None if over else game.players[rnd.turn],
        rnd.boneyard_mask.bit_count(),
        side_scores,
        over,
        verdicts,
        dealt,
        rejected,
    )


def _laid(board: Board) -> bool:
    """Checks if the layout has ends to show: a tile down, or an engine."""
    return bool(board.line) or board.engine is not None
