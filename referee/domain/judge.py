"""The judge: one pure step of the fold, ``judge(state, event) -> (state, verdicts)``."""

from __future__ import annotations

from collections.abc import Iterable

from referee.domain.block import block_proposer, extend_chain
from referee.domain.errors import InvalidInput, RejectionReason
from referee.domain.events import (
    Action,
    End,
    GameEvent,
    GameStarted,
    Passed,
    RoundStarted,
    TileDrawn,
    TilePlayed,
)
from referee.domain.fouls import FoulKind
from referee.domain.rules import BlockConfirmation, DrawRule, DrawWhileAble
from referee.domain.scoring import Award, game_winner, score_block, score_domino
from referee.domain.state import GameState, RoundState, hand_can_play, new_game
from referee.domain.tiles import BIT, Tile, format_tile, set_mask, tile
from referee.domain.verdicts import (
    BlockDeclared,
    FoulRecorded,
    GameWon,
    RoundEnd,
    RoundScored,
    Verdict,
)

Judgement = tuple[GameState, tuple[Verdict, ...]]
"""The state after an event and the verdicts it produced, in announcement order."""

NO_VERDICTS: tuple[Verdict, ...] = ()

# Hot-path constants. Reading a member off an enum class costs 100-200 ns in CPython 3.11 (the
# metaclass makes it a slow attribute lookup), several times a module global; the judge reads
# these on nearly every event.
_LEFT = End.LEFT
_FULL_ROUND = BlockConfirmation.FULL_ROUND
_NO_DRAW = DrawRule.NONE
_DRAW_ONCE = DrawRule.ONCE
_DRAWING_FOULS = DrawWhileAble.FOUL
_new = tuple.__new__
"""Builds a state from its fields in order: ``_new(RoundState, (...))`` skips the Python-level
``__new__`` of a named tuple, which costs as much again as the tuple. For the hottest paths."""


def judge(game: GameState | None, event: GameEvent) -> Judgement:
    """Judges one input event against the game so far.

    Raises ``InvalidInput`` for an event that cannot be judged (it changes nothing).
    """
    if game is None:
        if isinstance(event, GameStarted):
            return new_game(event.players, event.rules), NO_VERDICTS
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
        if seat is None or rnd is None or action.round != rnd.number or rnd.ended:
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


def fold(events: Iterable[GameEvent], game: GameState | None = None) -> Judgement:
    """Folds a game's events through the judge; invalid events are skipped."""
    verdicts: list[Verdict] = []
    for event in events:
        try:
            game, produced = judge(game, event)
        except InvalidInput:
            continue
        verdicts.extend(produced)
    if game is None:
        raise ValueError("no GameStarted among the events")
    return game, tuple(verdicts)


def _kind(event: GameEvent) -> str:
    return type(event).__name__


# --- dealing ---------------------------------------------------------------------------------


def _start_round(game: GameState, event: RoundStarted) -> Judgement:
    current = game.round
    if current is not None and not current.ended:
        raise InvalidInput(
            RejectionReason.WRONG_ROUND,
            f"round {current.number} is still in play; round {event.round} cannot start",
        )
    expected = 1 if current is None else current.number + 1
    if event.round != expected:
        raise InvalidInput(
            RejectionReason.WRONG_ROUND, f"round {event.round} started; expected round {expected}"
        )
    hands, boneyard = _check_deal(game, event)
    rnd = RoundState(
        number=event.round,
        hand_masks=hands,
        boneyard_mask=boneyard,
        left=None,
        right=None,
        turn=game.seats[event.leader],
        drew=False,
        chain=(),
    )
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


def _deal_mask(
    tiles: Iterable[Tile], where: str, the_set: int, seen: int, max_pip: int
) -> tuple[int, int]:
    """Returns the mask of dealt ``tiles`` and of every tile dealt so far, checking each.

    ``where`` names the hand's player, or the boneyard, in the details.
    """
    mask = 0
    for t in tiles:
        bit = BIT.get(t, 0)
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
    if action.round != rnd.number:
        return InvalidInput(
            RejectionReason.WRONG_ROUND,
            f"{_kind(action)} names round {action.round}; the current round is {rnd.number}",
        )
    return InvalidInput(
        RejectionReason.ROUND_OVER, f"round {rnd.number} is over; no action may follow"
    )


def _foul(game: GameState, seat: int, foul: FoulKind) -> tuple[GameState, FoulRecorded]:
    penalty = game.rules.penalty(foul)
    verdict = FoulRecorded(game.players[seat], foul, applied=not foul.is_rejected, penalty=penalty)
    if penalty:
        scores = list(game.scores)
        scores[seat] -= penalty
        game = game.with_scores(tuple(scores), game.round)
    return game, verdict


def _rejected(game: GameState, seat: int, foul: FoulKind) -> Judgement:
    game, verdict = _foul(game, seat, foul)
    return game, (verdict,)


def _play(game: GameState, rnd: RoundState, seat: int, action: TilePlayed) -> Judgement:
    # The hottest path of the referee: written out plainly rather than through helpers.
    a, b = action.tile
    bit = BIT.get(action.tile, 0)  # 0 for a tile of no set: in no hand
    hands = rnd.hand_masks
    hand = hands[seat]
    if not hand & bit:
        return _rejected(game, seat, FoulKind.TILE_NOT_IN_HAND)
    left, right = rnd.left, rnd.right
    if left is None or right is None:
        # The first tile opens the line as written: [x, y] gives left = x, right = y.
        left, right = a, b
    else:
        end = action.end
        if end is None:
            return _rejected(game, seat, FoulKind.END_MISSING)
        value = left if end is _LEFT else right
        if a == value:
            shown = b
        elif b == value:
            shown = a
        else:
            return _rejected(game, seat, FoulKind.TILE_DOES_NOT_MATCH)
        if end is _LEFT:
            left = shown
        else:
            right = shown
    played = hand ^ bit
    players = game.players
    after = _new(
        RoundState,
        (
            rnd.number,
            (*hands[:seat], played, *hands[seat + 1 :]),
            rnd.boneyard_mask,
            left,
            right,
            (seat + 1) % len(players),
            False,  # drew
            (),  # chain
            False,  # ended
        ),
    )
    if not played:
        return _end_round(game, after, seat, RoundEnd.DOMINO, ())
    rules = game.rules
    if rules.block_confirmation is _FULL_ROUND:
        # A play breaks any confirmation chain: no block can follow it in this mode.
        return _new(GameState, (players, rules, game.seats, game.scores, after, None)), ()
    return _after_applied(game, after, seat, ())


def _draw(game: GameState, rnd: RoundState, seat: int, action: TileDrawn) -> Judgement:
    rules = game.rules
    if rules.draw is _NO_DRAW:
        return _rejected(game, seat, FoulKind.DRAW_NOT_ALLOWED)
    boneyard = rnd.boneyard_mask
    if not boneyard:
        return _rejected(game, seat, FoulKind.BONEYARD_EMPTY)
    bit = BIT.get(action.tile, 0)  # 0 for a tile of no set: not in the boneyard
    if not boneyard & bit:
        return _rejected(game, seat, FoulKind.TILE_NOT_IN_BONEYARD)
    if rules.draw is _DRAW_ONCE and rnd.drew:
        return _rejected(game, seat, FoulKind.DRAW_LIMIT)
    verdicts: tuple[Verdict, ...] = ()
    hands = rnd.hand_masks
    hand = hands[seat]
    if rules.draw_while_able is _DRAWING_FOULS and hand_can_play(hand, rnd.left, rnd.right):
        game, foul = _foul(game, seat, FoulKind.DRAW_WHILE_ABLE)
        verdicts = (foul,)
    after = _new(
        RoundState,
        (
            rnd.number,
            (*hands[:seat], hand | bit, *hands[seat + 1 :]),
            boneyard ^ bit,
            rnd.left,
            rnd.right,
            seat,
            True,  # drew
            (),  # chain
            False,  # ended
        ),
    )
    return _after_applied(game, after, seat, verdicts)


def _pass(game: GameState, rnd: RoundState, seat: int) -> Judgement:
    # A pass carries nothing beyond who passed, checked already.
    rules = game.rules
    foul: FoulKind | None = None
    if hand_can_play(rnd.hand_masks[seat], rnd.left, rnd.right):
        foul = FoulKind.FALSE_PASS
    elif rnd.boneyard_mask and rules.requires_draw(rnd.drew):
        foul = FoulKind.PASS_BEFORE_DRAWING
    verdicts: tuple[Verdict, ...] = ()
    if foul is not None:
        game, recorded = _foul(game, seat, foul)
        verdicts = (recorded,)
    after = _new(
        RoundState,
        (
            rnd.number,
            rnd.hand_masks,
            rnd.boneyard_mask,
            rnd.left,
            rnd.right,
            game.next_seat(seat),
            False,  # drew
            extend_chain(rnd, seat, legitimate=foul is None),
            False,  # ended
        ),
    )
    return _after_applied(game, after, seat, verdicts)


def _after_applied(
    game: GameState, rnd: RoundState, actor: int, verdicts: tuple[Verdict, ...]
) -> Judgement:
    mode = game.rules.block_confirmation
    players = game.players
    # Nothing to decide while confirmations of a full round are missing (full_round) or while
    # the boneyard has tiles (immediate: a block needs it empty).
    undecided = len(rnd.chain) < len(players) if mode is _FULL_ROUND else rnd.boneyard_mask != 0
    if undecided:
        return _new(GameState, (players, game.rules, game.seats, game.scores, rnd, None)), verdicts
    proposer = block_proposer(rnd, mode, actor, len(players))
    if proposer is None:
        return game.with_round(rnd), verdicts
    confirmed = (
        tuple(game.players[s] for s in rnd.chain) if mode is BlockConfirmation.FULL_ROUND else ()
    )
    declared = BlockDeclared(
        proposer=game.players[proposer],
        confirmed_by=confirmed,
        open_ends=(rnd.left or 0, rnd.right or 0),
        pip_counts=game.by_player(rnd.pip_counts(game.rules.double_blank)),
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
    counts = rnd.pip_counts(rules.double_blank)
    award: Award = (
        score_domino(seat, counts, rules)
        if reason is RoundEnd.DOMINO
        else score_block(rnd.hand_masks, counts, rules)
    )
    scores = tuple(s + a for s, a in zip(game.scores, award.awards, strict=True))
    ended = RoundState(
        rnd.number,
        rnd.hand_masks,
        rnd.boneyard_mask,
        rnd.left,
        rnd.right,
        rnd.turn,
        drew=False,
        chain=rnd.chain,
        ended=True,
    )
    cumulative = game.by_player(scores)
    scored = RoundScored(
        reason=reason,
        winners=tuple(game.players[s] for s in award.winners),
        pip_counts=game.by_player(counts),
        awards=game.by_player(award.awards),
        cumulative=cumulative,
        tie=award.tie,
    )
    game = game.with_scores(scores, ended)
    winner = game_winner(scores, rules.target_score)
    if winner is None:
        return game, (*verdicts, scored)
    won = GameState(game.players, rules, game.seats, scores, ended, game.players[winner])
    return won, (*verdicts, scored, GameWon(game.players[winner], cumulative))
