"""The kinds of foul a referee records (RULES.md section 3, in the precedence of its table)."""

from __future__ import annotations

from enum import StrEnum


class FoulKind(StrEnum):
    """A broken rule. Members are listed in the precedence order of RULES.md section 3."""

    OUT_OF_TURN = "out_of_turn"
    """A player acted when it was not their turn (rejected)."""
    TILE_NOT_IN_HAND = "tile_not_in_hand"
    """A player played a tile they do not hold (rejected)."""
    END_NOT_AVAILABLE = "end_not_available"
    """The place named does not exist in this layout now, or is not yet open (rejected)."""
    DOUBLE_UNSATISFIED = "double_unsatisfied"
    """A double is pending and the tile was put on another train (rejected)."""
    TRAIN_CLOSED = "train_closed"
    """The tile was put on another player's closed personal train (rejected)."""
    TILE_DOES_NOT_MATCH = "tile_does_not_match"
    """The played tile does not show the value of the end it was put on (rejected)."""
    END_MISSING = "end_missing"
    """A tile was played without naming a place where one is needed (rejected)."""
    DRAW_NOT_ALLOWED = "draw_not_allowed"
    """A player drew in a game whose rules forbid drawing (rejected)."""
    BONEYARD_EMPTY = "boneyard_empty"
    """A player drew from an exhausted boneyard (rejected; the edition-1 name)."""
    TILE_NOT_IN_BONEYARD = "tile_not_in_boneyard"
    """A player drew a tile that is not in the boneyard (rejected)."""
    DRAW_LIMIT = "draw_limit"
    """A player drew a second time in one turn under ``draw: once`` (rejected)."""
    DRAW_WHILE_ABLE = "draw_while_able"
    """A player who could play drew anyway, where the rules make that a foul (applied)."""
    FALSE_PASS = "false_pass"
    """A player passed while holding a playable tile (applied)."""
    PASS_BEFORE_DRAWING = "pass_before_drawing"
    """A player passed while the draw rule still required them to draw (applied)."""

    @property
    def is_rejected(self) -> bool:
        """Checks if an action with this foul is rejected (changes nothing)."""
        return self not in _APPLIED


_APPLIED = frozenset({FoulKind.DRAW_WHILE_ABLE, FoulKind.FALSE_PASS, FoulKind.PASS_BEFORE_DRAWING})
