"""The rule options of a game (RULES.md), each with its default."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from referee.domain.fouls import FoulKind


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


NO_PENALTIES: Mapping[FoulKind, int] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Rules:
    """Every rule option of a game; the defaults are those of RULES.md section 6."""

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

    def penalty(self, foul: FoulKind) -> int:
        """Returns the points a foul of this kind costs (0 when none is set)."""
        return self.foul_penalty.get(foul, 0)

    def requires_draw(self, drew_this_turn: bool) -> bool:
        """Checks if a player who cannot play must still draw before passing."""
        if self.draw is DrawRule.UNTIL_PLAYABLE:
            return True
        return self.draw is DrawRule.ONCE and not drew_this_turn
