"""The evidence checks itself: every explanation of simulated logs of every family, re-judged.

The test keeps its own table, written here from the rulebook apart from the referee: each hand
and the boneyard (from the deal, the draws and the plays), the layout (the ends of a line or
a spinner and when its arms open, the trains, which are open, a pending double) and every
side's score (from what the verdicts announced). Its move generator is its own, never the
referee's ``legal_plays``. Against it:

- every ``false_pass`` and ``draw_while_able`` names only tiles of the hand, each on a place
  it matches, and leaves none out; a ``pass_before_drawing`` names none, with a boneyard to
  draw from;
- every rejected play names the places the player had; a ``tile_does_not_match`` names the
  value its place shows, and the tile does not show it;
- every ``BlockDeclared`` shows each hand as it is, and no tile of any hand matches any place
  open to its holder;
- every score adds up: the count end by end, each hand's pips, each side's T, U, each base
  award by its formula, the division, the rounding, the scores before and after, the
  penalties; and the game's winners are the best scores.

Each check is also run on evidence spoiled on purpose (a tile left out, a wrong end, a wrong
sum) and must fail there.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field

import pytest

from referee.contracts.parse import parse_event
from referee.contracts.rejection import FileSource
from referee.contracts.wire import InputEvent
from referee.domain.events import GameStarted, Passed, RoundStarted, TileDrawn, TilePlayed
from referee.domain.evidence import (
    BlockFacts,
    CountFacts,
    DrawFacts,
    Evidence,
    GameFacts,
    HandFacts,
    PlaceFacts,
    PlaceValue,
    Playable,
    PlayableFacts,
    RoundFacts,
    ScoreLine,
    TurnFacts,
)
from referee.domain.rules import DrawRule, Layout, Rules, Scoring, SpinnerArms
from referee.domain.tiles import Tile, tile
from referee.domain.verdicts import FoulRecorded
from referee.processing.explanations import Explained, Explainer
from referee.simulate import SimulationOptions, simulate

# --- the test's own table ----------------------------------------------------------------------


@dataclass
class End:
    value: int
    double: bool = False
    played: bool = False


@dataclass
class Table:
    """One game as the test follows it."""

    players: tuple[str, ...]
    rules: Rules
    side_of: dict[str, str]
    scores: dict[str, int]
    hands: dict[str, set[Tile]] = field(default_factory=dict)
    boneyard: set[Tile] = field(default_factory=set)
    ends: dict[str, End] = field(default_factory=dict)
    single: bool = True
    spinner: int | None = None
    bare: set[str] = field(default_factory=set)
    open: set[str] = field(default_factory=set)
    pending: str | None = None
    pending_by: str | None = None

    @property
    def trains(self) -> bool:
        return self.rules.layout is Layout.TRAINS

    def deal(self, event: RoundStarted) -> None:
        self.hands = {p: {tile(*x) for x in h} for p, h in event.hands.items()}
        self.boneyard = {tile(*x) for x in event.boneyard}
        self.single, self.spinner, self.bare = True, None, set()
        self.pending = self.pending_by = None
        self.ends = {}
        if self.trains:
            assert event.engine is not None
            names = [*self.players, *(["mexican"] if self.rules.mexican_train else [])]
            self.ends = {n: End(event.engine[0]) for n in names}
            self.open = {"mexican"} if self.rules.mexican_train else set()

    def places(self, player: str) -> list[tuple[str, int]] | None:
        """The places ``player`` may play on, with their values (``None``: any tile)."""
        if self.trains:
            if self.pending is not None:
                return [(self.pending, self.ends[self.pending].value)]
            names = [n for n in self.ends if n in (player, "mexican") or n in self.open]
            return [(n, self.ends[n].value) for n in names]
        if not self.ends:
            return None
        names = ["left", "right"]
        at_once = self.rules.spinner_arms is SpinnerArms.AT_ONCE
        if self.spinner is not None and (at_once or not self.bare):
            names += ["up", "down"]
        return [(n, self.ends[n].value) for n in names]

    def moves(self, player: str) -> set[tuple[Tile, str | None]]:
        """Every tile of the hand on every place it matches: the test's move generator."""
        places = self.places(player)
        hand = self.hands[player]
        if places is None:
            return {(t, None) for t in hand}
        return {(t, name) for t in hand for name, value in places if value in t}

    def play(self, player: str, written: Tile, place: str | None) -> None:
        t = tile(*written)
        self.hands[player].discard(t)
        a, b = written
        double = a == b
        if self.trains:
            assert place is not None
            end = self.ends[place]
            self.ends[place] = End(b if a == end.value else a, double, played=True)
            if place == player:
                self.open.discard(player)
            self.pending = self.pending_by = None
            live = set(self.boneyard).union(*self.hands.values())
            if double and self.hands[player] and any(a in x for x in live):
                self.pending, self.pending_by = place, player
            return
        spins = self.rules.layout is Layout.SPINNER
        if not self.ends:
            self.ends = {"left": End(a, double), "right": End(b, double)}
            if double and spins:
                self.spinner, self.bare = a, {"left", "right"}
                self.ends["up"], self.ends["down"] = End(a), End(a)
            return
        assert place is not None
        end = self.ends[place]
        self.ends[place] = End(b if a == end.value else a, double, played=True)
        if place in ("left", "right"):
            self.single = False
            self.bare.discard(place)
            if double and spins and self.spinner is None:
                self.spinner = a
                self.bare.add(place)
                self.ends["up"], self.ends["down"] = End(a), End(a)

    def passed(self, player: str) -> None:
        if self.trains:
            self.open.add(player)
            if self.rules.double_rule.value == "follow_up" and self.pending_by == player:
                self.pending = self.pending_by = None

    def count(self) -> int:
        left, right = self.ends["left"], self.ends["right"]
        total = (
            left.value + right.value
            if self.single
            else sum(e.value * (2 if e.double else 1) for e in (left, right))
        )
        for arm in ("up", "down"):
            e = self.ends.get(arm)
            if e is not None and e.played:
                total += e.value * (2 if e.double else 1)
        return total

    def pips(self, hand: set[Tile]) -> int:
        return sum(self.rules.double_blank if t == (0, 0) else t[0] + t[1] for t in hand)


# --- the checks --------------------------------------------------------------------------------


def playable(found: tuple[Playable, ...] | None) -> set[tuple[Tile, str | None]]:
    assert found is not None
    for p in found:
        assert p.place is None or p.value is not None
        assert p.value is None or p.value in p.tile, f"{p.tile} does not show {p.value}"
    return {(p.tile, p.place) for p in found}


def places_of(table: Table, player: str) -> tuple[PlaceValue, ...] | None:
    found = table.places(player)
    return None if found is None else tuple(PlaceValue(n, v) for n, v in found)


def check_foul(table: Table, found: Evidence, turn: str) -> None:
    """Re-judges a foul's evidence against the table as it was before the action."""
    verdict = found.verdict
    assert isinstance(verdict, FoulRecorded)
    facts = found.facts
    player = verdict.player
    if isinstance(facts, PlayableFacts):
        hand = table.hands[player]
        assert set(facts.hand or ()) == hand
        assert facts.hand_size == len(hand)
        assert facts.places == places_of(table, player)
        named = playable(facts.playable)
        assert all(t in hand for t, _ in named), "a tile named is not in the hand"
        assert named == table.moves(player), "the playable tiles are not every move"
        assert facts.boneyard == len(table.boneyard)
        if verdict.foul.value == "pass_before_drawing":
            assert not named
            assert facts.boneyard > facts.reserve
        else:
            assert named, "a false pass or a draw while able with nothing to play"
    elif isinstance(facts, PlaceFacts):
        assert facts.places == places_of(table, player)
        if verdict.foul.value == "tile_does_not_match":
            assert facts.tile is not None
            place = facts.end or facts.train
            assert place is not None
            assert facts.value == table.ends[place].value
            assert facts.value not in facts.tile
        if facts.pending is not None:
            assert facts.pending.train == table.pending
            assert facts.pending.by == table.pending_by
    elif isinstance(facts, HandFacts):
        assert facts.tile is not None
        assert facts.tile not in table.hands[player]
        assert set(facts.hand or ()) == table.hands[player]
    elif isinstance(facts, DrawFacts):
        assert facts.boneyard == len(table.boneyard)
        if verdict.foul.value == "tile_not_in_boneyard":
            assert facts.tile not in table.boneyard
    elif isinstance(facts, TurnFacts):
        assert facts.turn == turn
        assert facts.turn != player
    penalty = getattr(facts, "penalty", None)
    assert (penalty is None) == (verdict.penalty == 0)
    if penalty is not None:
        side = table.side_of[player]
        sign = 1 if table.rules.scoring is Scoring.PENALTY else -1
        assert penalty.before == table.scores[side]
        assert penalty.after == penalty.before + sign * verdict.penalty
        table.scores[side] = penalty.after


def check_line(table: Table, line: ScoreLine) -> None:
    assert line.before == table.scores[line.side]
    assert line.after == line.before + line.change
    table.scores[line.side] = line.after


def check_count(table: Table, facts: CountFacts) -> None:
    assert sum(e.value * e.times for e in facts.ends) == facts.count == table.count()
    for e in facts.ends:
        assert e.value == table.ends[e.end].value
    fives = facts.count // 5 if facts.count % 5 == 0 else 0
    threes = facts.count // 3 if facts.count % 3 == 0 else 0
    expected = {
        "fives": facts.count if fives else 0,
        "threes": facts.count if threes else 0,
        "fives_and_threes": fives + threes,
    }[facts.play_scoring]
    assert facts.points == expected > 0
    assert facts.score.change == facts.points
    check_line(table, facts.score)


def check_block(table: Table, facts: BlockFacts) -> None:
    assert len(table.boneyard) == facts.boneyard <= facts.reserve
    assert [h.player for h in facts.hands] == list(table.players)
    for held in facts.hands:
        assert set(held.hand) == table.hands[held.player], "a hand is not as it is"
        assert held.places == places_of(table, held.player)
        assert not table.moves(held.player), f"{held.player} can play: no block"
        assert held.matches == ()
    if facts.confirmation == "full_round":
        first = table.players.index(facts.proposer)
        n = len(table.players)
        assert facts.passes == tuple(table.players[(first + i) % n] for i in range(n))
    assert {p.place: p.value for p in facts.open_ends} == {
        n: e.value for n, e in table.ends.items()
    }


def check_round(table: Table, facts: RoundFacts) -> None:
    pips = {}
    for held in facts.hands:
        assert set(held.hand) == table.hands[held.player]
        assert held.pips == table.pips(table.hands[held.player])
        pips[held.player] = held.pips
    totals = {}
    for s in facts.sides:
        assert s.pips == sum(pips[m] for m in s.members)
        totals[s.side] = s.pips
    changes = {line.side: line.change for line in facts.scores}
    if facts.scoring == "penalty":
        assert changes == {s.side: s.pips for s in facts.sides}
        if facts.out is None:
            low = min(totals.values())
            assert facts.winners == tuple(s for s, t in totals.items() if t == low)
    else:
        won = set(facts.winners)
        assert facts.others == sum(t for s, t in totals.items() if s not in won)
        if facts.out is not None:
            assert facts.winners == (table.side_of[facts.out],)
        elif facts.winner_rule == "lowest_team" and facts.winners:
            assert all(totals[w] == min(totals.values()) for w in facts.winners)
        elif facts.winner_rule == "lowest_player" and facts.winners:
            low = min(pips.values())
            assert all(any(pips[m] == low for m in s.members) for s in facts.sides if s.side in won)
        assert [s.side for s in facts.shares] == list(facts.winners)
        winners_total = sum(totals[w] for w in facts.winners)
        for share in facts.shares:
            assert share.own == totals[share.side]
            base = {
                "others": facts.others,
                "others_minus_own": facts.others - share.own,
                "all": facts.others + winners_total,
            }[facts.points]
            assert share.base == max(base, 0)
            assert share.winners == len(facts.winners)
            assert share.divided == share.base // share.winners
            rounded = share.divided
            if facts.rounding == "nearest_5":
                rounded = 5 * round(share.divided / 5 + 1e-9)  # halves up
            assert share.award == rounded
            assert changes[share.side] == share.award
        assert all(changes[s] == 0 for s in totals if s not in won)
    for line in facts.scores:
        check_line(table, line)


def check_game(table: Table, facts: GameFacts) -> None:
    finals = {line.side: line.after for line in facts.scores}
    assert finals == table.scores
    if facts.condition == "target_score":
        assert facts.target_score is not None
        assert set(facts.reached) == {s for s, v in finals.items() if v >= facts.target_score}
    pick = max if facts.best == "highest" else min
    reached = facts.condition == "target_score" and facts.best == "highest"
    best = pick(finals[s] for s in (facts.reached if reached else finals))
    assert all(finals[w] == best for w in facts.winners)


# --- the run ----------------------------------------------------------------------------------

FAMILIES = {
    "random": SimulationOptions(rules="random"),
    "line": SimulationOptions(layout="line"),
    "spinner": SimulationOptions(layout="spinner", play_scoring="fives"),
    "trains": SimulationOptions(layout="trains"),
    "teams": SimulationOptions(teams=True),
    "fives_and_threes": SimulationOptions(layout="line", play_scoring="fives_and_threes"),
    "penalty": SimulationOptions(scoring="penalty"),
}


def explain_and_check(options: SimulationOptions) -> Counter[str]:
    """Explains a simulated log and re-judges every piece of evidence; returns the kinds."""
    explainer = Explainer()
    tables: dict[str, Table] = {}
    seen: Counter[str] = Counter()
    for number, (_, line) in enumerate(simulate(options), 1):
        wire = parse_event(line)
        assert isinstance(wire, InputEvent)
        event = wire.to_domain()
        table = tables.get(wire.game_id)
        turn = ""
        if table is not None and wire.game_id in explainer.referee.games:
            state = explainer.referee.games[wire.game_id].state
            if state.round is not None:
                turn = state.players[state.round.turn]
        chapters = explainer.feed(line, FileSource("sim", number))
        evidence = [c.evidence for c in chapters if isinstance(c, Explained)]
        if isinstance(event, GameStarted):
            game = explainer.referee.games[wire.game_id].state
            sides = {p: p for p in game.players}
            if game.teams.ids is not None:
                ids, of_seat = game.teams.ids, game.teams.of_seat
                sides = {p: ids[of_seat[s]] for s, p in enumerate(game.players)}
            tables[wire.game_id] = Table(
                game.players, game.rules, sides, dict.fromkeys(sides.values(), 0)
            )
            continue
        assert table is not None
        if isinstance(event, RoundStarted):
            table.deal(event)
            continue
        fouls = [e for e in evidence if isinstance(e.verdict, FoulRecorded)]
        for found in fouls:
            check_foul(table, found, turn)
            seen[f"foul:{found.verdict.foul.value}"] += 1  # type: ignore[union-attr]
        if any(not f.verdict.applied for f in fouls):  # type: ignore[union-attr]
            continue  # rejected: nothing changed
        if isinstance(event, TilePlayed):
            place = event.end.value if event.end is not None else event.train
            table.play(event.player, event.tile, place if table.ends or table.trains else None)
        elif isinstance(event, TileDrawn):
            table.boneyard.discard(tile(*event.tile))
            table.hands[event.player].add(tile(*event.tile))
        elif isinstance(event, Passed):
            table.passed(event.player)
        for found in evidence:
            facts = found.facts
            if isinstance(facts, CountFacts):
                check_count(table, facts)
            elif isinstance(facts, BlockFacts):
                check_block(table, facts)
            elif isinstance(facts, RoundFacts):
                check_round(table, facts)
            elif isinstance(facts, GameFacts):
                check_game(table, facts)
            else:
                continue
            seen[type(found.verdict).__name__] += 1
    return seen


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_evidence_of_every_verdict_of_a_simulated_log_re_judges(family: str) -> None:
    options = dataclasses.replace(FAMILIES[family], games=40, seed=36, foul_rate=0.15)

    seen = explain_and_check(options)

    assert seen["foul:false_pass"], seen
    assert seen["BlockDeclared"], seen
    assert seen["RoundScored"], seen


def test_every_foul_kind_and_verdict_kind_is_re_judged_somewhere() -> None:
    """Guards the run above: no kind goes unchecked for want of an example."""
    seen: Counter[str] = Counter()
    for family in ("random", "trains", "spinner"):
        seen += explain_and_check(dataclasses.replace(FAMILIES[family], games=60, seed=7))
    kinds = {k.removeprefix("foul:") for k in seen}
    assert kinds >= {
        "out_of_turn", "tile_not_in_hand", "end_not_available", "double_unsatisfied",
        "train_closed", "tile_does_not_match", "end_missing", "draw_not_allowed",
        "boneyard_empty", "tile_not_in_boneyard", "draw_limit", "draw_while_able",
        "false_pass", "pass_before_drawing",
        "PointsScored", "BlockDeclared", "RoundScored", "GameWon",
    }, sorted(kinds)  # fmt: skip


# --- the checks catch spoiled evidence ---------------------------------------------------------

SPOIL = "ann: 3-4 5-5 1-6 | bob: 1-2 6-6 | cid: 0-0 2-4 | boneyard: 1-1 0-1 | left 3 right 6"


def spoiled_table() -> Table:
    rules = Rules.of(draw=DrawRule.UNTIL_PLAYABLE)
    table = Table(("ann", "bob", "cid"), rules, {"ann": "ann", "bob": "bob", "cid": "cid"}, {})
    table.scores = dict.fromkeys(table.players, 0)
    table.hands = {
        "ann": {(3, 4), (5, 5), (1, 6)},
        "bob": {(1, 2), (6, 6)},
        "cid": {(0, 0), (2, 4)},
    }
    table.boneyard = {(1, 1), (0, 1)}
    table.ends = {"left": End(3), "right": End(6)}
    table.single = False
    return table


def false_pass() -> Evidence:
    from referee.domain.explain import explain
    from tests.notation import action, table

    game = table(SPOIL)
    _, [found] = explain(game, action(game, "ann passes"))
    return found


def test_the_check_accepts_the_true_evidence_of_a_false_pass() -> None:
    check_foul(spoiled_table(), false_pass(), "ann")


@pytest.mark.parametrize("spoil", ["left out", "wrong end", "not in hand"])
def test_the_check_fails_on_spoiled_evidence_of_a_false_pass(spoil: str) -> None:
    found = false_pass()
    facts = found.facts
    assert isinstance(facts, PlayableFacts)
    assert facts.playable is not None
    first, *rest = facts.playable
    spoiled = {
        "left out": tuple(rest),
        "wrong end": (dataclasses.replace(first, place="left", value=3), *rest),
        "not in hand": (*facts.playable, Playable((6, 6), "right", 6)),
    }[spoil]
    bad = dataclasses.replace(found, facts=dataclasses.replace(facts, playable=spoiled))

    with pytest.raises(AssertionError):
        check_foul(spoiled_table(), bad, "ann")


def test_the_check_fails_on_a_wrong_sum() -> None:
    table = spoiled_table()
    right = ScoreLine("ann", ("ann",), 0, 10, 10)
    wrong = ScoreLine("ann", ("ann",), 0, 10, 11)

    check_line(table, right)
    with pytest.raises(AssertionError):
        check_line(spoiled_table(), wrong)
