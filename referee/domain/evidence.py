"""The evidence behind a verdict: the facts that justify it, as data.

``explain.py`` derives them from the states the judge went through; ``secrecy.py`` says
which of them a player or a spectator may see. Tiles are in their normal form (smaller value
first); a place is an end (``left``, ``right``, ``up``, ``down``) or a train id. A fact that
a restricted view may not see is ``None`` there, and named in ``Evidence.withheld``. Every
field has a docstring: the JSON Schema of ``referee explain --json`` is written from them.
"""

from __future__ import annotations

from dataclasses import dataclass

from referee.domain.tiles import Tile
from referee.domain.verdicts import Verdict

# --- parts -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlaceValue:
    """A place and the value it shows."""

    place: str
    """An end (left, right, up, down) or a train id."""
    value: int
    """The value the place shows: a tile played there must show it."""


@dataclass(frozen=True, slots=True)
class Playable:
    """A tile of a hand that plays on a place available to its holder."""

    tile: Tile
    """The tile, smaller value first."""
    place: str | None
    """Where it plays; ``None`` on an empty layout, where any tile opens the round unplaced."""
    value: int | None
    """The value the place shows (``None`` on an empty layout)."""


@dataclass(frozen=True, slots=True)
class Penalty:
    """What a foul's penalty did to its offender's side (RULES.md section 3)."""

    points: int
    """The foul's points (``foul_penalty``)."""
    side: str
    """The side that pays: the offender, or their team."""
    before: int
    """The side's cumulative score before the foul."""
    after: int
    """After it: the points deducted under award scoring, added under penalty scoring."""


@dataclass(frozen=True, slots=True)
class PendingDouble:
    """A double pending on a train (RULES.md section 8.2)."""

    train: str
    """The train it is on: only that train may be played on."""
    value: int
    """The double's value: the train's end shows it."""
    by: str
    """The player who played it."""


@dataclass(frozen=True, slots=True)
class CountedEnd:
    """One end's part of the count of RULES.md section 10."""

    end: str
    """left, right, up or down."""
    value: int
    """The value the end shows."""
    times: int
    """How often it counts: 0 (an arm nothing lies on), 1, or 2 (its outermost tile is a
    double)."""


@dataclass(frozen=True, slots=True)
class ScoreLine:
    """A side's cumulative score before and after a verdict."""

    side: str
    """A team id, or a player when every player is a team of one."""
    members: tuple[str, ...]
    """The side's players, in the order of play."""
    before: int
    """The cumulative score before the verdict."""
    change: int
    """What the verdict added (an award, points, the pips added under penalty scoring)."""
    after: int
    """before + change: the score the verdict announces."""


@dataclass(frozen=True, slots=True)
class HeldHand:
    """A hand at a round's end, its pips, and the places open to its holder."""

    player: str
    """The holder."""
    hand: tuple[Tile, ...]
    """The tiles left in the hand."""
    pips: int
    """Their pips, the double-blank counting ``double_blank``."""
    places: tuple[PlaceValue, ...] | None
    """The places available to the player then."""
    matches: tuple[Playable, ...]
    """The tiles of the hand that would play there (a block: none)."""


@dataclass(frozen=True, slots=True)
class Share:
    """What one winning side receives: base award, divided among the winners, rounded."""

    side: str
    """The winning side."""
    own: int
    """The side's own pip count T(w)."""
    base: int
    """Its base award: U (others), U - T(w) (others_minus_own) or U + the winners' T (all),
    never below 0."""
    winners: int
    """k, the number of winning sides the base is divided by."""
    divided: int
    """The floor of base / k."""
    award: int
    """``divided`` after ``rounding``: what the side receives."""


@dataclass(frozen=True, slots=True)
class SideCount:
    """A side's pip count: its members' counts summed (a team's T)."""

    side: str
    """A team id, or a player when every player is a team of one."""
    members: tuple[str, ...]
    """The side's players."""
    pips: int
    """T: the sum of the members' pip counts."""
    lowest_tile: int | None = None
    """The pips of the side's single lowest tile (``tie: lowest_tile``, among tied sides)."""


# --- the facts of each kind of verdict -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TurnFacts:
    """out_of_turn: whose turn it was."""

    turn: str
    """The player whose turn it was."""
    action: str
    """What the offender did: ``TilePlayed``, ``TileDrawn`` or ``Passed``."""
    penalty: Penalty | None = None
    """The foul's penalty, if it has one."""


@dataclass(frozen=True, slots=True)
class HandFacts:
    """tile_not_in_hand: the tile named and the hand it is not in."""

    tile: Tile | None
    """The tile the play named."""
    hand: tuple[Tile, ...] | None
    """The player's hand: the tile is not in it."""
    where: str | None
    """Where the tile was instead (the auditor's view only)."""
    penalty: Penalty | None = None
    """The foul's penalty, if it has one."""


@dataclass(frozen=True, slots=True)
class PlaceFacts:
    """A play rejected for its place: what the place rule needed and what the play named
    (end_not_available, double_unsatisfied, train_closed, tile_does_not_match, end_missing)."""

    need: str
    """What the rule needed, in words."""
    tile: Tile | None
    """The tile played."""
    end: str | None
    """The end named (``None``: none)."""
    train: str | None
    """The train named (``None``: none)."""
    places: tuple[PlaceValue, ...] | None
    """The places available to the player then (``None``: an empty layout)."""
    value: int | None = None
    """The value the place named shows (tile_does_not_match)."""
    pending: PendingDouble | None = None
    """The pending double that binds every player to its train (double_unsatisfied)."""
    open_trains: tuple[str, ...] | None = None
    """The open trains (train_closed)."""
    penalty: Penalty | None = None
    """The foul's penalty, if it has one."""


@dataclass(frozen=True, slots=True)
class DrawFacts:
    """A draw rejected by the draw rules: the rule, the boneyard, the draws of the turn
    (draw_not_allowed, boneyard_empty, tile_not_in_boneyard, draw_limit)."""

    need: str
    """What the rule needed, in words."""
    draw: str
    """The ``draw`` option in effect."""
    boneyard: int
    """How many tiles the boneyard held."""
    reserve: int
    """``boneyard_reserve``: at or below it the boneyard is exhausted."""
    drew: bool
    """Whether the player had drawn this turn."""
    tile: Tile | None
    """The tile the draw named."""
    where: str | None
    """Where the tile named was instead (the auditor's view only)."""
    penalty: Penalty | None = None
    """The foul's penalty, if it has one."""


@dataclass(frozen=True, slots=True)
class PlayableFacts:
    """false_pass, pass_before_drawing, draw_while_able: the hand, the places available to
    its holder, the tiles that play, the boneyard and the draw rule."""

    hand_size: int
    """How many tiles the player held (public)."""
    hand: tuple[Tile, ...] | None
    """The player's hand."""
    places: tuple[PlaceValue, ...] | None
    """The places available to the player (``None``: an empty layout, any tile plays)."""
    playable: tuple[Playable, ...] | None
    """Every tile of the hand that plays, once per place it matches (none: cannot play)."""
    boneyard: int
    """How many tiles the boneyard held."""
    reserve: int
    """``boneyard_reserve``: at or below it the boneyard is exhausted."""
    draw: str
    """The ``draw`` option in effect."""
    drew: bool
    """Whether the player had drawn this turn."""
    draw_while_able: str
    """The ``draw_while_able`` option in effect."""
    penalty: Penalty | None = None
    """The foul's penalty, if it has one."""


@dataclass(frozen=True, slots=True)
class CountFacts:
    """PointsScored: the layout's count, end by end, and what it scores."""

    tile: Tile
    """The tile just played."""
    place: str | None
    """The end it was played on (``None``: the first tile)."""
    single: bool
    """Whether the first tile lies alone: it then counts once, at face value."""
    ends: tuple[CountedEnd, ...]
    """Each end's part of the count."""
    count: int
    """The count: the sum of each end's value times how often it counts."""
    play_scoring: str
    """The ``play_scoring`` option in effect."""
    fives: int
    """count / 5 when 5 divides it and fives count (else 0)."""
    threes: int
    """count / 3 when 3 divides it and threes count (else 0)."""
    points: int
    """What the play scored."""
    score: ScoreLine
    """The mover's side's score before and after."""


@dataclass(frozen=True, slots=True)
class BlockFacts:
    """BlockDeclared: nobody can play and the boneyard is exhausted (RULES.md section 4)."""

    confirmation: str
    """The ``block_confirmation`` option in effect."""
    proposer: str
    """Who proposed the block (immediate: whose action closed the layout)."""
    passes: tuple[str, ...]
    """The confirming legitimate passes in order, the proposer's first (none: immediate)."""
    boneyard: int
    """How many tiles the boneyard held."""
    reserve: int
    """``boneyard_reserve``: at or below it the boneyard is exhausted."""
    hands: tuple[HeldHand, ...]
    """Every hand, the places open to its holder, and the tiles that would play (none)."""
    open_ends: tuple[PlaceValue, ...]
    """Every end (or train) and the value it shows, as the verdict announces them."""


@dataclass(frozen=True, slots=True)
class RoundFacts:
    """RoundScored: the hands, the pip counts and the formula that paid the round."""

    reason: str
    """domino or blocked."""
    scoring: str
    """award or penalty."""
    out: str | None
    """The player who went out (a domino)."""
    double_blank: int
    """What the double-blank counts."""
    hands: tuple[HeldHand, ...]
    """Every hand left, with its pips."""
    sides: tuple[SideCount, ...]
    """Every side's pip count T."""
    winner_rule: str
    """``domino``, ``lowest_team`` or ``lowest_player`` (award), ``lowest_count`` (penalty)."""
    lowest: int | None
    """The lowest count the winner rule read (``None``: a domino)."""
    tied: tuple[str, ...]
    """The sides tied at the lowest count (empty: no tie)."""
    tie: str
    """The ``tie`` option in effect."""
    winners: tuple[str, ...]
    """The winning sides (empty: nobody wins)."""
    points: str
    """The points policy (``others``, ``others_minus_own``, ``all``; ``own_pips`` under
    penalty scoring)."""
    others: int
    """U: the pip count of the sides that did not win."""
    shares: tuple[Share, ...]
    """What each winning side receives, step by step (award scoring)."""
    rounding: str
    """The ``rounding`` option in effect."""
    scores: tuple[ScoreLine, ...]
    """Every side's score before and after the round."""


@dataclass(frozen=True, slots=True)
class GameFacts:
    """GameWon: the condition that ended the game and the standings it read."""

    condition: str
    """``rounds`` (the last round was scored) or ``target_score`` (a side reached it)."""
    round: int
    """The round just scored."""
    rounds: int | None
    """The ``rounds`` option in effect."""
    target_score: int | None
    """The ``target_score`` option in effect."""
    scoring: str
    """award or penalty."""
    best: str
    """``highest`` (award scoring) or ``lowest`` (penalty scoring) wins."""
    scores: tuple[ScoreLine, ...]
    """Each side's final score (change 0)."""
    reached: tuple[str, ...]
    """The sides at or past ``target_score``."""
    winners: tuple[str, ...]
    """The winning sides."""


Facts = (
    TurnFacts
    | HandFacts
    | PlaceFacts
    | DrawFacts
    | PlayableFacts
    | CountFacts
    | BlockFacts
    | RoundFacts
    | GameFacts
)
"""The facts of one verdict; which kind depends on the verdict (and on a foul's kind)."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """One verdict with the facts behind it and the rulebook sections it applies."""

    verdict: Verdict
    rule: str
    """Where the rulebook says it: ``RULES.md §3`` and so on (``docs/rulebook.md``)."""
    facts: Facts
    actor: str | None
    """The player whose action the verdict is about (a foul's offender, a scorer)."""
    withheld: tuple[str, ...] = ()
    """The facts left out of a restricted view (``secrecy.py``): kept secret then."""
