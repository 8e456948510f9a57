"""``referee explain``, a use case: the evidence behind every verdict of a log or of the store.

The records are judged by a ``Referee``, exactly as ``replay`` and ``audit`` judge them (the
same sequencing, duplicates and rejections, so the same verdicts and verdict ids); before each
record the game's state is kept, and the verdicts a record gives are explained by the domain
(``domain/explain.py``) from that state. Every chapter handed out is already fit for its
reader (``domain/secrecy.py``): what a restricted view may not see never leaves this module.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from referee.contracts.parse import Unparsed
from referee.contracts.rejection import Source
from referee.contracts.verdicts import OutputVerdict
from referee.contracts.wire import InputEvent
from referee.domain.board import Board, board_for, laid
from referee.domain.errors import RejectionReason
from referee.domain.events import GameEvent, Passed, RoundStarted, TileDrawn, TilePlayed
from referee.domain.evidence import Evidence
from referee.domain.explain import explain
from referee.domain.layout import Layout
from referee.domain.revisions import Judge
from referee.domain.rules import Rules
from referee.domain.secrecy import AUDITOR, Viewer, seen_by
from referee.domain.state import GameState
from referee.domain.tiles import Tile, format_tile, sorted_tiles, tile
from referee.processing.outcome import Outcome
from referee.processing.referee import Referee

if TYPE_CHECKING:  # the store's modules load only when the store is explained
    from referee.store.views import StoreViews


@dataclass(frozen=True, slots=True)
class Request:
    """What to explain, and for whom."""

    game_id: str | None = None
    """Only this game (``None``: every game)."""
    seq: int | None = None
    """Only the verdicts of this event of the game (needs ``game_id``)."""
    reader: Viewer = AUDITOR


class Opened(NamedTuple):
    """A game's start, at the head of its story."""

    game_id: str
    players: tuple[str, ...]
    teams: Mapping[str, tuple[str, ...]] | None
    rules: Rules


class Dealt(NamedTuple):
    """A round's deal, as the reader may see it."""

    game_id: str
    round: int
    leader: str
    hand_sizes: Mapping[str, int]
    hands: Mapping[str, tuple[Tile, ...]]
    """The hands the reader may see: every hand (the auditor), their own (a player), none."""
    boneyard: int
    engine: int | None


class Explained(NamedTuple):
    """One verdict with its evidence, and the table when it was given."""

    game_id: str
    seq: int
    action: str
    """What the event was, in words fit for the reader."""
    verdict: OutputVerdict
    evidence: Evidence
    board: Board
    layout: Layout
    """The layout after the event: the values at its ends, open trains, a pending double."""
    quiet: tuple[int, int, int]
    """Applied plays, draws and passes since the game's last chapter that gave no verdict."""
    first: bool
    """Whether this is the first verdict of its event (the others follow it)."""


Chapter = Opened | Dealt | Explained


class Asked(NamedTuple):
    """The record at the seq asked for: its kind and what became of it."""

    kind: str | None
    outcome: Outcome
    reason: RejectionReason | None


@dataclass(slots=True)
class _Table:
    """What the explainer keeps of one game beyond its state: the board and the quiet moves."""

    board: Board = field(default_factory=Board)
    plays: int = 0
    draws: int = 0
    passes: int = 0
    dealt: Dealt | None = None
    seated: bool = True
    """Whether the reader may follow this game (a player follows the games they sit at)."""


@dataclass(slots=True)
class Explainer:
    """Folds records through a ``Referee`` and explains the verdicts they give."""

    request: Request = field(default_factory=Request)
    referee: Referee = field(default_factory=Referee)
    tables: dict[str, _Table] = field(default_factory=dict)
    asked: Asked | None = None
    """What became of the record at ``request.seq`` of ``request.game_id``, once seen."""
    explained: int = 0

    def feed(self, raw: bytes, source: Source) -> list[Chapter]:
        """Judges one record; returns the chapters it adds to its game's story."""
        referee = self.referee
        parsed = referee.parse(raw)
        game_id = parsed.game_id
        wanted = self.request.game_id
        if wanted is not None and game_id != wanted:
            return []  # games are judged apart: another game's records change nothing here
        ledger = referee.games.get(game_id) if isinstance(game_id, str) else None
        before = None if ledger is None else ledger.state
        result = referee.apply(raw, source, parsed)
        if self.request.seq is not None and result.seq == self.request.seq and result.took_place:
            rejection = result.rejection
            reason = None if rejection is None else rejection.reason
            self.asked = Asked(result.event_type, result.outcome, reason)
        if isinstance(parsed, Unparsed) or result.outcome in (Outcome.REJECTED, Outcome.DUPLICATE):
            return []
        ledger = referee.games[parsed.game_id]
        return self._chapters(parsed, before, ledger.state, result.verdicts, ledger.judge)

    def _chapters(
        self,
        parsed: InputEvent,
        before: GameState | None,
        after: GameState,
        verdicts: tuple[OutputVerdict, ...],
        judging: Judge,
    ) -> list[Chapter]:
        event = parsed.to_domain()
        game_id = parsed.game_id
        table = self.tables.get(game_id)
        reader = self.request.reader
        if table is None:
            table = self.tables[game_id] = _Table()
            table.seated = reader.sees_all or reader.player is None or reader.player in after.seats
            if not table.seated:
                return []
            return [] if self.request.seq is not None else [_opened(game_id, after)]
        if not table.seated:
            return []
        rnd = after.round
        assert rnd is not None
        if isinstance(event, RoundStarted):
            table.board = board_for(rnd.layout)
            table.plays = table.draws = table.passes = 0
            table.dealt = _dealt(game_id, after, event, reader)
            return [] if self.request.seq is not None else [table.dealt]
        assert before is not None
        assert before.round is not None
        applied = rnd is not before.round  # a rejected action leaves the round as it was
        if applied and isinstance(event, TilePlayed):
            place = event.end.value if event.end is not None else event.train
            table.board = laid(table.board, before.round.layout, rnd.layout, event.tile, place)
            table.plays += 1
        elif applied and isinstance(event, TileDrawn):
            table.draws += 1
        elif applied:
            table.passes += 1
        if not verdicts:
            return []
        quiet = (table.plays, table.draws, table.passes)
        table.plays = table.draws = table.passes = 0
        if self.request.seq is not None and parsed.seq != self.request.seq:
            return []
        # the game's own judge (its rules revision's), as the referee judged it
        judged_after, evidence = explain(before, event, judging)
        assert judged_after == after, "the explanation's fold is the referee's"
        assert len(evidence) == len(verdicts)
        round_over = rnd.ended
        chapters: list[Chapter] = []
        if self.request.seq is not None:
            chapters.append(_opened(game_id, after))
            if table.dealt is not None:
                chapters.append(table.dealt)
        action = told(event, applied, reader, round_over)
        for verdict, found in zip(verdicts, evidence, strict=True):
            chapters.append(
                Explained(
                    game_id,
                    parsed.seq,
                    action,
                    verdict,
                    seen_by(found, reader, round_over=round_over),
                    table.board,
                    rnd.layout,
                    quiet,
                    first=not chapters or not isinstance(chapters[-1], Explained),
                )
            )
            quiet = (0, 0, 0)
        self.explained += len(evidence)
        return chapters

    def last_seq(self, game_id: str) -> int | None:
        """Returns the last seq a game took, if the game was seen."""
        ledger = self.referee.games.get(game_id)
        return None if ledger is None else ledger.last_seq

    def seats_reader(self) -> bool:
        """Checks if some game explained seats the reader (always, for the auditor or a
        spectator)."""
        return any(t.seated for t in self.tables.values())


def _opened(game_id: str, game: GameState) -> Opened:
    ids = game.teams.ids
    teams = None
    if ids is not None:
        teams = {
            team: tuple(game.players[s] for s in game.teams.members(t))
            for t, team in enumerate(ids)
        }
    return Opened(game_id, game.players, teams, game.rules)


def _dealt(game_id: str, game: GameState, event: RoundStarted, reader: Viewer) -> Dealt:
    rnd = game.round
    assert rnd is not None
    hands = {
        player: tuple(sorted_tiles(mask))
        for player, mask in zip(game.players, rnd.hand_masks, strict=True)
        if reader.may_see_hand(player, round_over=False)
    }
    return Dealt(
        game_id,
        event.round,
        event.leader,
        {p: m.bit_count() for p, m in zip(game.players, rnd.hand_masks, strict=True)},
        hands,
        rnd.boneyard_mask.bit_count(),
        None if event.engine is None else event.engine[0],
    )


def told(event: GameEvent, applied: bool, reader: Viewer, round_over: bool) -> str:
    """Returns what an action was, in words fit for ``reader``: a tile the actor did not lay
    on the table is named only to a reader who may see the actor's hand."""
    if isinstance(event, Passed):
        return f"{event.player} passed"
    if not isinstance(event, TilePlayed | TileDrawn):
        return type(event).__name__
    player = event.player
    shown = (
        format_tile(tile(*event.tile))
        if (applied and isinstance(event, TilePlayed)) or reader.may_see_hand(player, round_over)
        else "a tile"
    )
    if isinstance(event, TileDrawn):
        return f"{player} drew {shown}" if applied else f"{player} tried to draw {shown}"
    where = ""
    if event.end is not None:
        where = f" on {event.end.value}"
    elif event.train is not None:
        where = f" on train {event.train}"
    if event.end is not None and event.train is not None:
        where = f" on end {event.end.value} and train {event.train}"
    return (
        f"{player} played {shown}{where}" if applied else f"{player} tried to play {shown}{where}"
    )


def explain_records(
    records: Iterable[tuple[bytes, Source]], explainer: Explainer
) -> Iterator[Chapter]:
    """Yields the chapters of every record, in order."""
    feed = explainer.feed
    for raw, source in records:
        yield from feed(raw, source)


async def explain_store(
    views: StoreViews, explainer: Explainer, max_event_bytes: int
) -> AsyncIterator[Chapter]:
    """Yields the chapters of the store's journal, read as the audit reads it: every row in
    arrival order, each judged under the size limit it was judged under. A record the
    referee failed on (``internal_error``) took no place and changed no game: it is passed."""
    from referee.usecases.audit import UNRECORDED_REVISION, source_of

    referee = explainer.referee
    pinned = await views.game_revisions()  # each game under its own revision, as audited
    referee.pin({g: number for g, (number, _) in pinned.items()}, UNRECORDED_REVISION)
    async for row in views.journal():
        if row.reason == RejectionReason.INTERNAL_ERROR:
            continue
        limit = row.max_event_bytes
        referee.max_event_bytes = max_event_bytes if limit is None else int(limit)
        source = source_of(row.source_topic, row.source_partition, row.source_offset)
        for chapter in explainer.feed(bytes(row.raw), source):
            yield chapter
