"""``referee explain`` as text for people: the story of a game, the board, the evidence in words.

Everything rendered here comes from chapters already fit for their reader
(``usecases/explanations.py``): this module only words them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from referee.contracts.wire import RulesWire
from referee.domain.board import Board
from referee.domain.evidence import (
    BlockFacts,
    CountFacts,
    DrawFacts,
    Evidence,
    Facts,
    GameFacts,
    HandFacts,
    HeldHand,
    Penalty,
    PlaceFacts,
    PlaceValue,
    Playable,
    PlayableFacts,
    RoundFacts,
    ScoreLine,
    TurnFacts,
)
from referee.domain.layout import Layout
from referee.domain.tiles import Tile, format_tile
from referee.domain.trains import Trains
from referee.usecases.explanations import Chapter, Dealt, Explained, Opened

INDENT = "    "


def render(chapter: Chapter) -> list[str]:
    """Returns the lines of one chapter of a game's story."""
    if isinstance(chapter, Opened):
        return opened(chapter)
    if isinstance(chapter, Dealt):
        return dealt(chapter)
    return explained(chapter)


def opened(chapter: Opened) -> list[str]:
    """Returns the head of a game's story: who plays, in which teams, under which rules."""
    lines = [
        f"== game {chapter.game_id} ==",
        f"players, in the order of play: {_and(chapter.players)}",
    ]
    if chapter.teams:
        teams = "; ".join(f"{t}: {_and(m)}" for t, m in chapter.teams.items())
        lines.append(f"teams: {teams}")
    options = RulesWire.from_domain(chapter.rules)
    given = {
        name: getattr(options, name)
        for name in options.__struct_fields__
        if getattr(options, name) != getattr(RulesWire(), name)
    }
    shown = ", ".join(f"{k} {_option(v)}" for k, v in given.items())
    lines.append(f"rules: {shown or 'every option at its default'} (RULES.md §6)")
    return lines


def _option(value: object) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} {v}" for k, v in value.items()) + "}"
    return str(getattr(value, "value", value))


def dealt(chapter: Dealt) -> list[str]:
    """Returns the deal of a round, with the hands the reader may see."""
    sizes = ", ".join(f"{p} {n}" for p, n in chapter.hand_sizes.items())
    lines = [
        "",
        f"-- round {chapter.round} --",
        f"dealt (tiles in each hand): {sizes}; boneyard {chapter.boneyard}; "
        f"{chapter.leader} leads"
        + ("" if chapter.engine is None else f"; engine [{chapter.engine}|{chapter.engine}]"),
    ]
    for player, hand in chapter.hands.items():
        lines.append(f"{INDENT}{player}: {tiles(hand)}")
    return lines


def explained(chapter: Explained) -> list[str]:
    """Returns one verdict: what happened, the verdict, the rule, the board, the evidence."""
    verdict = chapter.verdict
    evidence = chapter.evidence
    kind = str(verdict.__struct_config__.tag)
    plays, draws, passes = chapter.quiet
    lines = []
    if chapter.first:
        lines.append("")
        if plays or draws or passes:
            lines.append(f"({plays} plays, {draws} draws, {passes} passes without a verdict)")
        lines.append(f"seq {chapter.seq}, round {verdict.round}: {chapter.action}")
        lines += [INDENT + line for line in board(chapter.board, chapter.layout)]
    what = kind
    foul = getattr(verdict, "foul", None)
    if foul is not None:
        how = "applied: the action stood" if verdict.applied else "rejected: nothing changed"  # type: ignore[union-attr]
        what = f"{kind} {foul} ({how})"
    lines += [f"{INDENT}verdict: {what} [{verdict.verdict_id}]", f"{INDENT}rule: {evidence.rule}"]
    lines += [INDENT + line for line in facts(evidence)]
    if evidence.withheld:
        lines.append(
            f"{INDENT}withheld from this view until the round ends: {', '.join(evidence.withheld)}"
        )
    return lines


# --- the board -------------------------------------------------------------------------------


def laid(row: Iterable[Tile], spinner: int | None = None) -> str:
    """Returns tiles as they lie, ``[a|b]``; the spinner as ``{a|b}``."""
    return "".join(f"{{{a}|{b}}}" if i == spinner else f"[{a}|{b}]" for i, (a, b) in enumerate(row))


def board(drawn: Board, layout: Layout) -> list[str]:
    """Returns the board drawn in text, with the value each end shows."""
    ends = layout.open_ends()
    if isinstance(layout, Trains):
        lines = [f"board: engine [{drawn.engine}|{drawn.engine}]"]
        names = layout.table.names
        for i, name in enumerate(names):
            state = "open" if layout.open >> i & 1 else "closed"
            pending = ", a double pending" if layout.pending == i else ""
            lines.append(
                f"{INDENT}train {name} ({state}{pending}): {laid(drawn.trains[i]) or '-'}"
                f" shows {ends[name]}"
            )
        return lines
    if not drawn.line:
        return ["board: no tile yet (any tile opens the round)"]
    lines = [f"board: {laid(drawn.line, drawn.spinner)}"]
    shown = ", ".join(f"{end} {value}" for end, value in ends.items())
    if drawn.spinner is not None:
        a, b = drawn.line[drawn.spinner]
        spun = f"{{{a}|{b}}}"
        lines.append(f"{INDENT}up: {spun}{laid(drawn.up)}   down: {spun}{laid(drawn.down)}")
    lines.append(f"{INDENT}ends: {shown}")
    return lines


# --- the evidence ----------------------------------------------------------------------------


def tiles(hand: Iterable[Tile]) -> str:
    """Returns tiles as players write them: ``[0,3] [5,6]``; ``none`` for none."""
    return " ".join(format_tile(t) for t in hand) or "none"


def places(found: Iterable[PlaceValue] | None) -> str:
    """Returns places with their values: ``left 3, right 5``."""
    if found is None:
        return "none yet: the layout is empty and any tile opens it"
    return ", ".join(f"{p.place} {p.value}" for p in found) or "none"


def playables(found: Iterable[Playable]) -> str:
    """Returns tiles that play with their places: ``[3,5] on left (5)``."""
    return "; ".join(
        f"{format_tile(p.tile)} opens the round"
        if p.place is None
        else f"{format_tile(p.tile)} on {p.place} ({p.value})"
        for p in found
    )


def _and(names: Iterable[str]) -> str:
    return ", ".join(names)


def facts(evidence: Evidence) -> list[str]:
    """Returns the evidence in plain words."""
    found: Facts = evidence.facts
    actor = evidence.actor or "the player"
    if isinstance(found, TurnFacts):
        lines = [f"it was {found.turn}'s turn, not {actor}'s: an action out of turn is rejected"]
    elif isinstance(found, HandFacts):
        lines = _hand(found, actor)
    elif isinstance(found, PlaceFacts):
        lines = _place(found, actor)
    elif isinstance(found, DrawFacts):
        lines = _draw(found, actor)
    elif isinstance(found, PlayableFacts):
        lines = _playable(found, actor, getattr(evidence.verdict, "foul", ""))
    elif isinstance(found, CountFacts):
        lines = _count(found)
    elif isinstance(found, BlockFacts):
        lines = _block(found)
    elif isinstance(found, RoundFacts):
        lines = _round(found)
    else:
        lines = _game(found)
    penalty = getattr(found, "penalty", None)
    if isinstance(penalty, Penalty):
        lines.append(_penalty(penalty))
    return lines


def _penalty(penalty: Penalty) -> str:
    deducted = penalty.after < penalty.before
    how = "deducted from" if deducted else "added to"
    return (
        f"penalty: {penalty.points} points {how} {penalty.side}'s score "
        f"({penalty.before} -> {penalty.after})"
    )


def _hand(found: HandFacts, actor: str) -> list[str]:
    named = "a tile" if found.tile is None else format_tile(found.tile)
    if found.hand is None:
        return [f"{actor} tried to play {named}, which is not in {actor}'s hand (a secret)"]
    lines = [
        (
            f"{actor} tried to play {named}; {actor}'s hand held {tiles(found.hand)}: "
            f"{named} is not there"
        )
    ]
    if found.where is not None:
        lines.append(f"{named} was {found.where}")
    return lines


def _place(found: PlaceFacts, actor: str) -> list[str]:
    named = "no place"
    if found.end is not None and found.train is not None:
        named = f"end {found.end} and train {found.train}"
    elif found.end is not None:
        named = f"end {found.end}"
    elif found.train is not None:
        named = f"train {found.train}"
    shown = "a tile" if found.tile is None else format_tile(found.tile)
    lines = [
        f"the rule: {found.need}",
        f"the play: {shown} on {named}",
        f"places open to {actor}: {places(found.places)}",
    ]
    if found.value is not None:
        shows = "" if found.tile is None else f"; {shown} shows {found.tile[0]} and {found.tile[1]}"
        lines.append(f"the place named shows {found.value}{shows}")
    if found.pending is not None:
        p = found.pending
        lines.append(
            f"a double [{p.value},{p.value}] played by {p.by} is pending on train {p.train}"
        )
    if found.open_trains is not None:
        lines.append(f"open trains: {_and(found.open_trains) or 'none'}")
    return lines


def _draw(found: DrawFacts, actor: str) -> list[str]:
    shown = "a tile" if found.tile is None else format_tile(found.tile)
    drew = "had drawn" if found.drew else "had not drawn"
    lines = [
        f"the rule: {found.need}",
        (
            f"draw rule: {found.draw}; the boneyard held {found.boneyard} tiles "
            f"(boneyard_reserve {found.reserve}: exhausted at {found.reserve} or fewer); "
            f"{actor} {drew} this turn"
        ),
        f"the tile named: {shown}",
    ]
    if found.where is not None:
        lines.append(f"{shown} was {found.where}")
    return lines


def _playable(found: PlayableFacts, actor: str, foul: str) -> list[str]:
    exhausted = found.boneyard <= found.reserve
    yard = (
        f"the boneyard held {found.boneyard} tiles "
        f"({'exhausted' if exhausted else 'not exhausted'}: boneyard_reserve {found.reserve})"
    )
    lines = [f"places open to {actor}: {places(found.places)}"]
    if found.hand is None:
        lines.append(
            f"{actor} held {found.hand_size} tiles; which of them play is secret until the "
            "round ends (the referee saw every hand)"
        )
    else:
        lines.append(f"{actor}'s hand: {tiles(found.hand)}")
        if found.playable:
            lines.append(f"tiles that play: {playables(found.playable)}")
        else:
            lines.append("no tile of the hand plays on a place open to them")
    if foul == "false_pass":
        lines.append(f"a player who can play may not pass (RULES.md §3); {yard}")
    elif foul == "draw_while_able":
        lines.append(
            f"draw_while_able is {found.draw_while_able}: drawing while able to play is a foul; "
            f"{yard}"
        )
    else:
        drew = "had drawn" if found.drew else "had not drawn"
        lines.append(
            f"{yard}; draw rule {found.draw} and {actor} {drew} this turn: "
            "a draw was still required before passing"
        )
    return lines


def _count(found: CountFacts) -> list[str]:
    parts = [
        f"{e.end} 0 (no tile on it yet)"
        if e.times == 0
        else f"{e.end} {e.value}" + (" x2 (a double)" if e.times == 2 else "")
        for e in found.ends
    ]
    if found.single:
        how = "the first tile alone counts once, at face value"
    else:
        how = "each end counts its value, twice when its outermost tile is a double"
    place = "" if found.place is None else f" on {found.place}"
    lines = [
        (
            f"after {format_tile(found.tile)}{place} the layout counts "
            f"{' + '.join(parts)} = {found.count} ({how})"
        )
    ]
    if found.play_scoring == "fives_and_threes":
        lines.append(
            f"fives_and_threes: {found.count}/5 = {found.fives} (0 unless 5 divides it) plus "
            f"{found.count}/3 = {found.threes} (0 unless 3 divides it): {found.points} points"
        )
    else:
        n = 5 if found.play_scoring == "fives" else 3
        lines.append(
            f"{found.play_scoring}: {found.count} is a multiple of {n}: {found.points} points"
        )
    lines.append(_score(found.score))
    return lines


def _score(line: ScoreLine) -> str:
    who = line.side if line.members == (line.side,) else f"{line.side} ({_and(line.members)})"
    return f"{who}: {line.before} + {line.change} = {line.after}"


def _held(hand: HeldHand) -> str:
    return f"{hand.player}: {tiles(hand.hand)} = {hand.pips} pips"


def _block(found: BlockFacts) -> list[str]:
    lines = [
        f"the boneyard held {found.boneyard} tiles: exhausted (boneyard_reserve {found.reserve})",
        "nobody can play: for each player, the places open to them and their hand",
    ]
    for hand in found.hands:
        values = sorted({p.value for p in hand.places or ()})
        shown = " or ".join(map(str, values)) or "nothing"
        lines.append(
            f"{INDENT}{hand.player}: places {places(hand.places)}; hand {tiles(hand.hand)}: "
            f"no tile shows {shown}"
        )
    if found.confirmation == "full_round":
        lines.append(
            f"confirmed by a legitimate pass of every player in turn from the proposer: "
            f"{_and(found.passes)}"
        )
    else:
        lines.append(
            f"declared at once (block_confirmation immediate): {found.proposer}'s action left "
            "nobody able to play"
        )
    return lines


def _round(found: RoundFacts) -> list[str]:
    end = f"{found.out} played their last tile" if found.out else "the round was blocked"
    lines = [f"{end}; the hands left (the double-blank counts {found.double_blank}):"]
    lines += [INDENT + _held(h) for h in found.hands]
    if any(s.members != (s.side,) for s in found.sides):
        lines.append(
            "teams' pip counts T: "
            + "; ".join(f"{s.side} ({_and(s.members)}) {s.pips}" for s in found.sides)
        )
    if found.scoring == "penalty":
        if found.winner_rule == "domino":
            lines.append(f"penalty scoring: each player adds their own pips; {found.out} went out")
        else:
            lines.append(
                f"penalty scoring: each player adds their own pips; the lowest count, "
                f"{found.lowest}, wins: {_and(found.winners)}"
            )
    else:
        lines += _award(found)
    lines += [_score(line) for line in found.scores]
    return lines


def _award(found: RoundFacts) -> list[str]:
    if found.winner_rule == "domino":
        lines = [f"a domino: {found.winners[0]} wins the round (domino_points {found.points})"]
    else:
        lines = [
            (
                f"block_winner {found.winner_rule}: the lowest count is {found.lowest}; "
                f"block_points {found.points}"
            )
        ]
    if found.tied:
        lines.append(f"tied: {_and(found.tied)}; tie {found.tie}")
        if found.tie == "lowest_tile":
            lowest = "; ".join(
                f"{s.side} {s.lowest_tile}" for s in found.sides if s.lowest_tile is not None
            )
            lines.append(f"the pips of each tied side's lowest tile: {lowest}")
    if not found.winners:
        lines.append("nobody wins the round: nobody scores")
        return lines
    formula = {
        "others": "U",
        "others_minus_own": "U - T(w)",
        "all": "U + the winners' T",
    }[found.points]
    lines.append(f"U, the pips of the sides that did not win: {found.others}")
    for s in found.shares:
        split = f", divided by {s.winners}: {s.divided}" if s.winners > 1 else ""
        rounding = "" if found.rounding == "none" else f", rounded ({found.rounding}): {s.award}"
        lines.append(
            f"{s.side} (T = {s.own}): {formula} = {s.base} (never below 0){split}{rounding}; "
            f"award {s.award}"
        )
    return lines


def _game(found: GameFacts) -> list[str]:
    if found.condition == "rounds":
        lines = [f"round {found.round} of rounds {found.rounds} is scored: the game ends"]
    else:
        lines = [f"target_score {found.target_score}: reached by {_and(found.reached)}"]
    standings = ", ".join(f"{s.side} {s.after}" for s in found.scores)
    lines.append(f"cumulative scores: {standings}; the {found.best} wins: {_and(found.winners)}")
    return lines
