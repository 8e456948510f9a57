"""The blocked game (RULES.md section 4): conditions, the confirmation chain, the declaration."""

from __future__ import annotations

from referee.domain.rules import BlockConfirmation
from referee.domain.state import RoundState


class BlockInvariantError(AssertionError):
    """A block was about to be declared although its conditions do not hold (a bug)."""


def extend_chain(rnd: RoundState, seat: int, legitimate: bool) -> tuple[int, ...]:
    """Returns the confirmation chain after ``seat`` passed.

    A legitimate pass with the boneyard empty proposes or confirms the block; any other pass
    breaks the chain.
    """
    if legitimate and not rnd.boneyard_mask:
        return (*rnd.chain, seat)
    return ()


def block_proposer(
    rnd: RoundState, mode: BlockConfirmation, actor: int, players: int
) -> int | None:
    """Returns the proposer if the round is now declared blocked, else ``None``.

    ``rnd`` is the round after the applied action of ``actor``. Under ``full_round`` the block
    stands once every player has confirmed in consecutive turns; under ``immediate`` once both
    conditions hold. The conditions are checked directly in both modes.
    """
    if mode is BlockConfirmation.FULL_ROUND:
        if len(rnd.chain) < players:
            return None
        if not rnd.is_blocked():
            raise BlockInvariantError(f"a full round of passes but not blocked: {rnd}")
        return rnd.chain[0]
    return actor if rnd.is_blocked() else None
