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
from referee.domain.tiles import Tile, format_tile, in_set, tile
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
        return _act(game, event)  # type: ignore[arg-type]
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
    hands = _check_deal(game, event)
    boneyard = frozenset(tile(*t) for t in event.boneyard)
    rnd = RoundState(
        number=event.round,
        hands=hands,
        boneyard=boneyard,
        left=None,
        right=None,
        turn=game.seats[event.leader],
        drew=False,
        chain=(),
    )
    return game.with_round(rnd), NO_VERDICTS


def _check_deal(game: GameState, event: RoundStarted) -> tuple[frozenset[Tile], ...]:
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
    seen: set[Tile] = set()
    for owner, tiles in [
        *((p, event.hands[p]) for p in game.players),
        ("boneyard", event.boneyard),
    ]:
        if owner != "boneyard" and not tiles:
            raise InvalidInput(RejectionReason.BAD_DEAL, f"player {owner!r} was dealt no tiles")
        for raw in tiles:
            t = tile(*raw)
            if not in_set(t, rules.max_pip):
                raise InvalidInput(
                    RejectionReason.BAD_DEAL,
                    f"tile {format_tile(t)} in {owner} is not in the double-{rules.max_pip} set",
                )
            if t in seen:
                raise InvalidInput(
                    RejectionReason.BAD_DEAL, f"tile {format_tile(t)} is dealt twice ({owner})"
                )
            seen.add(t)
    return tuple(frozenset(tile(*t) for t in event.hands[p]) for p in game.players)


# --- actions ---------------------------------------------------------------------------------


def _act(game: GameState, action: Action) -> Judgement:
    seat = game.seats.get(action.player)
    if seat is None:
        raise InvalidInput(
            RejectionReason.UNKNOWN_PLAYER, f"player {action.player!r} does not sit at this game"
        )
    rnd = game.round
    if rnd is None:
        raise InvalidInput(
            RejectionReason.ROUND_NOT_STARTED, f"{_kind(action)} before the first RoundStarted"
        )
    if action.round != rnd.number:
        raise InvalidInput(
            RejectionReason.WRONG_ROUND,
            f"{_kind(action)} names round {action.round}; the current round is {rnd.number}",
        )
    if rnd.ended:
        raise InvalidInput(
            RejectionReason.ROUND_OVER, f"round {rnd.number} is over; no action may follow"
        )
    if seat != rnd.turn:
        return _rejected(game, seat, FoulKind.OUT_OF_TURN)
    kind = type(action)
    if kind is TilePlayed:
        return _play(game, rnd, seat, action)  # type: ignore[arg-type]
    if kind is TileDrawn:
        return _draw(game, rnd, seat, action)  # type: ignore[arg-type]
    return _pass(game, rnd, seat, action)  # type: ignore[arg-type]


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
    t = (a, b) if a <= b else (b, a)
    hand = rnd.hands[seat]
    if t not in hand:
        return _rejected(game, seat, FoulKind.TILE_NOT_IN_HAND)
    left, right = rnd.left, rnd.right
    if left is None or right is None:
        # The first tile opens the line as written: [x, y] gives left = x, right = y.
        left, right = a, b
    else:
        end = action.end
        if end is None:
            return _rejected(game, seat, FoulKind.END_MISSING)
        value = left if end is End.LEFT else right
        if a == value:
            shown = b
        elif b == value:
            shown = a
        else:
            return _rejected(game, seat, FoulKind.TILE_DOES_NOT_MATCH)
        if end is End.LEFT:
            left = shown
        else:
            right = shown
    hands = rnd.hands
    played = hand - {t}
    hands = (*hands[:seat], played, *hands[seat + 1 :])
    after = RoundState(
        rnd.number,
        hands,
        rnd.boneyard,
        left,
        right,
        (seat + 1) % len(game.players),
        False,  # noqa: FBT003
        (),
    )
    if not played:
        return _end_round(game, after, seat, RoundEnd.DOMINO, ())
    if game.rules.block_confirmation is BlockConfirmation.FULL_ROUND:
        # A play breaks any confirmation chain: no block can follow it in this mode.
        return GameState(game.players, game.rules, game.seats, game.scores, after, None), ()
    return _after_applied(game, after, seat, ())


def _draw(game: GameState, rnd: RoundState, seat: int, action: TileDrawn) -> Judgement:
    rules = game.rules
    if rules.draw is DrawRule.NONE:
        return _rejected(game, seat, FoulKind.DRAW_NOT_ALLOWED)
    if not rnd.boneyard:
        return _rejected(game, seat, FoulKind.BONEYARD_EMPTY)
    t = tile(*action.tile)
    if t not in rnd.boneyard:
        return _rejected(game, seat, FoulKind.TILE_NOT_IN_BONEYARD)
    if rules.draw is DrawRule.ONCE and rnd.drew:
        return _rejected(game, seat, FoulKind.DRAW_LIMIT)
    verdicts: tuple[Verdict, ...] = ()
    if rules.draw_while_able is DrawWhileAble.FOUL and rnd.can_play(seat):
        game, foul = _foul(game, seat, FoulKind.DRAW_WHILE_ABLE)
        verdicts = (foul,)
    hands = _replace(rnd.hands, seat, rnd.hands[seat] | {t})
    after = RoundState(
        rnd.number, hands, rnd.boneyard - {t}, rnd.left, rnd.right, seat, drew=True, chain=()
    )
    return _after_applied(game, after, seat, verdicts)


def _pass(game: GameState, rnd: RoundState, seat: int, action: Passed) -> Judgement:
    del action  # a pass carries nothing beyond who passed, checked already
    rules = game.rules
    foul: FoulKind | None = None
    if hand_can_play(rnd.hands[seat], rnd.left, rnd.right):
        foul = FoulKind.FALSE_PASS
    elif rnd.boneyard and rules.requires_draw(rnd.drew):
        foul = FoulKind.PASS_BEFORE_DRAWING
    verdicts: tuple[Verdict, ...] = ()
    if foul is not None:
        game, recorded = _foul(game, seat, foul)
        verdicts = (recorded,)
    after = RoundState(
        rnd.number,
        rnd.hands,
        rnd.boneyard,
        rnd.left,
        rnd.right,
        game.next_seat(seat),
        drew=False,
        chain=extend_chain(rnd, seat, legitimate=foul is None),
    )
    return _after_applied(game, after, seat, verdicts)


def _after_applied(
    game: GameState, rnd: RoundState, actor: int, verdicts: tuple[Verdict, ...]
) -> Judgement:
    mode = game.rules.block_confirmation
    if mode is BlockConfirmation.FULL_ROUND and not rnd.chain:  # no chain, no block
        return (
            GameState(game.players, game.rules, game.seats, game.scores, rnd, game.winner),
            verdicts,
        )
    proposer = block_proposer(rnd, mode, actor, len(game.players))
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
        else score_block(rnd.hands, counts, rules)
    )
    scores = tuple(s + a for s, a in zip(game.scores, award.awards, strict=True))
    ended = RoundState(
        rnd.number,
        rnd.hands,
        rnd.boneyard,
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


def _replace(
    hands: tuple[frozenset[Tile], ...], seat: int, hand: frozenset[Tile]
) -> tuple[frozenset[Tile], ...]:
    return (*hands[:seat], hand, *hands[seat + 1 :])
