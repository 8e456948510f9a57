"""Scoring a round (RULES.md section 5)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from referee.domain.rules import PointsPolicy, Rounding, Rules, TiePolicy
from referee.domain.tiles import mask_lowest_pips


@dataclass(frozen=True, slots=True)
class Award:
    """Who won a round (by seat), what each seat receives, and whether the lowest was shared."""

    winners: tuple[int, ...]
    awards: tuple[int, ...]
    tie: bool


def base_award(policy: PointsPolicy, others: int, lowest: int, winners: int) -> int:
    """Returns the base award: U, U - L or U + k*L, never below 0."""
    if policy is PointsPolicy.OTHERS:
        base = others
    elif policy is PointsPolicy.OTHERS_MINUS_OWN:
        base = others - lowest
    else:
        base = others + winners * lowest
    return max(base, 0)


def rounded(award: int, rounding: Rounding) -> int:
    """Applies the rounding option to one award (nearest 5: 1, 2 go down, 3, 4 go up)."""
    if rounding is Rounding.NEAREST_5:
        return (award + 2) // 5 * 5
    return award


def pay(
    winners: tuple[int, ...], counts: Sequence[int], policy: PointsPolicy, rounding: Rounding
) -> tuple[int, ...]:
    """Returns each seat's award when ``winners`` share the round under ``policy``."""
    if not winners:
        return (0,) * len(counts)
    won = set(winners)
    others = sum(c for seat, c in enumerate(counts) if seat not in won)
    lowest = counts[winners[0]]
    base = base_award(policy, others, lowest, len(winners))
    each = rounded(base // len(winners), rounding)
    return tuple(each if seat in won else 0 for seat in range(len(counts)))


def score_domino(seat: int, counts: Sequence[int], rules: Rules) -> Award:
    """Scores a round won by ``seat`` playing their last tile."""
    return Award((seat,), pay((seat,), counts, rules.domino_points, rules.rounding), tie=False)


def score_block(hands: Sequence[int], counts: Sequence[int], rules: Rules) -> Award:
    """Scores a blocked round (hands as tile masks): the lowest pip count wins; ``tie`` decides a
    shared lowest."""
    lowest = min(counts)
    tied = tuple(seat for seat, c in enumerate(counts) if c == lowest)
    tie = len(tied) > 1
    winners = tied if not tie else break_tie(tied, hands, rules)
    return Award(winners, pay(winners, counts, rules.block_points, rules.rounding), tie)


def break_tie(tied: tuple[int, ...], hands: Sequence[int], rules: Rules) -> tuple[int, ...]:
    """Returns the winners among seats sharing the lowest pip count, under the tie policy.

    ``hands`` are the seats' tile masks.
    """
    if rules.tie is TiePolicy.SPLIT:
        return tied
    if rules.tie is TiePolicy.LOWEST_TILE:
        smallest = {seat: mask_lowest_pips(hands[seat], rules.double_blank) for seat in tied}
        best = min(smallest.values())
        holders = tuple(seat for seat in tied if smallest[seat] == best)
        return holders if len(holders) == 1 else ()
    return ()


def game_winner(scores: Sequence[int], target: int | None) -> int | None:
    """Returns the seat that wins the game at ``target``, if any (an exact tie waits)."""
    if target is None:
        return None
    reached = [s for s in scores if s >= target]
    if not reached:
        return None
    top = max(reached)
    leaders = [seat for seat, s in enumerate(scores) if s == top]
    return leaders[0] if len(leaders) == 1 else None
