"""Properties of the judge over random, mostly legal games with occasional fouls.

Given random rules, 2-6 players and double-six or double-nine, each game is driven by random
choices among the legal plays, draws and passes, with fouls and invalid input mixed in. After
every event the table must still hold exactly the set; every block must really be a block;
awards are never negative; the lowest pip count wins a blocked round.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.domain.errors import InvalidInput
from referee.domain.events import End, GameEvent, GameStarted, Passed, RoundStarted, TileDrawn
from referee.domain.events import TilePlayed as Played
from referee.domain.fouls import FoulKind
from referee.domain.judge import judge
from referee.domain.rules import (
    BlockConfirmation,
    DrawRule,
    DrawWhileAble,
    PointsPolicy,
    Rounding,
    Rules,
    TiePolicy,
)
from referee.domain.state import GameState, RoundState
from referee.domain.tiles import Tile, full_set, pips, shows, tile
from referee.domain.verdicts import BlockDeclared, FoulRecorded, GameWon, RoundScored

VERDICT_ORDER = (FoulRecorded, BlockDeclared, RoundScored, GameWon)


@st.composite
def rules_of(draw: st.DrawFn) -> Rules:
    """Random rule options (double-six or double-nine)."""
    penalties = draw(
        st.dictionaries(st.sampled_from(list(FoulKind)), st.integers(0, 20), max_size=3)
    )
    return Rules(
        max_pip=draw(st.sampled_from((6, 9))),
        draw=draw(st.sampled_from(list(DrawRule))),
        draw_while_able=draw(st.sampled_from(list(DrawWhileAble))),
        block_confirmation=draw(st.sampled_from(list(BlockConfirmation))),
        block_points=draw(st.sampled_from(list(PointsPolicy))),
        domino_points=draw(st.sampled_from(list(PointsPolicy))),
        tie=draw(st.sampled_from(list(TiePolicy))),
        rounding=draw(st.sampled_from(list(Rounding))),
        double_blank=draw(st.sampled_from((0, 0, 25, 50, 100))),
        foul_penalty=penalties,
        target_score=draw(st.one_of(st.none(), st.integers(1, 120))),
    )


@dataclass
class Table:
    """The judge's game, and what the test knows independently of it."""

    game: GameState
    layout: set[Tile] = field(default_factory=set)
    sleeping: frozenset[Tile] = frozenset()
    penalties: dict[str, int] = field(default_factory=dict)
    awards: dict[str, int] = field(default_factory=dict)
    blocks: int = 0
    declared: int = 0
    dominoes: int = 0
    fouls: int = 0


def deal(rng: random.Random, table: Table, number: int) -> RoundStarted:
    """A random deal: hands of 1-7 tiles, the boneyard all, part or none of the rest."""
    rules = table.game.rules
    tiles = sorted(full_set(rules.max_pip))
    rng.shuffle(tiles)
    players = table.game.players
    size = rng.randint(1, min(7, len(tiles) // (len(players) + 1)))
    hands = {
        p: tuple(_shown(rng, t) for t in tiles[i * size : (i + 1) * size])
        for i, p in enumerate(players)
    }
    rest = tiles[len(players) * size :]
    if rules.draw is DrawRule.NONE:
        boneyard: list[Tile] = []
    else:
        boneyard = rest[: rng.choice((len(rest), len(rest), rng.randint(0, len(rest))))]
    return RoundStarted(number, hands, tuple(_shown(rng, t) for t in boneyard), rng.choice(players))


def _shown(rng: random.Random, t: Tile) -> Tile:
    """A tile written either way round."""
    return t if rng.random() < 0.5 else (t[1], t[0])


def legal_action(rng: random.Random, game: GameState, rnd: RoundState) -> GameEvent:
    """What an honest player would do now."""
    seat = rnd.turn
    player = game.players[seat]
    plays = rnd.legal_plays(seat)
    if plays and rng.random() < 0.95:
        t, end, _ = rng.choice(plays)
        return Played(rnd.number, player, _shown(rng, t), end)
    rules = game.rules
    if rnd.boneyard and rules.requires_draw(rnd.drew) and not plays:
        return TileDrawn(rnd.number, player, rng.choice(sorted(rnd.boneyard)))
    return Passed(rnd.number, player)


def foul_action(rng: random.Random, game: GameState, rnd: RoundState) -> GameEvent:
    """Something a careless player (or backend) might report."""
    players = game.players
    player = rng.choice(players)
    number = rnd.number if rng.random() < 0.9 else rnd.number + rng.choice((-1, 1))
    a, b = rng.randint(0, game.rules.max_pip), rng.randint(0, game.rules.max_pip)
    kind = rng.randrange(4)
    if kind == 0:
        end = rng.choice((End.LEFT, End.RIGHT, None))
        return Played(number, player, (a, b), end)
    if kind == 1:
        return TileDrawn(number, player, (a, b))
    if kind == 2:
        return Passed(number, player)
    seat = rnd.turn
    hand = sorted(rnd.hands[seat])
    return Played(number, players[seat], rng.choice(hand), rng.choice((End.LEFT, End.RIGHT, None)))


def check_conservation(table: Table, rnd: RoundState) -> None:
    """Hands, boneyard, layout and sleeping tiles are the set, each tile exactly once."""
    parts: list[frozenset[Tile] | set[Tile]] = [*rnd.hands, rnd.boneyard, table.layout]
    parts.append(table.sleeping)
    total = sum(len(p) for p in parts)
    union: set[Tile] = set().union(*parts)
    the_set = full_set(table.game.rules.max_pip)
    assert union == the_set, sorted(the_set ^ union)
    assert total == len(the_set), "a tile is in two places"
    for part in parts:
        assert all(t[0] <= t[1] for t in part), "tiles are kept in their normal form"


def check_block(table: Table, after: GameState, v: BlockDeclared) -> None:
    """Both conditions of RULES.md section 4 hold when the block is declared."""
    rnd = after.round
    assert rnd is not None
    assert rnd.ended
    assert not rnd.boneyard, "a block with tiles in the boneyard"
    left, right = v.open_ends["left"], v.open_ends["right"]
    for hand in rnd.hands:
        assert not any(shows(t, left) or shows(t, right) for t in hand), (
            "a block while someone can play"
        )
    rules = after.rules
    counts = {
        p: sum(pips(t, rules.double_blank) for t in h)
        for p, h in zip(after.players, rnd.hands, strict=True)
    }
    assert dict(v.pip_counts) == counts
    if rules.block_confirmation is BlockConfirmation.FULL_ROUND:
        n = len(after.players)
        assert len(v.confirmed_by) == n
        assert v.confirmed_by[0] == v.proposer
        first = after.seats[v.proposer]
        assert list(v.confirmed_by) == [after.players[(first + i) % n] for i in range(n)]
    else:
        assert v.confirmed_by == ()
    table.blocks += 1
    table.declared += 1


def check_scored(table: Table, after: GameState, v: RoundScored) -> None:
    """Awards are never negative; the right players win; cumulative adds up."""
    assert all(a >= 0 for a in v.awards.values()), v.awards
    assert set(v.awards) == set(after.players)
    counts = v.pip_counts
    lowest = min(counts.values())
    if v.reason.value == "blocked":
        assert all(counts[w] == lowest for w in v.winners), (v.winners, counts)
        assert v.tie == (sum(1 for c in counts.values() if c == lowest) > 1)
        if not v.tie:
            assert len(v.winners) == 1
        elif after.rules.tie is TiePolicy.NO_WINNER:
            assert v.winners == ()
        table.blocks -= 1  # matched with its BlockDeclared
    else:
        (winner,) = v.winners
        assert counts[winner] == 0
        assert not v.tie
        table.dominoes += 1
    for p in after.players:
        if p not in v.winners:
            assert v.awards[p] == 0
        table.awards[p] = table.awards.get(p, 0) + v.awards[p]
        assert v.cumulative[p] == table.awards[p] - table.penalties.get(p, 0)
    assert table.blocks == 0


def step(table: Table, event: GameEvent) -> None:
    """Judges one event and checks every property on the result."""
    before = table.game
    rnd_before = before.round
    try:
        after, verdicts = judge(before, event)
    except InvalidInput:
        return  # invalid input changes nothing (the judge is pure)
    order = [next(i for i, k in enumerate(VERDICT_ORDER) if isinstance(v, k)) for v in verdicts]
    assert order == sorted(order)
    rejected = any(isinstance(v, FoulRecorded) and not v.applied for v in verdicts)
    if rejected:
        assert after.round == rnd_before, "a rejected action changed the round"
    elif isinstance(event, Played) and rnd_before is not None:
        table.layout.add(tile(*event.tile))
    for v in verdicts:
        if isinstance(v, FoulRecorded):
            assert v.penalty == before.rules.penalty(v.foul) >= 0
            assert v.applied == (not v.foul.is_rejected)
            table.penalties[v.player] = table.penalties.get(v.player, 0) + v.penalty
            table.fouls += 1
        elif isinstance(v, BlockDeclared):
            assert rnd_before is not None
            check_block(table, after, v)
        elif isinstance(v, RoundScored):
            check_scored(table, after, v)
        elif isinstance(v, GameWon):
            assert after.winner == v.winner
            assert after.rules.target_score is not None
            assert v.cumulative[v.winner] >= after.rules.target_score
    assert list(after.scores) == [
        table.awards.get(p, 0) - table.penalties.get(p, 0) for p in after.players
    ]
    table.game = after
    if after.round is not None:
        check_conservation(table, after.round)


def play_game(rng: random.Random, rules: Rules, players: int, foul_rate: float) -> Table:
    """Plays a whole game of up to three rounds, checking after every event."""
    names = tuple(f"p{i}" for i in range(players))
    game, _ = judge(None, GameStarted(names, rules))
    table = Table(game)
    for number in range(1, 4):
        dealing = deal(rng, table, number)
        dealt = {tile(*t) for h in dealing.hands.values() for t in h} | {
            tile(*t) for t in dealing.boneyard
        }
        table.layout = set()
        table.sleeping = full_set(rules.max_pip) - dealt
        step(table, dealing)
        for _ in range(400):
            rnd = table.game.round
            assert rnd is not None
            if rnd.ended:
                break
            if rng.random() < foul_rate:
                step(table, foul_action(rng, table.game, rnd))
            else:
                step(table, legal_action(rng, table.game, rnd))
        else:
            raise AssertionError("a round of honest play did not end in 400 actions")
        if table.game.is_over:
            break
    return table


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(
    rules=rules_of(),
    players=st.integers(2, 6),
    foul_rate=st.sampled_from((0.0, 0.05, 0.2)),
    rng=st.randoms(use_true_random=False),
)
def test_every_event_keeps_the_invariants(
    rules: Rules, players: int, foul_rate: float, rng: random.Random
) -> None:
    play_game(rng, rules, players, foul_rate)


@settings(max_examples=100, deadline=None)
@given(
    players=st.integers(2, 6),
    max_pip=st.sampled_from((6, 9)),
    tie=st.sampled_from(list(TiePolicy)),
    seed=st.integers(0, 2**32),
)
def test_draw_none_games_often_block_and_every_block_holds(
    players: int, max_pip: int, tie: TiePolicy, seed: int
) -> None:
    rules = Rules(max_pip=max_pip, draw=DrawRule.NONE, tie=tie)
    play_game(random.Random(seed), rules, players, foul_rate=0.1)


def test_blocks_do_happen_in_the_generated_games() -> None:
    """Guards the generator: the block properties above are not vacuous."""
    declared = 0
    for seed in range(60):
        mode = list(BlockConfirmation)[seed % 2]
        rules = Rules(draw=DrawRule.NONE, block_confirmation=mode)
        declared += play_game(random.Random(seed), rules, 4, foul_rate=0.05).declared
    assert declared >= 10
