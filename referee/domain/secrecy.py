"""What each reader of an explanation may see (issue 36: views that keep secrets).

The auditor sees everything. A player sees what they could know when it happened: their own
hand, the layout, how many tiles the others hold, the boneyard's count, and what the rules
reveal, such as every hand once the round is over. A spectator sees no hand until its round
ends. Evidence is made fit for a reader here, before anything renders it, so that a secret
cannot reach a restricted view through any field of the evidence, the story or the board.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from referee.domain.evidence import (
    BlockFacts,
    DrawFacts,
    Evidence,
    HandFacts,
    PlaceFacts,
    PlayableFacts,
    RoundFacts,
)

SPECTATOR = "spectator"
"""The name ``--as`` gives the spectator's view (it names no player, even one called so)."""


class Viewer(NamedTuple):
    """Who reads an explanation: the auditor, a player, or a spectator."""

    player: str | None
    """The player whose view it is (``None``: the auditor or a spectator)."""
    sees_all: bool
    """Whether every hand is seen at every moment (the auditor)."""

    @property
    def name(self) -> str:
        """Returns the view's name: ``auditor``, ``spectator`` or the player's id."""
        if self.sees_all:
            return "auditor"
        return SPECTATOR if self.player is None else self.player

    def may_see_hand(self, player: str, round_over: bool) -> bool:
        """Checks if this reader may see ``player``'s hand now."""
        return self.sees_all or round_over or player == self.player


AUDITOR = Viewer(None, sees_all=True)
"""The full view: every hand and the boneyard, at every moment."""


def viewer(name: str | None) -> Viewer:
    """Returns the view ``--as`` names: none for the auditor, ``spectator``, or a player."""
    if name is None:
        return AUDITOR
    if name == SPECTATOR:
        return Viewer(None, sees_all=False)
    return Viewer(name, sees_all=False)


_SECRET_FROM_OTHERS: dict[type, tuple[str, ...]] = {
    HandFacts: ("tile", "hand", "where"),
    PlaceFacts: ("tile",),
    DrawFacts: ("tile", "where"),
    PlayableFacts: ("hand", "playable"),
}
"""The facts about a player's tiles, by kind of facts: only the player may see them."""

_SECRET_FROM_ALL: dict[type, tuple[str, ...]] = {
    HandFacts: ("where",),
    DrawFacts: ("where",),
}
"""Where a tile is (another hand, the boneyard): nobody but the auditor may see it."""


def seen_by(evidence: Evidence, reader: Viewer, *, round_over: bool) -> Evidence:
    """Returns the evidence as ``reader`` may see it; ``round_over`` tells if the round of the
    verdict is over once its event is judged (every hand is then revealed).

    What is left out is ``None`` and named in ``withheld``.
    """
    if reader.sees_all or round_over:
        return evidence
    facts = evidence.facts
    if isinstance(facts, BlockFacts | RoundFacts):
        # given only at a round's end; were one not, only the reader's own hand would show
        kept = tuple(h for h in facts.hands if h.player == reader.player)
        if len(kept) == len(facts.hands):
            return evidence
        return replace(evidence, facts=replace(facts, hands=kept), withheld=("hands",))
    own = reader.player is not None and reader.player == evidence.actor
    secret = (_SECRET_FROM_ALL if own else _SECRET_FROM_OTHERS).get(type(facts), ())
    hidden = tuple(name for name in secret if getattr(facts, name) is not None)
    if not hidden:
        return evidence
    cleared = replace(facts, **dict.fromkeys(hidden))  # type: ignore[arg-type]
    return replace(evidence, facts=cleared, withheld=hidden)
