"""The judge: one pure step of the fold, ``judge(state, event) -> (state, verdicts)``."""

from __future__ import annotations

from collections.abc import Iterable

from referee.domain.block import block_proposer, extend_chain
from referee.domain.errors import InvalidInput, RejectionReason
from referee.domain.events import (
    Action,
    GameEvent,
    GameStarted,
    Passed,
    RoundStarted,
    TileDrawn,
    TilePlayed,
)
from referee.domain.fouls import FoulKind
from referee.domain.layout import CONTINUE, Layout
from referee.domain.options import game_problem
from referee.domain.play_scoring import play_points
from referee.domain.rules import (
    BlockConfirmation,
    DrawRule,
    DrawWhileAble,
    EngineOrder,
    PlayScoring,
    Scoring,
)
from referee.domain.rules import Layout as LayoutKind
from referee.domain.scoring import (
    Award,
    game_winners,
    score_block,
    score_domino,
    score_penalty,
)
from referee.domain.state import GameState, RoundState, new_game, new_layout, round_state
from referee.domain.tiles import Tile, bit_of, format_tile, set_mask, tile
from referee.domain.verdicts import (
    BlockDeclared,
    FoulRecorded,
    GameWon,
    PointsScored,
    RoundEnd,
    RoundScored,
    Verdict,
)

Judgement = tuple[GameState, tuple[Verdict, ...]]
"""The state after an event and the verdicts it produced, in announcement order."""

NO_VERDICTS: tuple[Verdict, ...] = ()

# Hot-path constants: reading a member off an enum class is a slow attribute lookup (its
# metaclass's), a module global a fast one, and the judge reads these on nearly every event
# (docs/design.md, "Performance choices").
_FULL_ROUND = BlockConfirmation.FULL_ROUND
_NO_DRAW = DrawRule.NONE
_DRAW_ONCE = DrawRule.ONCE
_DRAWING_FOULS = DrawWhileAble.FOUL
_NO_PLAY_SCORING = PlayScoring.NONE
_PENALTY = Scoring.PENALTY
_FOUL = FoulKind


def judge(game: GameState | None, event: GameEvent) -> Judgement:
    """Judges one input event against the game so far.

    Raises ``InvalidInput`` for an event that cannot be judged (it changes nothing).
    """
    if game is None:
        if isinstance(event, GameStarted):
            return _start_game(event), NO_VERDICTS
        raise InvalidInput(
            RejectionReason.UNKNOWN_GAME,
            f"no GameStarted was seen for this game before {_kind(event)}",
        )
    if game.winner is not None:
        raise InvalidInput(
            RejectionReason.GAME_OVER, f"the game was already won by {game.winner!r}"
        )
    kind = type(event)
    if kind is TilePlayed or kind is TileDrawn or kind is Passed:
        # The checks every action passes, written out here: this runs for nearly every event.
        action: Action = event  # type: ignore[assignment]
        seat = game.seats.get(action.player)
        rnd = game.round
        if seat is None or rnd is None or action.round != rnd.round_number or rnd.ended:
            raise _unjudgeable(game, action)
        if seat != rnd.turn:
            return _rejected(game, seat, FoulKind.OUT_OF_TURN)
        if kind is TilePlayed:
            return _play(game, rnd, seat, action)  # type: ignore[arg-type]
        if kind is TileDrawn:
            return _draw(game, rnd, seat, action)  # type: ignore[arg-type]
        return _pass(game, rnd, seat)
    if isinstance(event, RoundStarted):
        return _start_round(game, event)
    raise InvalidInput(RejectionReason.GAME_ALREADY_STARTED, "the game has already started")


def _kind(event: GameEvent) -> str:
    return type(event).__name__


def _start_game(event: GameStarted) -> GameState:
    # The edge checks the same limits first; this keeps the fold itself from starting a game
    # that cannot be (RULES.md section 6).
    problem = game_problem(event.players, event.rules, event.teams)
    if problem is not None:
        raise InvalidInput(
            RejectionReason.SCHEMA_VIOLATION,
            f"GameStarted: {problem.detail} - at `{problem.path}`",
        )
    return new_game(event.players, event.rules, event.teams)


# --- dealing ---------------------------------------------------------------------------------


def _start_round(game: GameState, event: RoundStarted) -> Judgement:
    current = game.round
    if current is not None and not current.ended:
        raise InvalidInput(
            RejectionReason.WRONG_ROUND,
            f"round {current.round_number} is still in play; round {event.round} cannot start",
        )
    expected = 1 if current is None else current.round_number + 1
    if event.round != expected:
        raise InvalidInput(
            RejectionReason.WRONG_ROUND, f"round {event.round} started; expected round {expected}"
        )
    hands, boneyard = _check_deal(game, event)
    engine = _check_engine(game, event, hands, boneyard)
    layout = new_layout(game.rules, game.players, game.seats, engine)
    rnd = round_state(event.round, hands, boneyard, layout, game.seats[event.leader])
    return game.with_round(rnd), NO_VERDICTS


def _check_deal(game: GameState, event: RoundStarted) -> tuple[tuple[int, ...], int]:
    """Checks the deal; returns each seat's hand and the boneyard as tile masks."""
    rules = game.rules
    dealt = set(event.hands)
    if dealt != set(game.players):
        missing = sorted(set(game.players) - dealt)
        extra = sorted(dealt - set(game.players))
        raise InvalidInput(
            RejectionReason.BAD_DEAL,
            f"hands must be dealt to exactly the game's players; missing {missing}, "
            f"not at this game {extra}",
        )
    if event.leader not in game.seats:
        raise InvalidInput(
            RejectionReason.BAD_DEAL, f"leader {event.leader!r} is not a player of this game"
        )
    if rules.draw is DrawRule.NONE and event.boneyard:
        raise InvalidInput(
            RejectionReason.BAD_DEAL,
            f"a draw: none game deals no boneyard, got {len(event.boneyard)} tiles",
        )
    the_set = set_mask(rules.max_pip)
    seen = 0
    masks: list[int] = []
    for player in game.players:
        tiles = event.hands[player]
        if not tiles:
            raise InvalidInput(RejectionReason.BAD_DEAL, f"player {player!r} was dealt no tiles")
        mask, seen = _deal_mask(tiles, player, the_set, seen, rules.max_pip)
        masks.append(mask)
    boneyard, _ = _deal_mask(event.boneyard, "boneyard", the_set, seen, rules.max_pip)
    return tuple(masks), boneyard


def _check_engine(
    game: GameState, event: RoundStarted, hands: tuple[int, ...], boneyard: int
) -> Tile | None:
    """Checks the engine against the layout and ``engine_order``; returns it (trains only)."""
    rules = game.rules
    engine = event.engine
    if rules.layout is not LayoutKind.TRAINS:
        if engine is not None:
            raise InvalidInput(
                RejectionReason.BAD_DEAL,
                f"an engine is dealt only in layout trains; this game's layout is {rules.layout}",
            )
        return None
    if engine is None:
        raise InvalidInput(RejectionReason.BAD_DEAL, "a trains round needs an engine")
    e = tile(*engine)
    if e[0] != e[1]:
        raise InvalidInput(RejectionReason.BAD_DEAL, f"the engine {format_tile(e)} is not a double")
    bit = bit_of(e)
    if not bit & set_mask(rules.max_pip):
        raise InvalidInput(
            RejectionReason.BAD_DEAL,
            f"the engine {format_tile(e)} is not in the double-{rules.max_pip} set",
        )
    dealt = boneyard
    for hand in hands:
        dealt |= hand
    if bit & dealt:
        raise InvalidInput(
            RejectionReason.BAD_DEAL, f"tile {format_tile(e)} is dealt twice (engine)"
        )
    if rules.engine_order is EngineOrder.DESCENDING:
        top = rules.max_pip
        due = top - (event.round - 1) % (top + 1)
        if e[0] != due:
            raise InvalidInput(
                RejectionReason.BAD_DEAL,
                f"round {event.round}'s engine must be [{due},{due}] under engine_order "
                f"descending, got {format_tile(e)}",
            )
    return e


def _deal_mask(
    tiles: Iterable[Tile], where: str, the_set: int, seen: int, max_pip: int
) -> tuple[int, int]:
    """Returns the mask of dealt ``tiles`` and of every tile dealt so far, checking each.

    ``where`` names the hand's player, or the boneyard, in the details.
    """
    mask = 0
    for t in tiles:
        bit = bit_of(t)
        if not bit & the_set:
            raise InvalidInput(
                RejectionReason.BAD_DEAL,
                f"tile {format_tile(tile(*t))} in {where} is not in the double-{max_pip} set",
            )
        if bit & seen:
            raise InvalidInput(
                RejectionReason.BAD_DEAL, f"tile {format_tile(tile(*t))} is dealt twice ({where})"
            )
        seen |= bit
        mask |= bit
    return mask, seen


# --- actions ---------------------------------------------------------------------------------


def _unjudgeable(game: GameState, action: Action) -> InvalidInput:
    """Returns why an action cannot be judged at all in this game's present state."""
    rnd = game.round
    if action.player not in game.seats:
        return InvalidInput(
            RejectionReason.UNKNOWN_PLAYER, f"player {action.player!r} does not sit at this game"
        )
    if rnd is None:
        return InvalidInput(
            RejectionReason.ROUND_NOT_STARTED, f"{_kind(action)} before the first RoundStarted"
        )
    if action.round != rnd.round_number:
        return InvalidInput(
            RejectionReason.WRONG_ROUND,
            f"{_kind(action)} names round {action.round}; the current round is {rnd.round_number}",
        )
    return InvalidInput(
        RejectionReason.ROUND_OVER, f"round {rnd.round_number} is over; no action may follow"
    )


def _foul(game: GameState, seat: int, foul: FoulKind) -> tuple[GameState, FoulRecorded]:
    rules = game.rules
    penalty = rules.penalty(foul)
    verdict = FoulRecorded(game.players[seat], foul, applied=not foul.is_rejected, penalty=penalty)
    if penalty:
        scores = list(game.scores)
        # Deducted under award scoring, added under penalty scoring (low is good there).
        scores[game.teams.of_seat[seat]] += penalty if rules.scoring is _PENALTY else -penalty
        game = game.with_scores(tuple(scores), game.round)
    return game, verdict


def _rejected(game: GameState, seat: int, foul: FoulKind) -> Judgement:
    game, verdict = _foul(game, seat, foul)
    return game, (verdict,)


def _play(game: GameState, rnd: RoundState, seat: int, action: TilePlayed) -> Judgement:
    # The hottest path of the referee: written out plainly rather than through helpers.
    played_tile = action.tile
    bit = bit_of(played_tile)  # 0 for a tile of no set: in no hand
    hands = rnd.hand_masks
    hand = hands[seat]
    if not hand & bit:
        return _rejected(game, seat, FoulKind.TILE_NOT_IN_HAND)
    boneyard = rnd.boneyard_mask
    placed = rnd.layout.place(
        seat, played_tile[0], played_tile[1], action.end, action.train, hands, boneyard
    )
    if placed.__class__ is _FOUL:  # cheaper than isinstance; a foul is exactly a FoulKind
        return _rejected(game, seat, placed)
    layout: Layout = placed  # type: ignore[assignment]  # not a foul, so a layout
    played = hand ^ bit
    after = round_state(
        rnd.round_number,
        (*hands[:seat], played, *hands[seat + 1 :]),
        boneyard,
        layout,
        # A pending double keeps the turn with its player, who may draw again (trains).
        seat if layout.double_pending else (seat + 1) % len(game.players),
        (),  # chain: a play breaks any confirmation chain
    )
    rules = game.rules
    verdicts = NO_VERDICTS
    if rules.play_scoring is not _NO_PLAY_SCORING:
        game, verdicts = _score_play(game, seat, after)
    if not played:
        return _end_round(game, after, seat, RoundEnd.DOMINO, verdicts)
    if rules.block_confirmation is _FULL_ROUND:
        # No block can follow a play in this mode: the chain is empty.
        return game.with_round(after), verdicts
    return _after_applied(game, after, seat, verdicts)


def _score_play(game: GameState, seat: int, rnd: RoundState) -> Judgement:
    """Scores the play just made by ``seat`` from the layout's count (section 10)."""
    count = rnd.layout.counted()
    points = 0 if count is None else play_points(game.rules.play_scoring, count)
    if not points or count is None:
        return game, NO_VERDICTS
    teams = game.teams
    team = teams.of_seat[seat]
    scores = list(game.scores)
    scores[team] += points
    game = game.with_scores(tuple(scores), game.round)
    ids = teams.ids
    scored = PointsScored(
        game.players[seat],
        count,
        points,
        game.player_scores(),
        team=None if ids is None else ids[team],
        team_cumulative=None if ids is None else dict(zip(ids, game.scores, strict=True)),
    )
    return game, (scored,)


def _draw(game: GameState, rnd: RoundState, seat: int, action: TileDrawn) -> Judgement:
    rules = game.rules
    if rules.draw is _NO_DRAW:
        return _rejected(game, seat, FoulKind.DRAW_NOT_ALLOWED)
    boneyard = rnd.boneyard_mask
    if boneyard.bit_count() <= rules.boneyard_reserve:  # exhausted
        return _rejected(game, seat, FoulKind.BONEYARD_EMPTY)
    bit = bit_of(action.tile)  # 0 for a tile of no set: not in the boneyard
    if not boneyard & bit:
        return _rejected(game, seat, FoulKind.TILE_NOT_IN_BONEYARD)
    if rules.draw is _DRAW_ONCE and rnd.drew:
        return _rejected(game, seat, FoulKind.DRAW_LIMIT)
    verdicts: tuple[Verdict, ...] = ()
    hands = rnd.hand_masks
    hand = hands[seat]
    layout = rnd.layout
    if rules.draw_while_able is _DRAWING_FOULS and hand & layout.playable(seat):
        game, foul = _foul(game, seat, FoulKind.DRAW_WHILE_ABLE)
        verdicts = (foul,)
    after = round_state(
        rnd.round_number,
        (*hands[:seat], hand | bit, *hands[seat + 1 :]),
        boneyard ^ bit,
        layout,
        seat,
        drew=True,
    )
    return _after_applied(game, after, seat, verdicts)


def _pass(game: GameState, rnd: RoundState, seat: int) -> Judgement:
    # A pass carries nothing beyond who passed, checked already.
    rules = game.rules
    layout = rnd.layout
    exhausted = rnd.boneyard_mask.bit_count() <= rules.boneyard_reserve
    foul: FoulKind | None = None
    if rnd.hand_masks[seat] & layout.playable(seat):
        foul = FoulKind.FALSE_PASS
    elif not exhausted and rules.requires_draw(rnd.drew):
        foul = FoulKind.PASS_BEFORE_DRAWING
    verdicts: tuple[Verdict, ...] = ()
    if foul is not None:
        game, recorded = _foul(game, seat, foul)
        verdicts = (recorded,)
    passed = layout.passed(seat)  # trains: the passer's train opens
    restart = CONTINUE if passed is layout else passed.restart(layout, seat)
    after = round_state(
        rnd.round_number,
        rnd.hand_masks,
        rnd.boneyard_mask,
        passed,
        (seat + 1) % len(game.players),
        extend_chain(rnd.chain, seat, foul is None and exhausted, restart),
    )
    return _after_applied(game, after, seat, verdicts)


def _after_applied(
    game: GameState, rnd: RoundState, actor: int, verdicts: tuple[Verdict, ...]
) -> Judgement:
    rules = game.rules
    mode = rules.block_confirmation
    players = game.players
    # Nothing to decide while confirmations of a full round are missing (full_round) or while
    # the boneyard is not exhausted (immediate: a block needs it exhausted).
    if mode is _FULL_ROUND:
        undecided = len(rnd.chain) < len(players)
    else:
        undecided = rnd.boneyard_mask.bit_count() > rules.boneyard_reserve
    if undecided:
        return game.with_round(rnd), verdicts
    proposer = block_proposer(rnd, mode, actor, len(players), rules.boneyard_reserve)
    if proposer is None:
        return game.with_round(rnd), verdicts
    confirmed = tuple(players[s] for s in rnd.chain) if mode is _FULL_ROUND else ()
    declared = BlockDeclared(
        proposer=players[proposer],
        confirmed_by=confirmed,
        open_ends=rnd.layout.open_ends(),
        pip_counts=game.by_player(rnd.pip_counts(rules.double_blank)),
    )
    return _end_round(game, rnd, proposer, RoundEnd.BLOCKED, (*verdicts, declared))


def _end_round(
    game: GameState,
    rnd: RoundState,
    seat: int,
    reason: RoundEnd,
    verdicts: tuple[Verdict, ...],
) -> Judgement:
    rules = game.rules
    teams = game.teams
    counts = rnd.pip_counts(rules.double_blank)
    penalty = rules.scoring is _PENALTY
    domino = reason is RoundEnd.DOMINO
    award: Award
    if penalty:
        award = score_penalty(seat if domino else None, counts)
    elif domino:
        award = score_domino(teams.of_seat[seat], teams.totals(counts), rules)
    else:
        award = score_block(rnd.hand_masks, counts, teams, rules)
    scores = tuple(s + a for s, a in zip(game.scores, award.awards, strict=True))
    ended = round_state(
        rnd.round_number,
        rnd.hand_masks,
        rnd.boneyard_mask,
        rnd.layout,
        rnd.turn,
        rnd.chain,
        ended=True,
    )
    game = game.with_scores(scores, ended)
    ids = teams.ids
    cumulative = game.player_scores()
    team_cumulative = None if ids is None else dict(zip(ids, scores, strict=True))
    scored = RoundScored(
        reason=reason,
        winners=_members(game, award.winners),
        pip_counts=game.by_player(counts),
        awards=game.by_player(teams.by_seat(award.awards)),
        cumulative=cumulative,
        tie=award.tie,
        scoring=_PENALTY if penalty else None,
        team_pip_counts=None if ids is None else dict(zip(ids, teams.totals(counts), strict=True)),
        team_awards=None if ids is None else dict(zip(ids, award.awards, strict=True)),
        team_cumulative=team_cumulative,
        winning_teams=None if ids is None else tuple(ids[t] for t in award.winners),
    )
    winning = game_winners(scores, rules, rnd.round_number)
    if not winning:
        return game, (*verdicts, scored)
    winners = _members(game, winning)
    joint = ids is not None or rules.rounds is not None or penalty
    won = GameState(game.players, rules, game.seats, teams, scores, ended, winners[0])
    return won, (
        *verdicts,
        scored,
        GameWon(
            winners[0],
            cumulative,
            winners=winners if joint else None,
            winning_teams=None if ids is None else tuple(ids[t] for t in winning),
            team_cumulative=team_cumulative,
        ),
    )


def _members(game: GameState, teams: tuple[int, ...]) -> tuple[str, ...]:
    """Returns the players of these teams, in the order of play."""
    of_seat = game.teams.of_seat
    return tuple(p for seat, p in enumerate(game.players) if of_seat[seat] in teams)
