"""The evidence checks itself: every explanation of simulated logs of every family, re-judged.

The test keeps its own table, written here from the rulebook apart from the referee: each hand
and the boneyard (from the deal, the draws and the plays), whose turn it is and whether they
drew, the layout (the ends of a line or a spinner and when its arms open, the trains, which are
open, a pending double), the round and every side's score (from what the verdicts announced).
Its move generator is its own, never the referee's ``legal_plays`` or rule helpers. Against it:

- every ``false_pass`` and ``draw_while_able`` names only tiles of the hand, each on a place
  it matches with the value that place shows, and leaves none out; a ``pass_before_drawing``
  names none, with a boneyard to draw from and a draw rule that still asks for a draw;
- every rejected action shows what its rule needed: whose turn it was and what the offender
  did; the hand a tile was not in and where it was; the places the player had, the place
  named really missing (``end_not_available``) or not named at all (``end_missing``); the
  value of the place a tile does not show; the pending double and its value; the open trains;
  the draw rule (``none``), the boneyard against its reserve, whether the player had drawn;
- every ``BlockDeclared`` shows each hand as it is, no tile of any hand matches any place
  open to its holder, the passes are the full round from the proposer (none: ``immediate``);
- every score adds up: the count end by end, each hand's pips, each side's T, the winners by
  their rule and the tie policy, U, each base award by its formula, the division, the
  rounding, the scores before and after, the penalties; the game ends by the condition named,
  and every side with the best score is named among its winners;
- the evidence agrees with the verdict it explains wherever the verdict carries the figure:
  proposer, passes, open ends, pip counts, awards, cumulative scores, winners, tie.

Each check is also run on evidence spoiled on purpose (a tile left out, a wrong end, a wrong
sum, a winner left out, ...), for every verdict kind and every foul kind, and must fail there.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import TypeVar

import pytest

from referee.contracts.parse import parse_event
from referee.contracts.rejection import FileSource
from referee.contracts.wire import InputEvent
from referee.domain.events import (
    GameEvent,
    GameStarted,
    Passed,
    RoundStarted,
    TileDrawn,
    TilePlayed,
)
from referee.domain.evidence import (
    BlockFacts,
    CountFacts,
    DrawFacts,
    Evidence,
    Facts,
    GameFacts,
    HandFacts,
    HeldHand,
    PendingDouble,
    PlaceFacts,
    PlaceValue,
    Playable,
    PlayableFacts,
    RoundFacts,
    ScoreLine,
    TurnFacts,
)
from referee.domain.rules import Layout, Rules, Scoring, SpinnerArms
from referee.domain.tiles import Tile, tile
from referee.domain.verdicts import BlockDeclared, FoulRecorded, GameWon, PointsScored, RoundScored
from referee.usecases.explanations import Explained, Explainer
from tests.families import FAMILIES, family_log

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
    round: int = 0
    turn: str = ""
    drew: bool = False

    @property
    def trains(self) -> bool:
        return self.rules.layout is Layout.TRAINS

    @property
    def sides(self) -> tuple[str, ...]:
        """Every side in the order of play of its first member."""
        return tuple(dict.fromkeys(self.side_of[p] for p in self.players))

    def members(self, side: str) -> tuple[str, ...]:
        return tuple(p for p in self.players if self.side_of[p] == side)

    def deal(self, event: RoundStarted) -> None:
        self.hands = {p: {tile(*x) for x in h} for p, h in event.hands.items()}
        self.boneyard = {tile(*x) for x in event.boneyard}
        self.single, self.spinner, self.bare = True, None, set()
        self.pending = self.pending_by = None
        self.round, self.turn, self.drew = event.round, event.leader, False
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

    def next_turn(self, player: str) -> None:
        self.turn = self.players[(self.players.index(player) + 1) % len(self.players)]
        self.drew = False

    def play(self, player: str, written: Tile, place: str | None) -> None:
        self._lay(player, written, place)
        if self.pending_by == player:
            self.drew = False  # a pending double: the player plays again, as if anew
        else:
            self.next_turn(player)

    def _lay(self, player: str, written: Tile, place: str | None) -> None:
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

    def draw(self, player: str, written: Tile) -> None:
        self.boneyard.discard(tile(*written))
        self.hands[player].add(tile(*written))
        self.drew = True

    def passed(self, player: str) -> None:
        if self.trains:
            self.open.add(player)
            if self.rules.double_rule.value == "follow_up" and self.pending_by == player:
                self.pending = self.pending_by = None
        self.next_turn(player)

    def count(self) -> int:
        return sum(e.value * times for _, e, times in self.counted())

    def counted(self) -> list[tuple[str, End, int]]:
        """Each end, and how often its value counts (RULES.md section 10)."""
        left, right = self.ends["left"], self.ends["right"]
        if self.single:
            found = [("left", left, 1), ("right", right, 1)]
        else:
            found = [(n, e, 2 if e.double else 1) for n, e in (("left", left), ("right", right))]
        for arm in ("up", "down"):
            e = self.ends.get(arm)
            if e is not None:
                found.append((arm, e, (2 if e.double else 1) if e.played else 0))
        return found

    def pips(self, hand: Iterable[Tile]) -> int:
        return sum(self.tile_pips(t) for t in hand)

    def tile_pips(self, t: Tile) -> int:
        return self.rules.double_blank if t == (0, 0) else t[0] + t[1]

    def whereabouts(self, t: Tile) -> str:
        """Where a tile is, in the words of the evidence."""
        if not 0 <= t[0] <= t[1] <= self.rules.max_pip:
            return f"not in the double-{self.rules.max_pip} set"
        for player in self.players:
            if t in self.hands[player]:
                return f"in {player}'s hand"
        if t in self.boneyard:
            return "in the boneyard"
        return "on the layout or out of play"


# --- the checks --------------------------------------------------------------------------------

APPLIED = {"draw_while_able", "false_pass", "pass_before_drawing"}
"""The fouls whose action stands (RULES.md section 3); every other kind is rejected."""

FACTS_OF: dict[str, type] = {
    "out_of_turn": TurnFacts,
    "tile_not_in_hand": HandFacts,
    "end_not_available": PlaceFacts,
    "double_unsatisfied": PlaceFacts,
    "train_closed": PlaceFacts,
    "tile_does_not_match": PlaceFacts,
    "end_missing": PlaceFacts,
    "draw_not_allowed": DrawFacts,
    "boneyard_empty": DrawFacts,
    "tile_not_in_boneyard": DrawFacts,
    "draw_limit": DrawFacts,
    "draw_while_able": PlayableFacts,
    "false_pass": PlayableFacts,
    "pass_before_drawing": PlayableFacts,
}


def playable(
    table: Table, player: str, found: tuple[Playable, ...] | None
) -> set[tuple[Tile, str | None]]:
    """The tiles named as playable, each checked against the place it names."""
    assert found is not None
    values = dict(table.places(player) or ())
    for p in found:
        if p.place is None:
            assert p.value is None
            assert table.places(player) is None, "a tile named without a place on a layout"
        else:
            assert p.value == values[p.place], f"{p.place} does not show {p.value}"
            assert p.value in p.tile, f"{p.tile} does not show {p.value}"
    named = {(p.tile, p.place) for p in found}
    assert len(named) == len(found), "a tile named twice on one place"
    return named


def places_of(table: Table, player: str) -> tuple[PlaceValue, ...] | None:
    found = table.places(player)
    return None if found is None else tuple(PlaceValue(n, v) for n, v in found)


def place_named(event: TilePlayed) -> tuple[str | None, str | None]:
    return (None if event.end is None else event.end.value), event.train


def by_player(table: Table, per_side: dict[str, int]) -> dict[str, int]:
    return {p: per_side[table.side_of[p]] for p in table.players}


def check_foul(table: Table, found: Evidence, event: GameEvent) -> None:
    """Re-judges a foul's evidence against the table as it was before the action."""
    verdict = found.verdict
    assert isinstance(verdict, FoulRecorded)
    assert isinstance(event, TilePlayed | TileDrawn | Passed)
    player = verdict.player
    kind = verdict.foul.value
    assert found.actor == player == event.player
    assert verdict.applied == (kind in APPLIED)
    facts = found.facts
    assert isinstance(facts, FACTS_OF[kind]), f"{kind} explained by {type(facts).__name__}"
    if kind != "out_of_turn":
        assert table.turn == player, f"{kind} by {player}, whose turn it was not"
    if isinstance(facts, TurnFacts):
        assert facts.turn == table.turn != player
        assert facts.action == type(event).__name__
    elif isinstance(facts, HandFacts):
        check_hand(table, facts, player, event)
    elif isinstance(facts, PlaceFacts):
        check_place(table, facts, player, event, kind)
    elif isinstance(facts, DrawFacts):
        check_draw(table, facts, event, kind)
    else:
        assert isinstance(facts, PlayableFacts)
        check_playable(table, facts, player, kind)
    penalty = facts.penalty
    assert (penalty is None) == (verdict.penalty == 0)
    if penalty is not None:
        side = table.side_of[player]
        sign = 1 if table.rules.scoring is Scoring.PENALTY else -1
        assert (penalty.points, penalty.side) == (verdict.penalty, side)
        assert penalty.before == table.scores[side]
        assert penalty.after == penalty.before + sign * verdict.penalty
        table.scores[side] = penalty.after


def check_hand(table: Table, facts: HandFacts, player: str, event: GameEvent) -> None:
    assert isinstance(event, TilePlayed)
    hand = table.hands[player]
    assert facts.tile == tile(*event.tile)
    assert facts.tile not in hand
    assert facts.hand is not None
    assert set(facts.hand) == hand
    assert len(facts.hand) == len(hand)
    assert facts.where == table.whereabouts(facts.tile)


def check_place(table: Table, facts: PlaceFacts, player: str, event: GameEvent, kind: str) -> None:
    assert isinstance(event, TilePlayed)
    assert facts.tile == tile(*event.tile)
    assert facts.tile in table.hands[player], "tile_not_in_hand comes first"
    assert (facts.end, facts.train) == place_named(event)
    assert facts.places == places_of(table, player)
    values = dict(table.places(player) or ())
    both = facts.end is not None and facts.train is not None
    if kind == "end_not_available":
        if table.trains and not both:
            assert facts.end is not None or facts.train not in table.ends, "the train exists"
        elif not both:
            assert facts.train is not None or (
                facts.places is not None and facts.end not in values
            ), f"{facts.end} is open to {player}"
    elif kind == "end_missing":
        assert (facts.end, facts.train) == (None, None), "a place was named"
        assert table.trains or table.ends, "no place is needed on an empty layout"
    elif kind == "double_unsatisfied":
        assert table.pending is not None
        assert facts.pending == PendingDouble(
            table.pending, table.ends[table.pending].value, table.pending_by or ""
        )
        assert facts.train in table.ends
        assert facts.train != table.pending
    elif kind == "train_closed":
        assert table.pending is None, "double_unsatisfied comes first"
        assert facts.open_trains == tuple(n for n in table.ends if n in table.open)
        assert facts.train in table.players
        assert facts.train != player
        assert facts.train not in table.open
    else:
        assert kind == "tile_does_not_match"
        place = facts.train if facts.end is None else facts.end
        assert place in values, f"{place} is not open to {player}"
        assert facts.value == values[place]
        assert facts.value not in facts.tile
    assert (facts.value is None) == (kind != "tile_does_not_match")
    assert (facts.pending is None) == (kind != "double_unsatisfied")
    assert (facts.open_trains is None) == (kind != "train_closed")


def check_draw(table: Table, facts: DrawFacts, event: GameEvent, kind: str) -> None:
    assert isinstance(event, TileDrawn)
    rules = table.rules
    assert facts.tile == tile(*event.tile)
    assert (facts.draw, facts.reserve) == (rules.draw.value, rules.boneyard_reserve)
    assert facts.boneyard == len(table.boneyard)
    assert facts.drew == table.drew
    if kind == "draw_not_allowed":
        assert facts.draw == "none"
    else:
        assert facts.draw != "none", "draw_not_allowed comes first"
    if kind == "boneyard_empty":
        assert facts.boneyard <= facts.reserve
    elif kind == "tile_not_in_boneyard":
        assert facts.boneyard > facts.reserve
        assert facts.tile not in table.boneyard
    elif kind == "draw_limit":
        assert facts.boneyard > facts.reserve
        assert facts.tile in table.boneyard
        assert facts.draw == "once"
        assert facts.drew
    if kind == "tile_not_in_boneyard":
        assert facts.where == table.whereabouts(facts.tile)
    else:
        assert facts.where is None


def check_playable(table: Table, facts: PlayableFacts, player: str, kind: str) -> None:
    rules = table.rules
    hand = table.hands[player]
    assert facts.hand is not None
    assert set(facts.hand) == hand
    assert facts.hand_size == len(facts.hand) == len(hand)
    assert facts.places == places_of(table, player)
    named = playable(table, player, facts.playable)
    assert all(t in hand for t, _ in named), "a tile named is not in the hand"
    assert named == table.moves(player), "the playable tiles are not every move"
    assert facts.boneyard == len(table.boneyard)
    assert (facts.reserve, facts.draw) == (rules.boneyard_reserve, rules.draw.value)
    assert facts.draw_while_able == rules.draw_while_able.value
    assert facts.drew == table.drew
    if kind == "pass_before_drawing":
        assert not named
        assert facts.boneyard > facts.reserve
        assert facts.draw == "until_playable" or (facts.draw == "once" and not facts.drew)
    else:
        assert named, f"a {kind} with nothing to play"
    if kind == "draw_while_able":
        assert facts.draw_while_able == "foul"


def check_line(table: Table, line: ScoreLine) -> None:
    assert line.members == table.members(line.side)
    assert line.before == table.scores[line.side]
    assert line.after == line.before + line.change
    table.scores[line.side] = line.after


def check_count(table: Table, found: Evidence, event: GameEvent, first: bool) -> None:
    """Re-judges a play's count against the table after the play (``first``: it opened)."""
    verdict, facts = found.verdict, found.facts
    assert isinstance(verdict, PointsScored)
    assert isinstance(facts, CountFacts)
    assert isinstance(event, TilePlayed)
    assert found.actor == verdict.player == event.player
    assert facts.tile == tile(*event.tile)
    assert facts.place == (None if first else place_named(event)[0])
    assert facts.single == table.single
    expected = tuple((n, e.value, times) for n, e, times in table.counted())
    assert tuple((e.end, e.value, e.times) for e in facts.ends) == expected
    count = table.count()
    assert sum(e.value * e.times for e in facts.ends) == facts.count == count == verdict.count
    scoring = table.rules.play_scoring.value
    assert facts.play_scoring == scoring
    fives = count // 5 if count % 5 == 0 and scoring != "threes" else 0
    threes = count // 3 if count % 3 == 0 and scoring != "fives" else 0
    assert (facts.fives, facts.threes) == (fives, threes)
    points = {"fives": 5 * fives, "threes": 3 * threes, "fives_and_threes": fives + threes}
    assert facts.points == points[scoring] == verdict.points > 0
    assert facts.score.side == table.side_of[verdict.player]
    assert facts.score.change == facts.points
    check_line(table, facts.score)
    assert verdict.cumulative == by_player(table, table.scores)
    if len(table.sides) < len(table.players):
        assert verdict.team == facts.score.side
        assert verdict.team_cumulative == table.scores


def check_block(table: Table, found: Evidence, event: GameEvent) -> None:
    verdict, facts = found.verdict, found.facts
    assert isinstance(verdict, BlockDeclared)
    assert isinstance(facts, BlockFacts)
    rules = table.rules
    assert facts.confirmation == rules.block_confirmation.value
    assert facts.reserve == rules.boneyard_reserve
    assert len(table.boneyard) == facts.boneyard <= facts.reserve
    assert [h.player for h in facts.hands] == list(table.players)
    for held in facts.hands:
        assert set(held.hand) == table.hands[held.player], "a hand is not as it is"
        assert len(held.hand) == len(table.hands[held.player])
        assert held.pips == table.pips(held.hand)
        assert held.places == places_of(table, held.player)
        assert not table.moves(held.player), f"{held.player} can play: no block"
        assert held.matches == ()
    n = len(table.players)
    assert found.actor == facts.proposer
    if facts.confirmation == "full_round":
        first = table.players.index(facts.proposer)
        assert facts.passes == tuple(table.players[(first + i) % n] for i in range(n))
        assert isinstance(event, Passed)
        assert facts.passes[-1] == event.player
    else:
        assert facts.passes == (), "nobody confirms an immediate block"
        assert isinstance(event, TilePlayed | TileDrawn | Passed)
        assert facts.proposer == event.player, "the proposer closed the layout"
    shown = {p.place: p.value for p in facts.open_ends}
    assert len(shown) == len(facts.open_ends)
    assert shown == {n: e.value for n, e in table.ends.items()}
    assert (verdict.proposer, verdict.confirmed_by) == (facts.proposer, facts.passes)
    assert dict(verdict.open_ends) == shown
    assert dict(verdict.pip_counts) == {h.player: h.pips for h in facts.hands}


def round_winners(
    table: Table, facts: RoundFacts, pips: dict[str, int], totals: dict[str, int]
) -> tuple[str, tuple[str, ...], int | None, tuple[str, ...]]:
    """Who wins the round, by the rulebook (sections 5.1 and 5.3): the winner rule, the
    sides tied, the lowest count read, and the winners."""
    rules = table.rules
    if facts.out is not None:
        return "domino", (), None, (table.side_of[facts.out],)
    if rules.scoring is Scoring.PENALTY:
        low = min(pips.values())
        lowest = tuple(p for p in table.players if pips[p] == low)
        return "lowest_count", lowest if len(lowest) > 1 else (), low, lowest
    rule = rules.block_winner.value
    if rule == "lowest_player":
        low = min(pips.values())
        tied = tuple(s for s in table.sides if any(pips[m] == low for m in table.members(s)))
    else:
        low = min(totals.values())
        tied = tuple(s for s in table.sides if totals[s] == low)
    if len(tied) == 1:
        return rule, (), low, tied
    winners: tuple[str, ...] = ()
    if rules.tie.value == "split":
        winners = tied
    elif rules.tie.value == "lowest_tile":
        smallest = lowest_tiles(table, tied)
        holders = tuple(s for s in tied if smallest[s] == min(smallest.values()))
        winners = holders if len(holders) == 1 else ()
    return rule, tied, low, winners


def lowest_tiles(table: Table, sides: Iterable[str]) -> dict[str, int]:
    return {
        s: min(table.tile_pips(t) for m in table.members(s) for t in table.hands[m]) for s in sides
    }


def check_round(table: Table, found: Evidence, event: GameEvent) -> None:
    verdict, facts = found.verdict, found.facts
    assert isinstance(verdict, RoundScored)
    assert isinstance(facts, RoundFacts)
    rules = table.rules
    assert facts.reason == verdict.reason.value
    if facts.reason == "domino":
        assert isinstance(event, TilePlayed)
        assert facts.out == event.player
        assert not table.hands[event.player]
    else:
        assert facts.out is None
        assert all(table.hands.values())
    assert found.actor == facts.out
    assert (facts.scoring, facts.double_blank) == (rules.scoring.value, rules.double_blank)
    assert (facts.tie, facts.rounding) == (rules.tie.value, rules.rounding.value)
    assert [h.player for h in facts.hands] == list(table.players)
    pips = {}
    for held in facts.hands:
        assert set(held.hand) == table.hands[held.player]
        assert len(held.hand) == len(table.hands[held.player])
        assert held.pips == table.pips(table.hands[held.player])
        assert held.places == places_of(table, held.player)
        assert playable(table, held.player, held.matches) == table.moves(held.player)
        pips[held.player] = held.pips
    assert [s.side for s in facts.sides] == list(table.sides)
    totals = {}
    for s in facts.sides:
        assert s.members == table.members(s.side)
        assert s.pips == sum(pips[m] for m in s.members)
        totals[s.side] = s.pips
    rule, tied, low, winners = round_winners(table, facts, pips, totals)
    assert (facts.winner_rule, facts.tied, facts.lowest) == (rule, tied, low)
    assert facts.winners == winners, "the winners are not those of the rules"
    tile_rule = tied and rules.tie.value == "lowest_tile" and rules.scoring is Scoring.AWARD
    smallest = lowest_tiles(table, tied) if tile_rule else {}
    assert {s.side: s.lowest_tile for s in facts.sides} == {s: smallest.get(s) for s in table.sides}
    changes = {line.side: line.change for line in facts.scores}
    if rules.scoring is Scoring.PENALTY:
        assert (facts.points, facts.others, facts.shares) == ("own_pips", 0, ())
        assert changes == totals
    else:
        policy = rules.domino_points if facts.out is not None else rules.block_points
        assert facts.points == policy.value
        won = set(winners)
        assert facts.others == sum(t for s, t in totals.items() if s not in won)
        assert [s.side for s in facts.shares] == list(winners)
        winners_total = sum(totals[w] for w in winners)
        for share in facts.shares:
            assert share.own == totals[share.side]
            base = {
                "others": facts.others,
                "others_minus_own": facts.others - share.own,
                "all": facts.others + winners_total,
            }[facts.points]
            assert share.base == max(base, 0)
            assert share.winners == len(winners)
            assert share.divided == share.base // share.winners
            rounded = share.divided
            if facts.rounding == "nearest_5":
                rounded = (share.divided + 2) // 5 * 5  # 1, 2 go down; 3, 4 go up
            assert share.award == rounded
        awards = {share.side: share.award for share in facts.shares}
        assert changes == {s: awards.get(s, 0) for s in table.sides}
    assert [line.side for line in facts.scores] == list(table.sides)
    for line in facts.scores:
        check_line(table, line)
    # the evidence against the verdict it explains
    assert dict(verdict.pip_counts) == pips
    assert dict(verdict.awards) == by_player(table, changes)
    assert dict(verdict.cumulative) == by_player(table, table.scores)
    assert verdict.winners == tuple(p for p in table.players if table.side_of[p] in winners)
    assert verdict.tie == bool(facts.tied)
    if len(table.sides) < len(table.players):
        assert verdict.team_pip_counts == totals
        assert verdict.team_awards == changes
        assert verdict.team_cumulative == table.scores
        assert verdict.winning_teams == facts.winners


def check_game(table: Table, found: Evidence) -> None:
    verdict, facts = found.verdict, found.facts
    assert isinstance(verdict, GameWon)
    assert isinstance(facts, GameFacts)
    rules = table.rules
    penalty = rules.scoring is Scoring.PENALTY
    assert (facts.rounds, facts.target_score) == (rules.rounds, rules.target_score)
    assert (facts.scoring, facts.best) == (rules.scoring.value, "lowest" if penalty else "highest")
    assert facts.round == table.round
    assert [line.side for line in facts.scores] == list(table.sides)
    for line in facts.scores:
        assert line.members == table.members(line.side)
        assert line.change == 0
        assert line.before == line.after
    finals = {line.side: line.after for line in facts.scores}
    assert finals == table.scores
    target = facts.target_score
    reached = tuple(s for s in table.sides if target is not None and finals[s] >= target)
    assert facts.reached == reached
    if facts.condition == "rounds":
        assert facts.rounds is not None
        assert facts.round == facts.rounds, "the game ended before its last round"
    else:
        assert facts.condition == "target_score"
        assert facts.rounds is None or facts.round < facts.rounds
        assert reached, "nobody reached the target"
    among = reached if facts.condition == "target_score" and not penalty else table.sides
    pick = min if penalty else max
    best = pick(finals[s] for s in among)
    assert facts.winners == tuple(s for s in among if finals[s] == best), (
        "the winners are not every side with the best score"
    )
    if facts.condition == "target_score" and not penalty:
        assert len(facts.winners) == 1, "an exact tie for the lead waits for the next round"
    # the evidence against the verdict it explains
    players = tuple(p for p in table.players if table.side_of[p] in facts.winners)
    assert verdict.winner == players[0]
    assert verdict.winners in (None, players)
    assert dict(verdict.cumulative) == by_player(table, finals)
    if len(table.sides) < len(table.players):
        assert verdict.winning_teams == facts.winners
        assert verdict.team_cumulative == finals


# --- the run ----------------------------------------------------------------------------------

Spoil = Callable[[Evidence], Evidence | None]
"""Spoils a piece of evidence on purpose (``None``: this one cannot be spoiled so)."""


class SpoilCaughtError(Exception):
    """The check failed on the evidence spoiled on purpose, as it must."""


class SpoilMissedError(Exception):
    """The check passed evidence spoiled on purpose."""


def explain_and_check(lines: Iterable[bytes], spoil: Spoil | None = None) -> Counter[str]:
    """Explains a log and re-judges every piece of evidence; returns the kinds checked.

    With ``spoil``, the first piece of evidence it spoils is checked spoiled, and the run ends
    there: with ``SpoilCaughtError`` if the check failed, ``SpoilMissedError`` if it passed.
    """
    explainer = Explainer()
    tables: dict[str, Table] = {}
    seen: Counter[str] = Counter()

    def check(run: Callable[..., None], table: Table, found: Evidence, *args: object) -> None:
        bad = None if spoil is None else spoil(found)
        if bad is None:
            run(table, found, *args)
            return
        try:
            run(table, bad, *args)
        except AssertionError as failed:
            raise SpoilCaughtError(str(failed)) from failed
        raise SpoilMissedError(f"the check passed spoiled evidence: {bad}")

    for number, line in enumerate(lines, 1):
        wire = parse_event(line)
        assert isinstance(wire, InputEvent)
        event = wire.to_domain()
        table = tables.get(wire.game_id)
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
            check(check_foul, table, found, event)
            seen[f"foul:{found.verdict.foul.value}"] += 1  # type: ignore[union-attr]
        if any(not f.verdict.applied for f in fouls):  # type: ignore[union-attr]
            continue  # rejected: nothing changed
        first = not table.ends
        if isinstance(event, TilePlayed):
            place = event.end.value if event.end is not None else event.train
            table.play(event.player, event.tile, place if table.ends or table.trains else None)
        elif isinstance(event, TileDrawn):
            table.draw(event.player, event.tile)
        elif isinstance(event, Passed):
            table.passed(event.player)
        for found in evidence:
            facts = found.facts
            if isinstance(facts, CountFacts):
                check(check_count, table, found, event, first)
            elif isinstance(facts, BlockFacts):
                check(check_block, table, found, event)
            elif isinstance(facts, RoundFacts):
                check(check_round, table, found, event)
            elif isinstance(facts, GameFacts):
                check(check_game, table, found)
            else:
                continue
            seen[type(found.verdict).__name__] += 1
    return seen


@cache
def log(family: str, games: int, seed: int, foul_rate: float) -> tuple[bytes, ...]:
    """A simulated log of the family's games only."""
    lines = family_log(family, games=games, seed=seed, foul_rate=foul_rate)
    return tuple(line for _, line in lines)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_evidence_of_every_verdict_of_a_simulated_log_re_judges(family: str) -> None:
    lines = log(family, 40, 36, 0.15)

    seen = explain_and_check(lines)

    # guards the run: the family was played, and its verdicts were there to re-judge
    assert sum(b'"type":"GameStarted"' in line for line in lines) >= 5, family
    assert seen["foul:false_pass"], seen
    assert seen["BlockDeclared"], seen
    assert seen["RoundScored"], seen
    assert seen["GameWon"], seen
    if FAMILIES[family].scores_in_play:
        assert seen["PointsScored"], seen


def test_every_foul_kind_and_verdict_kind_is_re_judged_somewhere() -> None:
    """Guards the run above: no kind goes unchecked for want of an example."""
    seen: Counter[str] = Counter()
    for family in ("mixed", "mexican_train", "all_fives"):
        seen += explain_and_check(log(family, 60, 7, 0.02))
    kinds = {k.removeprefix("foul:") for k in seen}
    assert kinds >= {
        "out_of_turn", "tile_not_in_hand", "end_not_available", "double_unsatisfied",
        "train_closed", "tile_does_not_match", "end_missing", "draw_not_allowed",
        "boneyard_empty", "tile_not_in_boneyard", "draw_limit", "draw_while_able",
        "false_pass", "pass_before_drawing",
        "PointsScored", "BlockDeclared", "RoundScored", "GameWon",
    }, sorted(kinds)  # fmt: skip


# --- the checks catch spoiled evidence ---------------------------------------------------------

F = TypeVar("F", bound=Facts)
T = TypeVar("T")


def spoiling(kind: str, facts: type[F], spoil: Callable[[F, Evidence], F | None]) -> Spoil:
    """A spoil of the facts of one kind of verdict or foul (``kind``: a foul kind, or a verdict
    type); ``None`` from ``spoil``, or facts unchanged, leave the evidence alone."""

    def spoiled(found: Evidence) -> Evidence | None:
        verdict = found.verdict
        named = verdict.foul.value if isinstance(verdict, FoulRecorded) else type(verdict).__name__
        if named != kind or not isinstance(found.facts, facts):
            return None
        bad = spoil(found.facts, found)
        return None if bad is None or bad == found.facts else dataclasses.replace(found, facts=bad)

    return spoiled


r = dataclasses.replace


def first_bumped(facts: T, field: str, attr: str) -> T | None:
    """``facts`` with its ``field``'s first item's ``attr`` one more (None: no item)."""
    items = getattr(facts, field)
    if not items:
        return None
    first = items[0]
    return r(facts, **{field: (r(first, **{attr: getattr(first, attr) + 1}), *items[1:])})  # type: ignore[type-var]


def drop_last(items: tuple[T, ...] | None) -> tuple[T, ...] | None:
    return None if not items else items[:-1]


def other_than(value: str, *choices: str) -> str:
    return next(c for c in choices if c != value)


def left_out_of_a_hand(hands: tuple[HeldHand, ...]) -> tuple[HeldHand, ...] | None:
    """A tile left out of the first hand that has one, its pips taken off with it."""
    for i, held in enumerate(hands):
        if held.hand:
            gone = held.hand[-1]
            short = r(held, hand=held.hand[:-1], pips=held.pips - gone[0] - gone[1])
            return (*hands[:i], short, *hands[i + 1 :])
    return None


def nudged(line: ScoreLine, by: int) -> ScoreLine:
    return r(line, change=line.change + by, after=line.after + by)


def with_award(facts: RoundFacts, award: int) -> RoundFacts:
    """The first share's award changed, carried into its side's score line."""
    share = facts.shares[0]
    by = award - share.award
    scores = tuple(nudged(s, by) if s.side == share.side else s for s in facts.scores)
    return r(facts, shares=(r(share, award=award), *facts.shares[1:]), scores=scores)


def rounded_wrong(facts: RoundFacts, _: Evidence) -> RoundFacts | None:
    """The first share whose rounding matters, rounded the other way (none: to 5)."""
    if not facts.shares:
        return None
    divided = facts.shares[0].divided
    if divided % 5 == 0:
        return None
    return with_award(facts, divided if facts.rounding == "nearest_5" else (divided + 2) // 5 * 5)


def a_winner_left_out(joint: bool) -> Callable[[RoundFacts, Evidence], RoundFacts | None]:
    def spoil(facts: RoundFacts, _: Evidence) -> RoundFacts | None:
        if len(facts.winners) < (2 if joint else 1):
            return None
        gone = facts.winners[-1]
        shares = tuple(s for s in facts.shares if s.side != gone)
        return r(facts, winners=facts.winners[:-1], shares=shares)

    return spoil


def a_place_named(facts: PlaceFacts, found: Evidence) -> PlaceFacts | None:
    """One of the places open to the player named instead."""
    if not facts.places:
        return None
    place = facts.places[0].place
    if place in ("left", "right", "up", "down"):
        return r(facts, end=place, train=None)
    return r(facts, end=None, train=place)


def first_place(facts: PlayableFacts) -> tuple[PlaceValue, ...]:
    return facts.places or (PlaceValue("left", 0),)


SPOILS: dict[str, Spoil] = {
    # the fouls whose action stands: what the hand could play
    "false_pass/a tile left out": spoiling(
        "false_pass", PlayableFacts, lambda f, _: r(f, playable=drop_last(f.playable))
    ),
    "false_pass/a wrong end": spoiling(
        "false_pass",
        PlayableFacts,
        lambda f, _: (
            None
            if not f.playable
            else r(
                f,
                playable=(
                    r(
                        f.playable[0],
                        place=other_than(f.playable[0].place or "", "left", "right"),
                        value=f.playable[0].value,
                    ),
                    *f.playable[1:],
                ),
            )
        ),
    ),
    "false_pass/a wrong value": spoiling(
        "false_pass",
        PlayableFacts,
        lambda f, _: (
            None
            if not f.playable
            else r(
                f,
                playable=(r(f.playable[0], value=(f.playable[0].value or 0) + 1), *f.playable[1:]),
            )
        ),
    ),
    "false_pass/a tile not in the hand": spoiling(
        "false_pass",
        PlayableFacts,
        lambda f, _: (
            None
            if not f.playable
            else r(
                f,
                playable=(
                    *f.playable,
                    Playable((99, 99), f.playable[0].place, f.playable[0].value),
                ),
            )
        ),
    ),
    "false_pass/a hand tile left out": spoiling(
        "false_pass", PlayableFacts, lambda f, _: r(f, hand=drop_last(f.hand))
    ),
    "draw_while_able/a tile left out": spoiling(
        "draw_while_able", PlayableFacts, lambda f, _: r(f, playable=drop_last(f.playable))
    ),
    "draw_while_able/the option allowed": spoiling(
        "draw_while_able", PlayableFacts, lambda f, _: r(f, draw_while_able="allowed")
    ),
    "pass_before_drawing/nothing to draw": spoiling(
        "pass_before_drawing", PlayableFacts, lambda f, _: r(f, boneyard=f.reserve)
    ),
    "pass_before_drawing/had drawn under once": spoiling(
        "pass_before_drawing", PlayableFacts, lambda f, _: r(f, draw="once", drew=True)
    ),
    "pass_before_drawing/a tile that plays": spoiling(
        "pass_before_drawing",
        PlayableFacts,
        lambda f, _: (
            None
            if not f.hand
            else r(
                f, playable=(Playable(f.hand[0], first_place(f)[0].place, first_place(f)[0].value),)
            )
        ),
    ),
    # the rejected fouls: what the rule needed and what the action was
    "out_of_turn/the offender's own turn": spoiling(
        "out_of_turn", TurnFacts, lambda f, found: r(f, turn=found.actor or "")
    ),
    "out_of_turn/another action": spoiling(
        "out_of_turn",
        TurnFacts,
        lambda f, _: r(f, action=other_than(f.action, "TileDrawn", "Passed")),
    ),
    "tile_not_in_hand/a hand tile left out": spoiling(
        "tile_not_in_hand", HandFacts, lambda f, _: r(f, hand=drop_last(f.hand))
    ),
    "tile_not_in_hand/the tile in the hand": spoiling(
        "tile_not_in_hand", HandFacts, lambda f, _: r(f, hand=(*(f.hand or ()), f.tile))
    ),
    "tile_not_in_hand/wrong whereabouts": spoiling(
        "tile_not_in_hand",
        HandFacts,
        lambda f, _: r(f, where=other_than(f.where or "", "in the boneyard", "in nobody's hand")),
    ),
    "end_not_available/a place that exists": spoiling(
        "end_not_available", PlaceFacts, a_place_named
    ),
    "end_not_available/a place left out": spoiling(
        "end_not_available", PlaceFacts, lambda f, _: r(f, places=drop_last(f.places))
    ),
    "end_missing/a place named": spoiling("end_missing", PlaceFacts, a_place_named),
    "end_missing/a wrong place value": spoiling(
        "end_missing",
        PlaceFacts,
        lambda f, _: first_bumped(f, "places", "value"),
    ),
    "double_unsatisfied/a wrong value": spoiling(
        "double_unsatisfied",
        PlaceFacts,
        lambda f, _: (
            None if not f.pending else r(f, pending=r(f.pending, value=f.pending.value + 1))
        ),
    ),
    "double_unsatisfied/on the train named": spoiling(
        "double_unsatisfied",
        PlaceFacts,
        lambda f, _: None if not f.pending else r(f, pending=r(f.pending, train=f.train or "")),
    ),
    "double_unsatisfied/no pending double": spoiling(
        "double_unsatisfied", PlaceFacts, lambda f, _: r(f, pending=None)
    ),
    "train_closed/an open train left out": spoiling(
        "train_closed",
        PlaceFacts,
        lambda f, _: r(f, open_trains=drop_last(f.open_trains) if f.open_trains else ("x",)),
    ),
    "train_closed/the train named open": spoiling(
        "train_closed",
        PlaceFacts,
        lambda f, _: r(f, open_trains=(*(f.open_trains or ()), f.train or "")),
    ),
    "tile_does_not_match/a value the tile shows": spoiling(
        "tile_does_not_match",
        PlaceFacts,
        lambda f, _: None if not f.tile else r(f, value=f.tile[0]),
    ),
    "tile_does_not_match/another value": spoiling(
        "tile_does_not_match", PlaceFacts, lambda f, _: r(f, value=(f.value or 0) + 100)
    ),
    "draw_not_allowed/a draw rule that draws": spoiling(
        "draw_not_allowed", DrawFacts, lambda f, _: r(f, draw="until_playable")
    ),
    "boneyard_empty/a boneyard to draw from": spoiling(
        "boneyard_empty", DrawFacts, lambda f, _: r(f, boneyard=f.reserve + 1)
    ),
    "boneyard_empty/a wrong reserve": spoiling(
        "boneyard_empty", DrawFacts, lambda f, _: r(f, reserve=f.reserve + 1)
    ),
    "tile_not_in_boneyard/wrong whereabouts": spoiling(
        "tile_not_in_boneyard",
        DrawFacts,
        lambda f, _: r(f, where=other_than(f.where or "", "in the boneyard", "in nobody's hand")),
    ),
    "tile_not_in_boneyard/a wrong boneyard count": spoiling(
        "tile_not_in_boneyard", DrawFacts, lambda f, _: r(f, boneyard=f.boneyard + 1)
    ),
    "draw_limit/had not drawn": spoiling("draw_limit", DrawFacts, lambda f, _: r(f, drew=False)),
    "draw_limit/another draw rule": spoiling(
        "draw_limit", DrawFacts, lambda f, _: r(f, draw="until_playable")
    ),
    # a penalty, whatever the foul
    "false_pass/a wrong penalty": spoiling(
        "false_pass",
        PlayableFacts,
        lambda f, _: None if not f.penalty else r(f, penalty=r(f.penalty, after=0)),
    ),
    "out_of_turn/a wrong penalty": spoiling(
        "out_of_turn",
        TurnFacts,
        lambda f, _: None if not f.penalty else r(f, penalty=r(f.penalty, before=0, after=0)),
    ),
    # the layout's count
    "PointsScored/a wrong end value": spoiling(
        "PointsScored",
        CountFacts,
        lambda f, _: first_bumped(f, "ends", "value"),
    ),
    "PointsScored/a wrong end": spoiling(
        "PointsScored",
        CountFacts,
        lambda f, _: r(f, ends=(r(f.ends[0], end="up"), *f.ends[1:])),
    ),
    "PointsScored/an end counted once too often": spoiling(
        "PointsScored",
        CountFacts,
        lambda f, _: first_bumped(f, "ends", "times"),
    ),
    "PointsScored/a wrong count": spoiling(
        "PointsScored", CountFacts, lambda f, _: r(f, count=f.count + 5)
    ),
    "PointsScored/wrong points": spoiling(
        "PointsScored",
        CountFacts,
        lambda f, _: r(f, points=f.points + 5, score=nudged(f.score, 5)),
    ),
    "PointsScored/a wrong score": spoiling(
        "PointsScored", CountFacts, lambda f, _: r(f, score=r(f.score, after=f.score.after + 1))
    ),
    # the block
    "BlockDeclared/a hand tile left out": spoiling(
        "BlockDeclared", BlockFacts, lambda f, _: r(f, hands=left_out_of_a_hand(f.hands))
    ),
    "BlockDeclared/a wrong end value": spoiling(
        "BlockDeclared",
        BlockFacts,
        lambda f, _: first_bumped(f, "open_ends", "value"),
    ),
    "BlockDeclared/a wrong place of a holder": spoiling(
        "BlockDeclared",
        BlockFacts,
        lambda f, _: (
            None
            if not f.hands[0].places
            else r(
                f,
                hands=(
                    r(
                        f.hands[0],
                        places=(
                            r(f.hands[0].places[0], value=f.hands[0].places[0].value + 1),
                            *f.hands[0].places[1:],
                        ),
                    ),
                    *f.hands[1:],
                ),
            )
        ),
    ),
    "BlockDeclared/a wrong pip count": spoiling(
        "BlockDeclared",
        BlockFacts,
        lambda f, _: first_bumped(f, "hands", "pips"),
    ),
    "BlockDeclared/a confirming pass left out": spoiling(
        "BlockDeclared",
        BlockFacts,
        lambda f, _: None if not f.passes else r(f, passes=f.passes[:-1]),
    ),
    "BlockDeclared/a pass under immediate": spoiling(
        "BlockDeclared",
        BlockFacts,
        lambda f, _: None if f.confirmation != "immediate" else r(f, passes=(f.proposer,)),
    ),
    "BlockDeclared/a boneyard to draw from": spoiling(
        "BlockDeclared", BlockFacts, lambda f, _: r(f, boneyard=f.reserve + 1)
    ),
    # the round's arithmetic
    "RoundScored/a hand tile left out": spoiling(
        "RoundScored", RoundFacts, lambda f, _: r(f, hands=left_out_of_a_hand(f.hands))
    ),
    "RoundScored/a wrong pip count": spoiling(
        "RoundScored",
        RoundFacts,
        lambda f, _: first_bumped(f, "hands", "pips"),
    ),
    "RoundScored/a wrong T": spoiling(
        "RoundScored",
        RoundFacts,
        lambda f, _: first_bumped(f, "sides", "pips"),
    ),
    "RoundScored/a wrong U": spoiling(
        "RoundScored", RoundFacts, lambda f, _: None if not f.shares else r(f, others=f.others + 1)
    ),
    "RoundScored/a wrong base": spoiling(
        "RoundScored",
        RoundFacts,
        lambda f, _: first_bumped(f, "shares", "base"),
    ),
    "RoundScored/a wrong share": spoiling(
        "RoundScored",
        RoundFacts,
        lambda f, _: None if not f.shares else with_award(f, f.shares[0].award + 5),
    ),
    "RoundScored/a wrong rounding": spoiling("RoundScored", RoundFacts, rounded_wrong),
    "RoundScored/a winner left out": spoiling(
        "RoundScored", RoundFacts, a_winner_left_out(joint=False)
    ),
    "RoundScored/one of joint winners left out": spoiling(
        "RoundScored", RoundFacts, a_winner_left_out(joint=True)
    ),
    "RoundScored/a wrong score": spoiling(
        "RoundScored", RoundFacts, lambda f, _: r(f, scores=(nudged(f.scores[0], 1), *f.scores[1:]))
    ),
    # the end of the game
    "GameWon/a wrong winner": spoiling(
        "GameWon",
        GameFacts,
        lambda f, _: r(f, winners=tuple(s.side for s in f.scores if s.side not in f.winners)[:1]),
    ),
    "GameWon/a side with the best score omitted": spoiling(
        "GameWon", GameFacts, lambda f, _: r(f, winners=f.winners[:-1])
    ),
    "GameWon/a wrong round": spoiling("GameWon", GameFacts, lambda f, _: r(f, round=f.round + 1)),
    "GameWon/a wrong final score": spoiling(
        "GameWon",
        GameFacts,
        lambda f, _: r(
            f,
            scores=(
                r(f.scores[0], before=f.scores[0].before + 1, after=f.scores[0].after + 1),
                *f.scores[1:],
            ),
        ),
    ),
    "GameWon/the other condition": spoiling(
        "GameWon",
        GameFacts,
        lambda f, _: r(f, condition=other_than(f.condition, "rounds", "target_score")),
    ),
}
"""Evidence spoiled on purpose, for every kind of foul and verdict: each must fail the check."""


def spoil_logs() -> Iterator[tuple[bytes, ...]]:
    """The logs to find evidence to spoil in, the richest first."""
    for family in ("mixed", "mexican_train", "all_fives"):
        yield log(family, 60, 7, 0.02)
    for family in sorted(FAMILIES):
        yield log(family, 40, 36, 0.15)


@pytest.mark.parametrize("name", sorted(SPOILS))
def test_the_check_fails_on_spoiled_evidence(name: str) -> None:
    for lines in spoil_logs():
        try:
            explain_and_check(lines, SPOILS[name])
        except SpoilCaughtError:
            return
    pytest.fail(f"no evidence to spoil as {name!r} in any log")


def test_every_foul_kind_and_verdict_kind_is_spoiled_somewhere() -> None:
    """Guards the spoils: no kind of evidence goes untried."""
    kinds = {name.split("/")[0] for name in SPOILS}
    assert kinds == {*FACTS_OF, "PointsScored", "BlockDeclared", "RoundScored", "GameWon"}
