"""Scoring a round and ending the game (RULES.md section 5).

Award scoring works on teams (numbered as in ``teams.py``): without partnerships every player
is a team of one and the formulas are exactly edition 1's. Penalty scoring is per player.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from referee.domain.rules import BlockWinner, PointsPolicy, Rounding, Rules, Scoring, TiePolicy
from referee.domain.teams import Teams
from referee.domain.tiles import TileMask, mask_lowest_pips


@dataclass(frozen=True, slots=True)
class Award:
    """Who won a round (team numbers), what each team receives, and whether teams tied."""

    winners: tuple[int, ...]
    awards: tuple[int, ...]
    tie: bool


def base_award(policy: PointsPolicy, others: int, own: int, winners_total: int) -> int:
    """Returns a winning team's base award: U, U - T(w) or U + the winners' T, never below 0."""
    if policy is PointsPolicy.OTHERS:
        base = others
    elif policy is PointsPolicy.OTHERS_MINUS_OWN:
        base = others - own
    else:
        base = others + winners_total
    return max(base, 0)


def rounded(award: int, rounding: Rounding) -> int:
    """Applies the rounding option to one award (nearest 5: 1, 2 go down, 3, 4 go up)."""
    if rounding is Rounding.NEAREST_5:
        return (award + 2) // 5 * 5
    return award


def pay(
    winners: tuple[int, ...], totals: Sequence[int], policy: PointsPolicy, rounding: Rounding
) -> tuple[int, ...]:
    """Returns each team's award when the teams ``winners`` share the round under ``policy``.

    ``totals`` are the teams' pip counts T; with several winners each receives the floor of
    its base award divided by their number, rounded last.
    """
    if not winners:
        return (0,) * len(totals)
    won = set(winners)
    others = sum(t for team, t in enumerate(totals) if team not in won)
    winners_total = sum(totals[w] for w in winners)
    k = len(winners)
    return tuple(
        rounded(base_award(policy, others, totals[team], winners_total) // k, rounding)
        if team in won
        else 0
        for team in range(len(totals))
    )


def score_domino(team: int, totals: Sequence[int], rules: Rules) -> Award:
    """Scores a round won by a member of ``team`` playing their last tile."""
    return Award((team,), pay((team,), totals, rules.domino_points, rules.rounding), tie=False)


def score_block(
    hands: Sequence[TileMask], counts: Sequence[int], teams: Teams, rules: Rules
) -> Award:
    """Scores a blocked round: ``block_winner`` picks the lowest team(s), ``tie`` decides
    among several. ``hands`` are the seats' tile masks, ``counts`` their pip counts."""
    totals = teams.totals(counts)
    if rules.block_winner is BlockWinner.LOWEST_PLAYER:
        lowest = min(counts)
        qualify = {teams.of_seat[seat] for seat, c in enumerate(counts) if c == lowest}
        tied = tuple(sorted(qualify))
    else:
        lowest = min(totals)
        tied = tuple(team for team, t in enumerate(totals) if t == lowest)
    tie = len(tied) > 1
    winners = tied if not tie else break_tie(tied, hands, teams, rules)
    return Award(winners, pay(winners, totals, rules.block_points, rules.rounding), tie)


def break_tie(
    tied: tuple[int, ...], hands: Sequence[TileMask], teams: Teams, rules: Rules
) -> tuple[int, ...]:
    """Returns the winners among tied teams under the tie policy (``()``: nobody scores)."""
    if rules.tie is TiePolicy.SPLIT:
        return tied
    if rules.tie is TiePolicy.LOWEST_TILE:
        smallest = {}
        for team in tied:
            held = 0
            for seat in teams.members(team):
                held |= hands[seat]
            smallest[team] = mask_lowest_pips(held, rules.double_blank)
        best = min(smallest.values())
        holders = tuple(team for team in tied if smallest[team] == best)
        return holders if len(holders) == 1 else ()
    return ()


def score_penalty(domino: int | None, counts: Sequence[int]) -> Award:
    """Scores a round under penalty scoring: each player adds their own pip count.

    The winners are the player who went out (seat ``domino``) or, in a blocked round, every
    player with the lowest count; they receive nothing extra.
    """
    if domino is not None:
        winners: tuple[int, ...] = (domino,)
    else:
        lowest = min(counts)
        winners = tuple(seat for seat, c in enumerate(counts) if c == lowest)
    return Award(winners, tuple(counts), tie=len(winners) > 1)


def game_winners(scores: Sequence[int], rules: Rules, round_number: int) -> tuple[int, ...]:
    """Returns the teams that win the game once round ``round_number`` is scored (``()``: the
    game goes on). Under penalty scoring the lowest score wins, and ties are joint winners."""
    last = rules.rounds is not None and round_number >= rules.rounds
    target = rules.target_score
    if rules.scoring is Scoring.PENALTY:
        if not last and (target is None or max(scores) < target):
            return ()
        low = min(scores)
        return tuple(team for team, s in enumerate(scores) if s == low)
    if last:
        top = max(scores)
        return tuple(team for team, s in enumerate(scores) if s == top)
    if target is None:
        return ()
    reached = [s for s in scores if s >= target]
    if not reached:
        return ()
    top = max(reached)
    leaders = tuple(team for team, s in enumerate(scores) if s == top)
    return leaders if len(leaders) == 1 else ()  # an exact tie for the lead waits
