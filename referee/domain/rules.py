"""The rule options of a game (RULES.md), each with its default."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType

from referee.domain.fouls import FoulKind


class Layout(StrEnum):
    """Where the tiles of a round are played (RULES.md section 1)."""

    LINE = "line"
    """A single line with two open ends, ``left`` and ``right``."""
    SPINNER = "spinner"
    """A line whose first double spins: ``up`` and ``down`` open on it (section 8.1)."""
    TRAINS = "trains"
    """An engine double with a train per player and a public train (section 8.2)."""


class DrawRule(StrEnum):
    """When a player must (or may) draw from the boneyard."""

    UNTIL_PLAYABLE = "until_playable"
    """A player who cannot play draws, one tile at a time, until they can or it is empty."""
    ONCE = "once"
    """A player who cannot play draws one tile; if it does not play, they pass."""
    NONE = "none"
    """A block game: nobody draws; undealt tiles sleep."""


class DrawWhileAble(StrEnum):
    """Whether drawing while holding a playable tile is a foul."""

    ALLOWED = "allowed"
    """Drawing is allowed even when a tile could be played."""
    FOUL = "foul"
    """Drawing while able to play is recorded as a foul (the draw stands)."""


class BlockConfirmation(StrEnum):
    """How a blocked game is confirmed before it is declared."""

    FULL_ROUND = "full_round"
    """Every player, from the proposer on clockwise, confirms with a legitimate pass."""
    IMMEDIATE = "immediate"
    """Declared as soon as an applied action leaves the game blocked."""


class PointsPolicy(StrEnum):
    """How the winner of a round is paid."""

    OTHERS = "others"
    """The sum of every other player's pip count."""
    OTHERS_MINUS_OWN = "others_minus_own"
    """That sum minus the winner's own pip count."""
    ALL = "all"
    """The sum of every player's pip count, the winner's own included."""


class TiePolicy(StrEnum):
    """Who wins a blocked round when the lowest pip count is shared."""

    NO_WINNER = "no_winner"
    """Nobody scores."""
    SPLIT = "split"
    """Every tied player wins and receives the floor of base award / number tied."""
    LOWEST_TILE = "lowest_tile"
    """The tied player holding the single lowest tile wins alone (still tied: nobody)."""


class Rounding(StrEnum):
    """How each award is rounded, last."""

    NONE = "none"
    """Awards are kept as they are."""
    NEAREST_5 = "nearest_5"
    """Each award goes to the nearest multiple of five, halves up."""


class SpinnerArms(StrEnum):
    """When the spinner's ``up`` and ``down`` ends may be played on (section 8.1)."""

    AFTER_SIDES = "after_sides"
    """Once tiles lie against both sides of the spinner along the line."""
    AT_ONCE = "at_once"
    """As soon as the spinner is down."""


class DoubleRule(StrEnum):
    """How long a double played on a train stays pending (section 8.2)."""

    SATISFY = "satisfy"
    """Until a tile is played on its train, whoever's turn it is."""
    FOLLOW_UP = "follow_up"
    """Also no longer than the turn of the player who played it."""


class EngineOrder(StrEnum):
    """Which double may be a round's engine (section 8.2)."""

    FREE = "free"
    """Any double of the set."""
    DESCENDING = "descending"
    """The highest double in round 1, one less each round, wrapping after the double-blank."""


class BlockWinner(StrEnum):
    """Which team wins a blocked round (section 5.1)."""

    LOWEST_TEAM = "lowest_team"
    """The team with the lowest pip count, its members' counts summed."""
    LOWEST_PLAYER = "lowest_player"
    """The team of the player with the lowest pip count."""


class Scoring(StrEnum):
    """What a round's score is (section 5)."""

    AWARD = "award"
    """The round's winners receive points from the others' pips; high is good."""
    PENALTY = "penalty"
    """Every player adds their own pip count to their score; low is good."""


class PlayScoring(StrEnum):
    """Whether a play scores at once from the layout's count (section 10)."""

    NONE = "none"
    """Plays score nothing."""
    FIVES = "fives"
    """A count that is a positive multiple of 5 scores itself."""
    THREES = "threes"
    """A count that is a positive multiple of 3 scores itself."""
    FIVES_AND_THREES = "fives_and_threes"
    """A count scores its fives plus its threes: 15 scores 3 + 5 = 8."""


NO_PENALTIES: Mapping[FoulKind, int] = MappingProxyType({})


def default_draw(layout: Layout) -> DrawRule:
    """Returns the draw rule of a game that does not name one: ``once`` in trains."""
    return DrawRule.ONCE if layout is Layout.TRAINS else DrawRule.UNTIL_PLAYABLE


def default_scoring(layout: Layout) -> Scoring:
    """Returns the scoring of a game that does not name one: ``penalty`` in trains."""
    return Scoring.PENALTY if layout is Layout.TRAINS else Scoring.AWARD


@dataclass(frozen=True, slots=True)
class Rules:
    """Every rule option of a game, as in effect; the defaults are those of RULES.md section 6.

    Two defaults depend on the layout (``draw`` and ``scoring`` in trains): the fields hold
    the options in effect, and ``Rules.of`` fills those two from the layout when not given.
    """

    max_pip: int = 6
    draw: DrawRule = DrawRule.UNTIL_PLAYABLE
    draw_while_able: DrawWhileAble = DrawWhileAble.ALLOWED
    block_confirmation: BlockConfirmation = BlockConfirmation.FULL_ROUND
    block_points: PointsPolicy = PointsPolicy.OTHERS
    domino_points: PointsPolicy = PointsPolicy.OTHERS
    tie: TiePolicy = TiePolicy.NO_WINNER
    rounding: Rounding = Rounding.NONE
    double_blank: int = 0
    foul_penalty: Mapping[FoulKind, int] = field(default_factory=lambda: NO_PENALTIES)
    target_score: int | None = None
    layout: Layout = Layout.LINE
    spinner_arms: SpinnerArms = SpinnerArms.AFTER_SIDES
    mexican_train: bool = True
    double_rule: DoubleRule = DoubleRule.SATISFY
    engine_order: EngineOrder = EngineOrder.FREE
    boneyard_reserve: int = 0
    block_winner: BlockWinner = BlockWinner.LOWEST_TEAM
    scoring: Scoring = Scoring.AWARD
    rounds: int | None = None
    play_scoring: PlayScoring = PlayScoring.NONE

    @classmethod
    def of(
        cls,
        layout: Layout = Layout.LINE,
        draw: DrawRule | None = None,
        scoring: Scoring | None = None,
        **options: object,
    ) -> Rules:
        """Returns the rules of the options given; ``draw`` and ``scoring`` default by layout."""
        rules = cls(layout=layout, **options)  # type: ignore[arg-type]
        return replace(
            rules,
            draw=default_draw(layout) if draw is None else draw,
            scoring=default_scoring(layout) if scoring is None else scoring,
        )

    def exhausted(self, boneyard: int) -> bool:
        """Checks if a boneyard (a tile mask) holds no more than ``boneyard_reserve`` tiles."""
        return boneyard.bit_count() <= self.boneyard_reserve

    def penalty(self, foul: FoulKind) -> int:
        """Returns the points a foul of this kind costs (0 when none is set)."""
        return self.foul_penalty.get(foul, 0)

    def requires_draw(self, drew_this_turn: bool) -> bool:
        """Checks if a player who cannot play must still draw before passing."""
        if self.draw is DrawRule.UNTIL_PLAYABLE:
            return True
        return self.draw is DrawRule.ONCE and not drew_this_turn
