"""Explaining verdicts: the facts behind each one, read from the fold that judged it.

``explain(game, event)`` judges the event with the referee's own ``judge`` and reads, from the
state the judge had before and after it, the facts behind each verdict it gave: for a false
pass every tile that could have been played and the place it matches, for a block each hand
and the ends open to its holder, for a score the arithmetic. Nothing here judges again: every
fact is the answer of the domain's own questions (``Layout.places``, ``Layout.playable``,
``Layout.counted``, the scoring functions), asked of the states the fold went through. The
evidence is derived on demand (``referee explain``); the verdicts themselves are untouched.
Each piece of evidence names the sections of the rulebook it applies (``docs/rulebook.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from referee.domain.events import GameEvent, Passed, TileDrawn, TilePlayed
from referee.domain.evidence import (
    BlockFacts,
    CountedEnd,
    CountFacts,
    DrawFacts,
    Evidence,
    Facts,
    GameFacts,
    HandFacts,
    HeldHand,
    Penalty,
    PendingDouble,
    PlaceFacts,
    PlaceValue,
    Playable,
    PlayableFacts,
    RoundFacts,
    ScoreLine,
    Share,
    SideCount,
    TurnFacts,
)
from referee.domain.fouls import FoulKind
from referee.domain.judge import judge
from referee.domain.layout import Layout, Place
from referee.domain.line import Line
from referee.domain.revisions import Judge
from referee.domain.rules import BlockWinner, PlayScoring, Rules, Scoring, TiePolicy
from referee.domain.scoring import base_award, rounded, score_block
from referee.domain.spinner import Spinner
from referee.domain.state import GameState, RoundState
from referee.domain.tiles import (
    Tile,
    bit_of,
    mask_lowest_pips,
    mask_pips,
    set_mask,
    shows,
    sorted_tiles,
    tile,
)
from referee.domain.trains import Trains
from referee.domain.verdicts import (
    BlockDeclared,
    FoulRecorded,
    GameWon,
    PointsScored,
    RoundEnd,
    RoundScored,
    Verdict,
)

RULES = "RULES.md"

FOUL_RULES: dict[FoulKind, str] = {
    FoulKind.OUT_OF_TURN: f"{RULES} §2, §3",
    FoulKind.TILE_NOT_IN_HAND: f"{RULES} §3",
    FoulKind.END_NOT_AVAILABLE: f"{RULES} §3, §8",
    FoulKind.DOUBLE_UNSATISFIED: f"{RULES} §3, §8.2",
    FoulKind.TRAIN_CLOSED: f"{RULES} §3, §8.2",
    FoulKind.TILE_DOES_NOT_MATCH: f"{RULES} §1, §3",
    FoulKind.END_MISSING: f"{RULES} §3",
    FoulKind.DRAW_NOT_ALLOWED: f"{RULES} §2, §3",
    FoulKind.BONEYARD_EMPTY: f"{RULES} §1, §3",
    FoulKind.TILE_NOT_IN_BONEYARD: f"{RULES} §3",
    FoulKind.DRAW_LIMIT: f"{RULES} §2, §3",
    FoulKind.DRAW_WHILE_ABLE: f"{RULES} §2, §3",
    FoulKind.FALSE_PASS: f"{RULES} §2, §3",
    FoulKind.PASS_BEFORE_DRAWING: f"{RULES} §2, §3",
}
"""The sections each foul applies: the table of §3 and the rule it enforces."""

POINTS_RULE = f"{RULES} §10"
BLOCK_RULE = f"{RULES} §4"


def round_rule(rules: Rules, teams: bool) -> str:
    """Returns the sections that score a round under these rules."""
    section = "§5.3" if rules.scoring is Scoring.PENALTY else "§5.1"
    return f"{RULES} {section}, §9" if teams else f"{RULES} {section}"


def game_rule(rules: Rules) -> str:
    """Returns the sections that end a game under these rules."""
    return f"{RULES} §5.2, §5.3" if rules.scoring is Scoring.PENALTY else f"{RULES} §5.2"


# --- the fold --------------------------------------------------------------------------------


def explain(
    game: GameState | None, event: GameEvent, judging: Judge = judge
) -> tuple[GameState, tuple[Evidence, ...]]:
    """Judges ``event`` exactly as the referee does, with ``judging``: the judge of the
    game's rules revision (default: revision 1's); returns the game after it and the
    evidence behind each verdict, in announcement order.

    Raises ``InvalidInput`` as ``judge`` does, for an event that cannot be judged.
    """
    after, verdicts = judging(game, event)
    if not verdicts:
        return after, ()
    assert game is not None, "only an action of a game in play gives a verdict"
    scores = list(game.scores)
    return after, tuple(_evidence(game, event, after, v, scores) for v in verdicts)


def _evidence(
    before: GameState, event: GameEvent, after: GameState, verdict: Verdict, scores: list[int]
) -> Evidence:
    """Returns the evidence of one verdict; ``scores`` are the sides' scores just before it
    (the verdicts of one event change them in turn) and are brought up to date."""
    if isinstance(verdict, FoulRecorded):
        return foul_evidence(before, event, verdict, scores)
    if isinstance(verdict, PointsScored):
        return points_evidence(before, event, after, verdict, scores)
    if isinstance(verdict, BlockDeclared):
        return block_evidence(after, verdict)
    if isinstance(verdict, RoundScored):
        return round_evidence(event, after, verdict, scores)
    return game_evidence(after, verdict)


# --- sides and scores ------------------------------------------------------------------------


def sides(game: GameState) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Returns each side (team, or player when there are no teams) with its members."""
    teams = game.teams
    return tuple(
        (
            game.players[members[0]] if teams.ids is None else teams.ids[team],
            tuple(game.players[s] for s in members),
        )
        for team, members in ((t, teams.members(t)) for t in range(teams.size))
    )


def _side_of(game: GameState, seat: int) -> tuple[int, str]:
    team = game.teams.of_seat[seat]
    ids = game.teams.ids
    return team, game.players[seat] if ids is None else ids[team]


def _score_lines(
    game: GameState, before: Sequence[int], after: Sequence[int]
) -> tuple[ScoreLine, ...]:
    return tuple(
        ScoreLine(side, members, b, a - b, a)
        for (side, members), b, a in zip(sides(game), before, after, strict=True)
    )


# --- fouls -----------------------------------------------------------------------------------


def foul_evidence(
    game: GameState, event: GameEvent, verdict: FoulRecorded, scores: list[int]
) -> Evidence:
    """Returns the facts behind a foul, read from the game as it was before the action."""
    rnd = game.round
    assert rnd is not None, "a foul is recorded only in a round in play"
    assert isinstance(event, TilePlayed | TileDrawn | Passed)
    seat = game.seats[verdict.player]
    penalty = _penalty(game, seat, verdict, scores)
    foul = verdict.foul
    facts: Facts
    if foul is FoulKind.OUT_OF_TURN:
        facts = TurnFacts(game.players[rnd.turn], type(event).__name__, penalty)
    elif foul is FoulKind.TILE_NOT_IN_HAND:
        assert isinstance(event, TilePlayed)
        named = tile(*event.tile)
        facts = HandFacts(
            named, tuple(sorted_tiles(rnd.hand_masks[seat])), whereabouts(game, named), penalty
        )
    elif foul in _PLACE_FOULS:
        assert isinstance(event, TilePlayed)
        facts = place_facts(game, rnd, seat, event, foul, penalty)
    elif foul in _DRAW_FOULS:
        assert isinstance(event, TileDrawn)
        facts = draw_facts(game, rnd, event, foul, penalty)
    else:
        facts = playable_facts(game.rules, rnd, seat, penalty)
    return Evidence(verdict, FOUL_RULES[foul], facts, verdict.player)


_PLACE_FOULS = frozenset(
    {
        FoulKind.END_NOT_AVAILABLE,
        FoulKind.DOUBLE_UNSATISFIED,
        FoulKind.TRAIN_CLOSED,
        FoulKind.TILE_DOES_NOT_MATCH,
        FoulKind.END_MISSING,
    }
)
_DRAW_FOULS = frozenset(
    {
        FoulKind.DRAW_NOT_ALLOWED,
        FoulKind.BONEYARD_EMPTY,
        FoulKind.TILE_NOT_IN_BONEYARD,
        FoulKind.DRAW_LIMIT,
    }
)


def _penalty(
    game: GameState, seat: int, verdict: FoulRecorded, scores: list[int]
) -> Penalty | None:
    if not verdict.penalty:
        return None
    team, side = _side_of(game, seat)
    before = scores[team]
    sign = 1 if game.rules.scoring is Scoring.PENALTY else -1
    scores[team] = before + sign * verdict.penalty
    return Penalty(verdict.penalty, side, before, scores[team])


def whereabouts(game: GameState, t: Tile) -> str:
    """Returns where a tile is in the round in play, in words (for the auditor)."""
    rnd = game.round
    assert rnd is not None
    bit = bit_of(t)
    if not bit & set_mask(game.rules.max_pip):
        return f"not in the double-{game.rules.max_pip} set"
    for seat, hand in enumerate(rnd.hand_masks):
        if hand & bit:
            return f"in {game.players[seat]}'s hand"
    if rnd.boneyard_mask & bit:
        return "in the boneyard"
    return "on the layout or out of play"


def place_values(places: tuple[Place, ...] | None) -> tuple[PlaceValue, ...] | None:
    """Returns the layout's places as evidence (``None`` for an empty layout)."""
    if places is None:
        return None
    return tuple(
        PlaceValue(p.end.value if p.end is not None else p.train or "", p.value) for p in places
    )


def place_facts(
    game: GameState,
    rnd: RoundState,
    seat: int,
    event: TilePlayed,
    foul: FoulKind,
    penalty: Penalty | None,
) -> PlaceFacts:
    """Returns what the place rule needed of a rejected play, and what the play named."""
    layout = rnd.layout
    places = place_values(layout.places(seat))
    end = None if event.end is None else event.end.value
    named = tile(*event.tile)
    facts = PlaceFacts(
        _place_need(layout, foul, end, event.train),
        named,
        end,
        event.train,
        places,
        penalty=penalty,
    )
    if foul is FoulKind.TILE_DOES_NOT_MATCH:
        where = end if end is not None else event.train
        value = next((p.value for p in places or () if p.place == where), None)
        return _replace_place(facts, value=value)
    if isinstance(layout, Trains) and foul is FoulKind.DOUBLE_UNSATISFIED:
        pending = PendingDouble(
            layout.table.names[layout.pending],
            layout.ends[layout.pending],
            game.players[layout.pending_seat],
        )
        return _replace_place(facts, pending=pending)
    if isinstance(layout, Trains) and foul is FoulKind.TRAIN_CLOSED:
        return _replace_place(facts, open_trains=open_trains(layout))
    return facts


def _replace_place(
    facts: PlaceFacts,
    *,
    value: int | None = None,
    pending: PendingDouble | None = None,
    open_trains: tuple[str, ...] | None = None,
) -> PlaceFacts:
    return PlaceFacts(
        facts.need,
        facts.tile,
        facts.end,
        facts.train,
        facts.places,
        value,
        pending,
        open_trains,
        facts.penalty,
    )


def open_trains(layout: Trains) -> tuple[str, ...]:
    """Returns the ids of the open trains, in train order."""
    return tuple(n for i, n in enumerate(layout.table.names) if layout.open >> i & 1)


def _place_need(layout: Layout, foul: FoulKind, end: str | None, train: str | None) -> str:
    """Returns what the place rule needed, in words, for a play rejected with ``foul``."""
    if foul is FoulKind.END_MISSING:
        if isinstance(layout, Trains):
            return "every play in trains names a train"
        return "a play on a layout that is not empty names an end"
    if foul is FoulKind.DOUBLE_UNSATISFIED:
        return "a pending double binds every player to its train until a tile is played on it"
    if foul is FoulKind.TRAIN_CLOSED:
        return "another player's personal train takes a tile only while it is open"
    if foul is FoulKind.TILE_DOES_NOT_MATCH:
        return "a tile played on a place shows that place's value"
    # end_not_available
    if end is not None and train is not None:
        return "a play names one place: an end or a train, not both"
    if isinstance(layout, Trains):
        if end is not None:
            return "trains have no ends: a play names a train"
        return f"the train named must be a train of this game: {', '.join(layout.table.names)}"
    if train is not None:
        return "a line or a spinner has no trains: a play names an end"
    if isinstance(layout, Line) or (isinstance(layout, Spinner) and layout.arms is None):
        return "a line has two ends, left and right"
    if isinstance(layout, Spinner) and layout.spinner is None:
        return "up and down exist once the spinner (the first double) is down"
    return "up and down open once tiles lie against both sides of the spinner"


def draw_facts(
    game: GameState, rnd: RoundState, event: TileDrawn, foul: FoulKind, penalty: Penalty | None
) -> DrawFacts:
    """Returns what the draw rules needed of a rejected draw."""
    rules = game.rules
    needs = {
        FoulKind.DRAW_NOT_ALLOWED: "nobody draws in a game whose draw rule is none",
        FoulKind.BONEYARD_EMPTY: "a draw needs more tiles in the boneyard than boneyard_reserve",
        FoulKind.TILE_NOT_IN_BONEYARD: "a tile drawn comes from the boneyard",
        FoulKind.DRAW_LIMIT: "under draw once a player draws one tile a turn",
    }
    named = tile(*event.tile)
    return DrawFacts(
        needs[foul],
        rules.draw.value,
        rnd.boneyard_mask.bit_count(),
        rules.boneyard_reserve,
        rnd.drew,
        named,
        whereabouts(game, named) if foul is FoulKind.TILE_NOT_IN_BONEYARD else None,
        penalty,
    )


def matches(hand: int, layout: Layout, seat: int) -> tuple[Playable, ...]:
    """Returns every tile of ``hand`` that plays on a place available to ``seat``, once per
    place it matches (the tiles of the layout's own ``playable`` mask)."""
    able = sorted_tiles(hand & layout.playable(seat))
    places = layout.places(seat)
    if places is None:
        return tuple(Playable(t, None, None) for t in able)
    return tuple(
        Playable(t, p.end.value if p.end is not None else p.train, p.value)
        for t in able
        for p in places
        if shows(t, p.value)
    )


def playable_facts(
    rules: Rules, rnd: RoundState, seat: int, penalty: Penalty | None
) -> PlayableFacts:
    """Returns the hand, the places and the playable tiles of the player in ``seat``."""
    layout = rnd.layout
    hand = rnd.hand_masks[seat]
    return PlayableFacts(
        hand.bit_count(),
        tuple(sorted_tiles(hand)),
        place_values(layout.places(seat)),
        matches(hand, layout, seat),
        rnd.boneyard_mask.bit_count(),
        rules.boneyard_reserve,
        rules.draw.value,
        rnd.drew,
        rules.draw_while_able.value,
        penalty,
    )


# --- scoring during play ---------------------------------------------------------------------


def points_evidence(
    before: GameState,
    event: GameEvent,
    after: GameState,
    verdict: PointsScored,
    scores: list[int],
) -> Evidence:
    """Returns the count of the layout after the play, end by end, and what it scored."""
    assert isinstance(event, TilePlayed)
    rnd = after.round
    assert rnd is not None
    layout = rnd.layout
    assert isinstance(layout, Spinner), "only a spinner layout keeps a count"
    count = layout.counted()
    assert count is not None
    seat = before.seats[verdict.player]
    team, _ = _side_of(before, seat)
    played = before.round
    assert played is not None
    # the first tile needs no place: an end named with it is ignored (RULES.md §3)
    first = played.layout.places(seat) is None
    old = list(scores)
    scores[team] += verdict.points
    scoring = before.rules.play_scoring
    fives = count // 5 if count % 5 == 0 else 0
    threes = count // 3 if count % 3 == 0 else 0
    facts = CountFacts(
        tile(*event.tile),
        None if first or event.end is None else event.end.value,
        layout.single,
        counted_ends(layout),
        count,
        scoring.value,
        fives if scoring is not PlayScoring.THREES else 0,
        threes if scoring is not PlayScoring.FIVES else 0,
        verdict.points,
        _score_lines(before, old, scores)[team],
    )
    return Evidence(verdict, POINTS_RULE, facts, verdict.player)


def counted_ends(layout: Spinner) -> tuple[CountedEnd, ...]:
    """Returns each end's part of the count: its value and how often it counts."""
    left, right = layout.left, layout.right
    assert left is not None
    assert right is not None
    if layout.single:
        ends = [CountedEnd("left", left, 1), CountedEnd("right", right, 1)]
    else:
        ends = [
            CountedEnd("left", left, layout.left_weight),
            CountedEnd("right", right, layout.right_weight),
        ]
    if layout.up is not None and layout.down is not None:
        ends += [
            CountedEnd("up", layout.up, layout.up_weight),
            CountedEnd("down", layout.down, layout.down_weight),
        ]
    return tuple(ends)


# --- the end of a round ----------------------------------------------------------------------


def held_hands(game: GameState, rnd: RoundState) -> tuple[HeldHand, ...]:
    """Returns every hand as it is, its pips and what it could play."""
    layout = rnd.layout
    double_blank = game.rules.double_blank
    return tuple(
        HeldHand(
            player,
            tuple(sorted_tiles(hand)),
            mask_pips(hand, double_blank),
            place_values(layout.places(seat)),
            matches(hand, layout, seat),
        )
        for seat, (player, hand) in enumerate(zip(game.players, rnd.hand_masks, strict=True))
    )


def block_evidence(after: GameState, verdict: BlockDeclared) -> Evidence:
    """Returns each hand and the ends open to its holder, the boneyard and the passes."""
    rnd = after.round
    assert rnd is not None
    rules = after.rules
    facts = BlockFacts(
        rules.block_confirmation.value,
        verdict.proposer,
        verdict.confirmed_by,
        rnd.boneyard_mask.bit_count(),
        rules.boneyard_reserve,
        held_hands(after, rnd),
        tuple(PlaceValue(k, v) for k, v in verdict.open_ends.items()),
    )
    return Evidence(verdict, BLOCK_RULE, facts, verdict.proposer)


class Payout(NamedTuple):
    """How a round was paid: who won by which rule, and what each winner received."""

    rule: str
    lowest: int | None
    tied: tuple[int, ...]
    winners: tuple[int, ...]
    points: str
    others: int
    shares: tuple[Share, ...]
    awards: tuple[int, ...]
    """What each side adds to its score."""


def round_evidence(
    event: GameEvent,
    after: GameState,
    verdict: RoundScored,
    scores: list[int],
) -> Evidence:
    """Returns the hands, each side's pip count and the formula that paid the round."""
    rnd = after.round
    assert rnd is not None
    rules = after.rules
    teams = after.teams
    counts = rnd.pip_counts(rules.double_blank)
    totals = teams.totals(counts)
    named = sides(after)
    domino = verdict.reason is RoundEnd.DOMINO and isinstance(event, TilePlayed)
    out = event.player if domino and isinstance(event, TilePlayed) else None
    if rules.scoring is Scoring.PENALTY:
        payout = penalty_payout(after, counts, out)
    else:
        payout = award_payout(after, rnd, counts, out)
    lowest_tiles = {}
    if len(payout.tied) > 1 and rules.tie is TiePolicy.LOWEST_TILE:
        for t in payout.tied:
            held = 0
            for s in teams.members(t):
                held |= rnd.hand_masks[s]
            lowest_tiles[t] = mask_lowest_pips(held, rules.double_blank)
    old = list(scores)
    scores[:] = [s + a for s, a in zip(scores, payout.awards, strict=True)]
    facts = RoundFacts(
        verdict.reason.value,
        rules.scoring.value,
        out,
        rules.double_blank,
        held_hands(after, rnd),
        tuple(
            SideCount(side, members, total, lowest_tiles.get(t))
            for t, ((side, members), total) in enumerate(zip(named, totals, strict=True))
        ),
        payout.rule,
        payout.lowest,
        tuple(named[t][0] for t in payout.tied),
        rules.tie.value,
        tuple(named[w][0] for w in payout.winners),
        payout.points,
        payout.others,
        payout.shares,
        rules.rounding.value,
        _score_lines(after, old, scores),
    )
    return Evidence(verdict, round_rule(rules, teams.ids is not None), facts, out)


def penalty_payout(game: GameState, counts: tuple[int, ...], out: str | None) -> Payout:
    """Returns how a round is paid under penalty scoring: each player adds their own pips;
    the winners are who went out, or every player with the lowest count (RULES.md §5.3)."""
    if out is not None:
        return Payout("domino", None, (), (game.seats[out],), "own_pips", 0, (), counts)
    lowest = min(counts)
    winners = tuple(seat for seat, c in enumerate(counts) if c == lowest)
    tied = winners if len(winners) > 1 else ()
    return Payout("lowest_count", lowest, tied, winners, "own_pips", 0, (), counts)


def award_payout(
    game: GameState, rnd: RoundState, counts: tuple[int, ...], out: str | None
) -> Payout:
    """Returns how a round is paid under award scoring (RULES.md §5.1), with the domain's
    own formulas: the winners, U, each winner's base award, its division and rounding."""
    rules = game.rules
    teams = game.teams
    totals = teams.totals(counts)
    tied: tuple[int, ...] = ()
    if out is not None:
        rule, lowest, policy = "domino", None, rules.domino_points
        winners: tuple[int, ...] = (teams.of_seat[game.seats[out]],)
    else:
        rule, policy = rules.block_winner.value, rules.block_points
        if rules.block_winner is BlockWinner.LOWEST_PLAYER:
            lowest = min(counts)
            tied = tuple(sorted({teams.of_seat[s] for s, c in enumerate(counts) if c == lowest}))
        else:
            lowest = min(totals)
            tied = tuple(t for t, total in enumerate(totals) if total == lowest)
        tied = tied if len(tied) > 1 else ()
        winners = score_block(rnd.hand_masks, counts, teams, rules).winners
    won = set(winners)
    others = sum(total for t, total in enumerate(totals) if t not in won)
    winners_total = sum(totals[w] for w in winners)
    named = sides(game)
    shares = []
    awards = [0] * len(totals)
    for w in winners:
        base = base_award(policy, others, totals[w], winners_total)
        divided = base // len(winners)
        awards[w] = rounded(divided, rules.rounding)
        shares.append(Share(named[w][0], totals[w], base, len(winners), divided, awards[w]))
    return Payout(rule, lowest, tied, winners, policy.value, others, tuple(shares), tuple(awards))


def game_evidence(after: GameState, verdict: GameWon) -> Evidence:
    """Returns the condition that ended the game and the final standings."""
    rules = after.rules
    rnd = after.round
    assert rnd is not None
    number = rnd.round_number
    last = rules.rounds is not None and number >= rules.rounds
    target = rules.target_score
    penalty = rules.scoring is Scoring.PENALTY
    named = sides(after)
    reached = (
        ()
        if target is None
        else tuple(named[t][0] for t, s in enumerate(after.scores) if s >= target)
    )
    winners = tuple(
        side
        for side, members in named
        if any(p in (verdict.winners or (verdict.winner,)) for p in members)
    )
    facts = GameFacts(
        "rounds" if last else "target_score",
        number,
        rules.rounds,
        target,
        rules.scoring.value,
        "lowest" if penalty else "highest",
        _score_lines(after, after.scores, after.scores),
        reached,
        winners,
    )
    return Evidence(verdict, game_rule(rules), facts, None)
