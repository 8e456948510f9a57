"""The blocked game confirmed by a full round of legitimate passes (RULES.md 4, full_round)."""

from __future__ import annotations

import pytest

from referee.domain.errors import InvalidInput, RejectionReason
from referee.domain.fouls import FoulKind
from referee.domain.rules import BlockConfirmation, DrawRule, Rules
from referee.domain.verdicts import BlockDeclared, RoundEnd, RoundScored
from tests.notation import (
    deal,
    fouls,
    kinds,
    only,
    pass_,
    play,
    rnd,
    steps,
    table,
)

CLOSED = "ann: 1-1 | bob: 2-4 | cid: 0-5 5-5 | left 6 right 3"
"""Nobody holds a 6 or a 3 and the boneyard is empty: the round is blocked."""


def test_a_legitimate_pass_with_an_empty_boneyard_proposes_but_does_not_declare() -> None:
    game = table(CLOSED)

    after, verdicts = pass_(game, "ann")

    assert verdicts == ()
    assert rnd(after).chain == (0,)
    assert rnd(after).ended is False


def test_one_pass_short_of_a_full_round_declares_nothing() -> None:
    game = table(CLOSED)

    after, produced = steps(game, "ann passes", "bob passes")

    assert produced == [(), ()]
    assert rnd(after).ended is False


def test_a_full_round_of_legitimate_passes_declares_the_block_proposer_first() -> None:
    game = table(CLOSED)

    after, produced = steps(game, "ann passes", "bob passes", "cid passes")

    verdicts = produced[-1]
    assert kinds(verdicts) == ["BlockDeclared", "RoundScored"]
    assert verdicts[0] == BlockDeclared(
        proposer="ann",
        confirmed_by=("ann", "bob", "cid"),
        open_ends={"left": 6, "right": 3},
        pip_counts={"ann": 2, "bob": 6, "cid": 15},
    )
    scored = only(verdicts, RoundScored)
    assert scored.reason is RoundEnd.BLOCKED
    assert scored.winners == ("ann",)
    assert scored.awards == {"ann": 21, "bob": 0, "cid": 0}
    assert rnd(after).ended is True


def test_the_proposer_is_whoever_passed_first_not_the_first_seat() -> None:
    game = table(CLOSED + " | turn bob")

    _, produced = steps(game, "bob passes", "cid passes", "ann passes")

    declared = only(produced[-1], BlockDeclared)
    assert declared.proposer == "bob"
    assert declared.confirmed_by == ("bob", "cid", "ann")


def test_two_players_block_after_two_legitimate_passes() -> None:
    game = table("ann: 1-1 | bob: 2-2 0-1 | left 6 right 3")

    _, produced = steps(game, "ann passes", "bob passes")

    declared = only(produced[-1], BlockDeclared)
    assert declared.confirmed_by == ("ann", "bob")
    assert only(produced[-1], RoundScored).awards == {"ann": 5, "bob": 0}


def test_a_play_that_closes_the_layout_declares_nothing_under_full_round() -> None:
    game = table("ann: 1-1 5-6 | bob: 2-4 | cid: 0-5 | left 5 right 3")

    after, verdicts = play(game, "ann", "5-6", "left")

    assert verdicts == ()
    assert rnd(after).is_blocked() is True
    assert rnd(after).ended is False


def test_a_play_breaks_the_chain_and_the_next_legitimate_pass_starts_a_new_one() -> None:
    game = table("ann: 5-5 | bob: 1-3 6-6 | cid: 4-4 | left 0 right 1")

    after, produced = steps(
        game,
        "ann passes",
        "bob plays 1-3 right",
        "cid passes",
        "ann passes",
    )
    assert produced == [(), (), (), ()]
    assert rnd(after).ended is False

    _, verdicts = pass_(after, "bob")

    declared = only(verdicts, BlockDeclared)
    assert declared.proposer == "cid"
    assert declared.confirmed_by == ("cid", "ann", "bob")
    assert declared.open_ends == {"left": 0, "right": 3}


def test_a_fouled_pass_breaks_the_chain() -> None:
    game = table("ann: 5-5 | bob: 1-3 6-6 | cid: 4-4 | left 0 right 1")

    after, produced = steps(game, "ann passes", "bob passes", "cid passes")

    assert fouls(produced[1]) == [("bob", FoulKind.FALSE_PASS, True)]
    assert produced[2] == ()
    assert rnd(after).chain == (2,)
    assert rnd(after).ended is False


def test_after_a_fouled_pass_a_new_full_round_is_needed() -> None:
    game = table("ann: 5-5 | bob: 1-3 6-6 | cid: 4-4 | left 0 right 1")

    after, produced = steps(
        game,
        "ann passes",
        "bob passes",
        "cid passes",
        "ann passes",
        "bob plays 1-3 right",
        "cid passes",
        "ann passes",
        "bob passes",
    )

    assert kinds(produced[-1]) == ["BlockDeclared", "RoundScored"]
    declared = only(produced[-1], BlockDeclared)
    assert declared.confirmed_by == ("cid", "ann", "bob")
    assert all(v == () for v in produced[2:-1])
    assert rnd(after).ended is True


@pytest.mark.parametrize(
    "interruption",
    [
        "cid plays 4-4 left",  # out_of_turn
        "bob plays 5-5 left",  # tile_not_in_hand
        "bob plays 6-6 left",  # tile_does_not_match
        "bob plays 6-6",  # end_missing
        "bob draws 3-3",  # boneyard_empty
        "ann passes",  # out_of_turn
    ],
)
def test_a_rejected_action_between_passes_does_not_break_the_chain(interruption: str) -> None:
    game = table("ann: 5-5 | bob: 6-6 | cid: 4-4 | left 0 right 1")

    _, produced = steps(game, "ann passes", interruption, "bob passes", "cid passes")

    assert [f[2] for f in fouls(produced[1])] == [False]
    declared = only(produced[-1], BlockDeclared)
    assert declared.confirmed_by == ("ann", "bob", "cid")


def test_a_rejected_draw_under_draw_none_does_not_break_the_chain() -> None:
    game = table("ann: 5-5 | bob: 6-6 | cid: 4-4 | left 0 right 1", rules=Rules(draw=DrawRule.NONE))

    _, produced = steps(game, "ann passes", "bob draws 2-2", "bob passes", "cid passes")

    assert fouls(produced[1]) == [("bob", FoulKind.DRAW_NOT_ALLOWED, False)]
    assert only(produced[-1], BlockDeclared).proposer == "ann"


def test_a_legitimate_pass_with_tiles_left_in_the_boneyard_starts_no_chain() -> None:
    game = table(
        "ann: 5-5 | bob: 4-4 | cid: 6-6 | boneyard: 2-2 3-3 | left 0 right 1",
        rules=Rules(draw=DrawRule.ONCE),
    )

    after, produced = steps(game, "ann draws 2-2", "ann passes")

    assert produced == [(), ()]
    assert rnd(after).chain == ()


def test_the_chain_starts_with_the_first_legitimate_pass_once_the_boneyard_is_empty() -> None:
    game = table(
        "ann: 5-5 | bob: 4-4 | cid: 6-6 | boneyard: 2-2 3-3 | left 0 right 1",
        rules=Rules(draw=DrawRule.ONCE),
    )

    after, produced = steps(
        game,
        "ann draws 2-2",
        "ann passes",
        "bob draws 3-3",
        "bob passes",
        "cid passes",
    )
    assert all(v == () for v in produced)

    _, verdicts = pass_(after, "ann")

    declared = only(verdicts, BlockDeclared)
    assert declared.proposer == "bob"
    assert declared.confirmed_by == ("bob", "cid", "ann")
    assert declared.pip_counts == {"ann": 14, "bob": 14, "cid": 12}


def test_any_action_after_the_block_is_declared_is_round_over() -> None:
    game = table(CLOSED)
    game, _ = steps(game, "ann passes", "bob passes", "cid passes")

    with pytest.raises(InvalidInput) as raised:
        pass_(game, "ann")

    assert raised.value.reason is RejectionReason.ROUND_OVER


def test_block_declared_reports_the_pip_count_of_every_player_in_seating_order() -> None:
    game = table("cid: 0-5 | ann: 1-1 | bob: 2-4 | left 6 right 3")

    _, verdicts = steps(game, "cid passes", "ann passes", "bob passes")

    declared = only(verdicts[-1], BlockDeclared)
    assert list(declared.pip_counts.items()) == [("cid", 5), ("ann", 2), ("bob", 6)]


def test_the_double_twelve_block_of_the_source_article_is_declared_and_scored() -> None:
    rules = Rules(max_pip=12, draw=DrawRule.NONE)
    game = deal(
        "ann: 3-4 7-7 5-10 | bob: 4-9 2-8 12-12 | cid: 3-7 8-0 1-2 | dee: 2-9 6-6 1-3",
        rules=rules,
    )

    game, produced = steps(
        game,
        "ann plays 3-4",
        "bob plays 4-9 right",
        "cid plays 3-7 left",
        "dee plays 9-2 right",
        "ann plays 7-7 left",
        "bob plays 2-8 right",
        "cid plays 8-0 right",
        "dee passes",
        "ann passes",
        "bob passes",
        "cid passes",
    )

    assert all(v == () for v in produced[:-1])
    declared, scored = produced[-1]
    assert declared == BlockDeclared(
        proposer="dee",
        confirmed_by=("dee", "ann", "bob", "cid"),
        open_ends={"left": 7, "right": 0},
        pip_counts={"ann": 15, "bob": 24, "cid": 3, "dee": 16},
    )
    assert scored == RoundScored(
        reason=RoundEnd.BLOCKED,
        winners=("cid",),
        pip_counts={"ann": 15, "bob": 24, "cid": 3, "dee": 16},
        awards={"ann": 0, "bob": 0, "cid": 55, "dee": 0},
        cumulative={"ann": 0, "bob": 0, "cid": 55, "dee": 0},
        tie=False,
    )


def test_full_round_is_the_default_confirmation() -> None:
    assert Rules().block_confirmation is BlockConfirmation.FULL_ROUND
