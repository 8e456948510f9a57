"""Properties of the judge over random games of every family, honest or with fouls.

Each game is played against a model of the table written here, from the rulebook, apart from
the referee: which ends exist and who may play on them (a line, a spinner, trains), what a play
and a pass do to them, and the count of section 10. Honest players choose their moves from the
model's list, never the referee's ``legal_plays``. After every event: the tiles are the set,
each exactly once; the referee's ends are the model's; every block declared really is one
(both conditions of section 4, checked against the model); awards are never negative; honest
play records no foul; scores add up.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.domain.errors import InvalidInput
from referee.domain.events import End, GameEvent, GameStarted, Passed, RoundStarted, TileDrawn
from referee.domain.events import TilePlayed as Played
from referee.domain.fouls import FoulKind
from referee.domain.judge import judge
from referee.domain.rules import (
    BlockConfirmation,
    BlockWinner,
    DoubleRule,
    DrawRule,
    DrawWhileAble,
    EngineOrder,
    Layout,
    PlayScoring,
    PointsPolicy,
    Rounding,
    Rules,
    Scoring,
    SpinnerArms,
    TiePolicy,
)
from referee.domain.state import GameState, RoundState
from referee.domain.tiles import Tile, full_set, pips, tile
from referee.domain.verdicts import BlockDeclared, FoulRecorded, GameWon, PointsScored, RoundScored

VERDICT_ORDER = (FoulRecorded, PointsScored, BlockDeclared, RoundScored, GameWon)

# --- the model of the table ------------------------------------------------------------------


@dataclass
class ModelEnd:
    """One end of the model: the value it shows and its outermost tile."""

    value: int
    double: bool = False
    played: bool = False  # an arm nothing has been played on counts nothing


@dataclass
class Model:
    """The layout as the rulebook describes it, kept by the test."""

    layout: Layout
    players: tuple[str, ...]
    arms_at_once: bool = False
    spins: bool = False
    ends: dict[str, ModelEnd] = field(default_factory=dict)  # by end name or train id
    single: bool = True  # line/spinner: only the first tile lies on the line
    spinner: int | None = None
    bare_sides: set[str] = field(default_factory=set)  # sides whose outermost is the spinner
    open: set[str] = field(default_factory=set)
    pending: str | None = None
    pending_by: str | None = None
    follow_up: bool = False
    mexican: bool = False

    def available(self, player: str) -> list[tuple[str, int]] | None:
        """The places ``player`` may play on, with their values; ``None``: any tile, unplaced."""
        if self.layout is Layout.TRAINS:
            if self.pending is not None:
                return [(self.pending, self.ends[self.pending].value)]
            names = [player, *(["mexican"] if self.mexican else [])]
            names += [p for p in self.players if p != player and p in self.open]
            return [(n, self.ends[n].value) for n in names]
        if not self.ends:
            return None
        places = ["left", "right"]
        if self.spinner is not None and (self.arms_at_once or not self.bare_sides):
            places += ["up", "down"]
        return [(p, self.ends[p].value) for p in places]

    def play(self, player: str, t: Tile, place: str | None, live: set[Tile]) -> None:
        """Lays ``t`` (as written) on ``place``; ``live`` are the tiles in hands and boneyard
        after the play."""
        a, b = t
        double = a == b
        if self.layout is Layout.TRAINS:
            assert place is not None
            end = self.ends[place]
            self.ends[place] = ModelEnd(b if a == end.value else a, double, played=True)
            if place == player:
                self.open.discard(player)
            self.pending = self.pending_by = None
            if double and any(a in x for x in live):
                self.pending, self.pending_by = place, player
            return
        if not self.ends:
            self.ends = {"left": ModelEnd(a, double), "right": ModelEnd(b, double)}
            if double and self.spins:
                self.spinner = a
                self.bare_sides = {"left", "right"}
                self.ends["up"] = ModelEnd(a)
                self.ends["down"] = ModelEnd(a)
            return
        assert place is not None
        end = self.ends[place]
        self.ends[place] = ModelEnd(b if a == end.value else a, double, played=True)
        if place in ("left", "right"):
            self.single = False
            self.bare_sides.discard(place)
            if double and self.spins and self.spinner is None:
                self.spinner = a
                self.bare_sides.add(place)
                self.ends["up"] = ModelEnd(a)
                self.ends["down"] = ModelEnd(a)

    def passed(self, player: str) -> None:
        if self.layout is Layout.TRAINS:
            self.open.add(player)
            if self.follow_up and self.pending_by == player:
                self.pending = self.pending_by = None

    def count(self) -> int:
        """The count of RULES.md section 10."""
        left, right = self.ends["left"], self.ends["right"]
        if self.single:
            total = left.value + right.value
        else:
            total = sum(e.value * (2 if e.double else 1) for e in (left, right))
        for arm in ("up", "down"):
            e = self.ends.get(arm)
            if e is not None and e.played:
                total += e.value * (2 if e.double else 1)
        return total

    def shown(self) -> dict[str, int]:
        return {name: e.value for name, e in self.ends.items()}


def new_model(rules: Rules, players: tuple[str, ...], engine: Tile | None) -> Model:
    model = Model(rules.layout, players)
    if rules.layout is Layout.TRAINS:
        assert engine is not None
        model.mexican = rules.mexican_train
        model.follow_up = rules.double_rule is DoubleRule.FOLLOW_UP
        names = [*players, *(["mexican"] if rules.mexican_train else [])]
        model.ends = {n: ModelEnd(engine[0]) for n in names}
        model.open = {"mexican"} if rules.mexican_train else set()
    else:
        model.spins = rules.layout is Layout.SPINNER
        model.arms_at_once = rules.spinner_arms is SpinnerArms.AT_ONCE
    return model


def moves(model: Model, player: str, hand: frozenset[Tile]) -> list[tuple[Tile, str | None]]:
    """Every honest play: each tile of the hand on each available place it shows."""
    places = model.available(player)
    if places is None:
        return [(t, None) for t in sorted(hand)]
    return [(t, name) for t in sorted(hand) for name, value in places if value in t]


def can_play(model: Model, player: str, hand: frozenset[Tile]) -> bool:
    return bool(moves(model, player, hand))


# --- games -----------------------------------------------------------------------------------


@st.composite
def games(draw: st.DrawFn) -> tuple[Rules, int, bool]:
    """Random rules of any family, a number of players, and whether they play in teams."""
    layout = draw(st.sampled_from(list(Layout)))
    trains = layout is Layout.TRAINS
    options: dict[str, Any] = {
        "max_pip": draw(st.sampled_from((6, 9, 12) if trains else (6, 9))),
        "draw": draw(st.sampled_from(list(DrawRule))),
        "draw_while_able": draw(st.sampled_from(list(DrawWhileAble))),
        "double_blank": draw(st.sampled_from((0, 0, 25))),
        "boneyard_reserve": draw(st.sampled_from((0, 0, 1, 2))),
        "foul_penalty": draw(
            st.dictionaries(st.sampled_from(list(FoulKind)), st.integers(0, 20), max_size=3)
        ),
        "target_score": draw(st.one_of(st.none(), st.integers(1, 150))),
        "rounds": draw(st.one_of(st.none(), st.integers(1, 3))),
    }
    if trains:
        options["mexican_train"] = draw(st.booleans())
        options["double_rule"] = draw(st.sampled_from(list(DoubleRule)))
        options["engine_order"] = draw(st.sampled_from(list(EngineOrder)))
    else:
        options["block_confirmation"] = draw(st.sampled_from(list(BlockConfirmation)))
        if layout is Layout.SPINNER:
            options["spinner_arms"] = draw(st.sampled_from(list(SpinnerArms)))
    scoring = draw(st.sampled_from(list(Scoring)))
    teams = False
    if scoring is Scoring.AWARD:
        options["block_points"] = draw(st.sampled_from(list(PointsPolicy)))
        options["domino_points"] = draw(st.sampled_from(list(PointsPolicy)))
        options["tie"] = draw(st.sampled_from(list(TiePolicy)))
        options["rounding"] = draw(st.sampled_from(list(Rounding)))
        options["block_winner"] = draw(st.sampled_from(list(BlockWinner)))
        if not trains:
            options["play_scoring"] = draw(st.sampled_from(list(PlayScoring)))
        teams = draw(st.booleans())
    players = draw(st.sampled_from((4, 6))) if teams else draw(st.integers(2, 6))
    rules = Rules.of(layout=layout, scoring=scoring, **options)
    return rules, players, teams


@dataclass
class Table:
    """The judge's game, the model, and what the test knows independently of the judge."""

    game: GameState
    model: Model | None = None
    laid: set[Tile] = field(default_factory=set)
    sleeping: frozenset[Tile] = frozenset()
    engine: Tile | None = None
    points: dict[int, int] = field(default_factory=dict)  # by team number
    blocks: int = 0
    declared: int = 0
    fouls: int = 0
    honest: bool = True

    def team(self, player: str) -> int:
        return self.game.teams.of_seat[self.game.seats[player]]


def deal(rng: random.Random, table: Table, number: int) -> RoundStarted:
    """A random deal: an engine in trains, hands of 1 or more, the boneyard all, part or none."""
    rules = table.game.rules
    tiles = sorted(full_set(rules.max_pip))
    engine = None
    if rules.layout is Layout.TRAINS:
        if rules.engine_order is EngineOrder.DESCENDING:
            e = rules.max_pip - (number - 1) % (rules.max_pip + 1)
        else:
            e = rng.randint(0, rules.max_pip)
        engine = (e, e)
        tiles.remove(engine)
    rng.shuffle(tiles)
    players = table.game.players
    size = rng.randint(1, min(10, len(tiles) // (len(players) + 1)))
    hands = {
        p: tuple(_shown(rng, t) for t in tiles[i * size : (i + 1) * size])
        for i, p in enumerate(players)
    }
    rest = tiles[len(players) * size :]
    boneyard: list[Tile] = []
    if rules.draw is not DrawRule.NONE:
        boneyard = rest[: rng.choice((len(rest), len(rest), rng.randint(0, len(rest))))]
    leader = rng.choice(players)
    return RoundStarted(number, hands, tuple(_shown(rng, t) for t in boneyard), leader, engine)


def _shown(rng: random.Random, t: Tile) -> Tile:
    return t if rng.random() < 0.5 else (t[1], t[0])


def _place(model: Model, name: str | None) -> tuple[End | None, str | None]:
    if name is None:
        return None, None
    if model.layout is Layout.TRAINS:
        return None, name
    return End(name), None


def honest_action(rng: random.Random, table: Table, rnd: RoundState) -> GameEvent:
    """What an honest player does, from the model: a play if they have one, else a draw the
    rules require, else a pass."""
    game = table.game
    assert table.model is not None
    player = game.players[rnd.turn]
    hand = rnd.hands[rnd.turn]
    options = moves(table.model, player, hand)
    if options:
        t, name = rng.choice(options)
        end, train = _place(table.model, name)
        return Played(rnd.number, player, _shown(rng, t), end, train)
    rules = game.rules
    exhausted = len(rnd.boneyard) <= rules.boneyard_reserve
    drawing = rules.draw is DrawRule.UNTIL_PLAYABLE or (
        rules.draw is DrawRule.ONCE and not rnd.drew
    )
    if not exhausted and drawing:
        return TileDrawn(rnd.number, player, rng.choice(sorted(rnd.boneyard)))
    return Passed(rnd.number, player)


def foul_action(rng: random.Random, table: Table, rnd: RoundState) -> GameEvent:
    """Something a careless player (or backend) might report."""
    game = table.game
    players = game.players
    player = rng.choice(players)
    number = rnd.number if rng.random() < 0.9 else rnd.number + rng.choice((-1, 1))
    a, b = rng.randint(0, game.rules.max_pip), rng.randint(0, game.rules.max_pip)
    places: list[tuple[End | None, str | None]] = [
        (None, None),
        (End.LEFT, None),
        (End.RIGHT, None),
        (End.UP, None),
        (End.DOWN, None),
        (None, "mexican"),
        (None, rng.choice(players)),
        (End.LEFT, rng.choice(players)),
    ]
    kind = rng.randrange(4)
    if kind == 0:
        return Played(number, player, (a, b), *rng.choice(places))
    if kind == 1:
        return TileDrawn(number, player, (a, b))
    if kind == 2:
        return Passed(number, player)
    seat = rnd.turn
    hand = sorted(rnd.hands[seat])
    return Played(number, players[seat], rng.choice(hand), *rng.choice(places))


# --- the checks ------------------------------------------------------------------------------


def check_conservation(table: Table, rnd: RoundState) -> None:
    """Hands, boneyard, laid tiles, the engine and sleeping tiles are the set, each once."""
    parts: list[frozenset[Tile] | set[Tile]] = [*rnd.hands, rnd.boneyard, table.laid]
    parts.append(table.sleeping)
    if table.engine is not None:
        parts.append({tile(*table.engine)})
    total = sum(len(p) for p in parts)
    union: set[Tile] = set().union(*parts)
    the_set = full_set(table.game.rules.max_pip)
    assert union == the_set, sorted(the_set ^ union)
    assert total == len(the_set), "a tile is in two places"


def check_block(table: Table, after: GameState, v: BlockDeclared) -> None:
    """Both conditions of RULES.md section 4 hold, checked against the model."""
    rnd = after.round
    assert rnd is not None
    assert table.model is not None
    assert rnd.ended
    rules = after.rules
    assert len(rnd.boneyard) <= rules.boneyard_reserve, "a block with the boneyard not exhausted"
    for player, hand in zip(after.players, rnd.hands, strict=True):
        assert not can_play(table.model, player, hand), f"a block while {player} can play"
    assert dict(v.open_ends) == table.model.shown()
    counts = {
        p: sum(pips(t, rules.double_blank) for t in h)
        for p, h in zip(after.players, rnd.hands, strict=True)
    }
    assert dict(v.pip_counts) == counts
    if rules.block_confirmation is BlockConfirmation.FULL_ROUND:
        n = len(after.players)
        assert v.confirmed_by[0] == v.proposer
        first = after.seats[v.proposer]
        assert list(v.confirmed_by) == [after.players[(first + i) % n] for i in range(n)]
    else:
        assert v.confirmed_by == ()
    table.blocks += 1
    table.declared += 1


def check_scored(table: Table, after: GameState, v: RoundScored) -> None:
    """Awards are never negative; penalty scoring adds each player's own pips."""
    assert all(a >= 0 for a in v.awards.values()), v.awards
    assert set(v.awards) == set(after.players)
    if after.rules.scoring is Scoring.PENALTY:
        assert v.scoring is Scoring.PENALTY
        assert dict(v.awards) == dict(v.pip_counts)
        lowest = min(v.pip_counts.values())
        if v.reason.value == "blocked":
            assert v.winners == tuple(p for p in after.players if v.pip_counts[p] == lowest)
    else:
        assert v.scoring is None
        for p in after.players:
            if p not in v.winners:
                assert v.awards[p] == 0
        solo = after.teams.ids is None
        if v.reason.value == "blocked" and solo and v.winners:
            lowest = min(v.pip_counts.values())
            assert all(v.pip_counts[w] == lowest for w in v.winners), (v.winners, v.pip_counts)
    if v.reason.value == "blocked":
        table.blocks -= 1  # matched with its BlockDeclared
    assert table.blocks == 0


def step(table: Table, event: GameEvent) -> None:
    """Judges one event, keeps the model, and checks every property on the result."""
    before = table.game
    rnd_before = before.round
    try:
        after, verdicts = judge(before, event)
    except InvalidInput:
        return  # invalid input changes nothing (the judge is pure)
    order = [next(i for i, k in enumerate(VERDICT_ORDER) if isinstance(v, k)) for v in verdicts]
    assert order == sorted(order)
    rejected = any(isinstance(v, FoulRecorded) and not v.applied for v in verdicts)
    recorded = [v for v in verdicts if isinstance(v, FoulRecorded)]
    if table.honest:
        assert not recorded, f"honest play fouled: {recorded} after {event}"
    if rejected:
        assert after.round == rnd_before, "a rejected action changed the round"
    elif rnd_before is not None and table.model is not None and after.round is not None:
        _follow(table, event, after.round)
    for v in verdicts:
        if isinstance(v, FoulRecorded):
            assert v.penalty == before.rules.penalty(v.foul) >= 0
            assert v.applied == (not v.foul.is_rejected)
            sign = 1 if before.rules.scoring is Scoring.PENALTY else -1
            team = table.team(v.player)
            table.points[team] = table.points.get(team, 0) + sign * v.penalty
            table.fouls += 1
        elif isinstance(v, PointsScored):
            assert table.model is not None
            assert v.count == table.model.count()
            assert v.points > 0
            team = table.team(v.player)
            table.points[team] = table.points.get(team, 0) + v.points
        elif isinstance(v, BlockDeclared):
            check_block(table, after, v)
        elif isinstance(v, RoundScored):
            check_scored(table, after, v)
            ids = after.teams.ids
            if ids is None:
                awards = [v.awards[p] for p in after.players]
            else:
                assert v.team_awards is not None
                awards = [v.team_awards[t] for t in ids]
            for team, award in enumerate(awards):
                table.points[team] = table.points.get(team, 0) + award
        elif isinstance(v, GameWon):
            assert after.winner == v.winner
    assert list(after.scores) == [table.points.get(t, 0) for t in range(after.teams.size)]
    table.game = after
    if after.round is not None and not isinstance(event, GameStarted):
        check_conservation(table, after.round)
        if table.model is not None and not after.round.ended:
            assert after.round.layout.open_ends() == _announced(table.model)


def _announced(model: Model) -> dict[str, int]:
    if model.layout is not Layout.TRAINS and not model.ends:
        return {"left": 0, "right": 0}
    return model.shown()


def _follow(table: Table, event: GameEvent, rnd: RoundState) -> None:
    """Applies an applied action to the model (and the laid tiles)."""
    model = table.model
    assert model is not None
    if isinstance(event, Played):
        place = event.train if model.layout is Layout.TRAINS else event.end
        name = None if place is None else str(place)
        if model.layout is not Layout.TRAINS and not model.ends:
            name = None  # the first tile: an end named is ignored
        # Every play the referee lets stand is one the model allows.
        allowed = moves(model, event.player, frozenset({tile(*event.tile)}))
        assert (tile(*event.tile), name) in allowed, f"an illegal play stood: {event}"
        live = set().union(*rnd.hands, rnd.boneyard)
        model.play(event.player, event.tile, name, live)
        table.laid.add(tile(*event.tile))
    elif isinstance(event, Passed):
        model.passed(event.player)


def play_game(
    rng: random.Random, rules: Rules, players: int, partnered: bool, foul_rate: float
) -> Table:
    """Plays a whole game of up to three rounds, checking after every event."""
    names = tuple(f"p{i}" for i in range(players))
    teams = None
    if partnered:
        count = players // 2
        teams = {f"t{t}": tuple(names[t::count]) for t in range(count)}
    game, _ = judge(None, GameStarted(names, rules, teams))
    table = Table(game, honest=foul_rate == 0.0)
    for number in range(1, 4):
        dealing = deal(rng, table, number)
        dealt = {tile(*t) for h in dealing.hands.values() for t in h} | {
            tile(*t) for t in dealing.boneyard
        }
        table.laid = set()
        table.engine = dealing.engine
        table.sleeping = (
            full_set(rules.max_pip) - dealt - ({dealing.engine} if dealing.engine else set())
        )
        table.model = new_model(rules, names, dealing.engine)
        step(table, dealing)
        for _ in range(1500):
            rnd = table.game.round
            assert rnd is not None
            if rnd.ended:
                break
            if rng.random() < foul_rate:
                step(table, foul_action(rng, table, rnd))
            else:
                step(table, honest_action(rng, table, rnd))
        else:
            raise AssertionError("a round of play did not end in 1500 actions")
        if table.game.is_over:
            break
    return table


PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(game=games(), rng=st.randoms(use_true_random=False))
def test_honest_play_of_every_family_records_no_foul_and_keeps_the_invariants(
    game: tuple[Rules, int, bool], rng: random.Random
) -> None:
    rules, players, partnered = game
    play_game(rng, rules, players, partnered, foul_rate=0.0)


@PROPERTY
@given(
    game=games(),
    foul_rate=st.sampled_from((0.05, 0.2)),
    rng=st.randoms(use_true_random=False),
)
def test_every_event_of_every_family_keeps_the_invariants_with_fouls(
    game: tuple[Rules, int, bool], foul_rate: float, rng: random.Random
) -> None:
    rules, players, partnered = game
    play_game(rng, rules, players, partnered, foul_rate)


def test_blocks_do_happen_in_every_family() -> None:
    """Guards the generator: the block properties above are not vacuous in any layout."""
    for layout in Layout:
        declared = 0
        for seed in range(40):
            rules = Rules.of(layout=layout, draw=DrawRule.NONE, max_pip=6 if seed % 2 else 9)
            table = play_game(random.Random(seed), rules, 2 + seed % 4, False, foul_rate=0.0)
            declared += table.declared
        assert declared >= 10, layout


def test_play_points_do_score_in_the_generated_games() -> None:
    """Guards the count check: plays do score points somewhere."""
    scored = 0
    for seed in range(30):
        rules = Rules.of(layout=Layout.SPINNER, draw=DrawRule.NONE, play_scoring=PlayScoring.FIVES)
        table = play_game(random.Random(seed), rules, 3, False, foul_rate=0.0)
        scored += sum(table.points.values())
    assert scored > 0
