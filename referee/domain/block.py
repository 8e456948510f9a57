"""The blocked game (RULES.md section 4): conditions, the confirmation chain, the declaration."""

from __future__ import annotations

from referee.domain.layout import CONTINUE, Restart
from referee.domain.rules import BlockConfirmation
from referee.domain.state import RoundState


class BlockInvariantError(AssertionError):
    """A block was about to be declared although its conditions do not hold (a bug)."""


def extend_chain(
    chain: tuple[int, ...], seat: int, confirms: bool, restart: Restart = CONTINUE
) -> tuple[int, ...]:
    """Returns the confirmation chain after ``seat`` passed.

    ``confirms``: the pass was legitimate and the boneyard is exhausted; any other pass breaks
    the chain. A confirming pass that changed someone's available ends (``restart``) starts
    the chain afresh: with itself when the passer's own ends did not change, else empty.
    """
    if not confirms:
        return ()
    if restart is CONTINUE:
        return (*chain, seat)
    return (seat,) if restart is Restart.FRESH else ()


def block_proposer(
    rnd: RoundState, mode: BlockConfirmation, actor: int, players: int, boneyard_reserve: int
) -> int | None:
    """Returns the proposer if the round is now declared blocked, else ``None``.

    ``rnd`` is the round after the applied action of ``actor``. Under ``full_round`` the block
    stands once every player has confirmed in consecutive turns; under ``immediate`` once both
    conditions hold. The conditions are checked directly in both modes.
    """
    if mode is BlockConfirmation.FULL_ROUND:
        if len(rnd.chain) < players:
            return None
        if not rnd.is_blocked(boneyard_reserve):
            raise BlockInvariantError(f"a full round of passes but not blocked: {rnd}")
        return rnd.chain[0]
    return actor if rnd.is_blocked(boneyard_reserve) else None
