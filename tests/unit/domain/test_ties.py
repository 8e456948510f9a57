"""A shared lowest pip count in a blocked round: no_winner, split, lowest_tile (RULES.md 5)."""

from __future__ import annotations

import pytest

from referee.domain.rules import PointsPolicy, Rules, TiePolicy
from referee.domain.verdicts import RoundEnd, RoundScored
from tests.notation import everyone_passes, only, table

TIED = "ann: 1-3 | bob: 0-4 | cid: 4-5 | left 6 right 6"
"""ann and bob share the lowest count, 4; cid holds 9. Each tied player's smallest tile is 4."""


def _scored(spec: str, rules: Rules) -> RoundScored:
    _, verdicts = everyone_passes(table(spec, rules=rules))
    return only(verdicts, RoundScored)


def test_by_default_nobody_scores_a_tied_block() -> None:
    scored = _scored(TIED, Rules())

    assert scored == RoundScored(
        reason=RoundEnd.BLOCKED,
        winners=(),
        pip_counts={"ann": 4, "bob": 4, "cid": 9},
        awards={"ann": 0, "bob": 0, "cid": 0},
        cumulative={"ann": 0, "bob": 0, "cid": 0},
        tie=True,
    )


@pytest.mark.parametrize(
    ("policy", "each"),
    [
        (PointsPolicy.OTHERS, 4),  # floor(9 / 2)
        (PointsPolicy.OTHERS_MINUS_OWN, 2),  # floor((9 - 4) / 2)
        (PointsPolicy.ALL, 8),  # floor((9 + 2*4) / 2)
    ],
)
def test_a_split_pays_each_tied_player_the_floor_of_the_base_over_their_number(
    policy: PointsPolicy, each: int
) -> None:
    scored = _scored(TIED, Rules(tie=TiePolicy.SPLIT, block_points=policy))

    assert scored.winners == ("ann", "bob")
    assert scored.awards == {"ann": each, "bob": each, "cid": 0}
    assert scored.cumulative == {"ann": each, "bob": each, "cid": 0}
    assert scored.tie is True


def test_a_three_way_split_of_20_gives_6_each() -> None:
    spec = "ann: 0-1 2-2 | bob: 0-5 | cid: 0-2 0-3 | dee: 5-5 4-4 1-1 | left 6 right 6"

    scored = _scored(spec, Rules(tie=TiePolicy.SPLIT))

    assert scored.winners == ("ann", "bob", "cid")
    assert scored.awards == {"ann": 6, "bob": 6, "cid": 6, "dee": 0}


def test_under_lowest_tile_the_holder_of_the_smallest_tile_wins_alone_as_a_single_winner() -> None:
    spec = "ann: 1-3 | bob: 0-1 0-3 | cid: 4-5 | left 6 right 6"

    scored = _scored(spec, Rules(tie=TiePolicy.LOWEST_TILE))

    assert scored.winners == ("bob",)
    # Scored as a single winner: U counts the other tied player too, 4 + 9.
    assert scored.awards == {"ann": 0, "bob": 13, "cid": 0}
    assert scored.tie is True


def test_lowest_tile_among_three_tied_players_of_the_golden_log() -> None:
    spec = "ann: 0-1 2-2 | bob: 0-5 | cid: 0-2 0-3 | dee: 5-5 4-4 1-1 | left 6 right 6"

    scored = _scored(spec, Rules(tie=TiePolicy.LOWEST_TILE))

    assert scored.winners == ("ann",)
    assert scored.awards == {"ann": 30, "bob": 0, "cid": 0, "dee": 0}


def test_under_lowest_tile_a_winner_later_in_seating_order_still_wins() -> None:
    spec = "ann: 0-4 | bob: 1-3 | cid: 0-1 0-3 | left 6 right 6"

    scored = _scored(spec, Rules(tie=TiePolicy.LOWEST_TILE))

    assert scored.winners == ("cid",)
    assert scored.awards == {"ann": 0, "bob": 0, "cid": 8}


def test_under_lowest_tile_a_tie_on_the_smallest_tile_too_means_no_winner() -> None:
    scored = _scored(TIED, Rules(tie=TiePolicy.LOWEST_TILE))

    assert scored.winners == ()
    assert scored.awards == {"ann": 0, "bob": 0, "cid": 0}
    assert scored.tie is True


def test_under_lowest_tile_only_the_tied_players_tiles_are_compared() -> None:
    spec = "ann: 2-3 | bob: 1-4 | cid: 0-1 4-5 | left 6 right 6"

    scored = _scored(spec, Rules(tie=TiePolicy.LOWEST_TILE))

    assert scored.winners == ()


@pytest.mark.parametrize("policy", list(TiePolicy))
def test_a_single_lowest_count_is_no_tie_under_any_policy(policy: TiePolicy) -> None:
    scored = _scored("ann: 1-2 | bob: 0-4 | cid: 4-5 | left 6 right 6", Rules(tie=policy))

    assert scored.winners == ("ann",)
    assert scored.awards == {"ann": 13, "bob": 0, "cid": 0}
    assert scored.tie is False
