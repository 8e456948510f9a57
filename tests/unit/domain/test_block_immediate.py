"""The blocked game declared at once, and the domino that wins over a block (RULES.md 4)."""

from __future__ import annotations

import pytest

from referee.domain.rules import BlockConfirmation, DrawRule, PointsPolicy, Rules
from referee.domain.verdicts import BlockDeclared, RoundEnd, RoundScored
from tests.notation import deal, draw, kinds, only, pass_, play, rnd, steps, table

IMMEDIATE = Rules(block_confirmation=BlockConfirmation.IMMEDIATE)


def test_the_play_that_closes_the_layout_with_an_empty_boneyard_declares_the_block() -> None:
    game = table("ann: 1-1 5-6 | bob: 2-4 | cid: 0-5 | left 5 right 3", rules=IMMEDIATE)

    after, verdicts = play(game, "ann", "5-6", "left")

    assert kinds(verdicts) == ["BlockDeclared", "RoundScored"]
    assert verdicts[0] == BlockDeclared(
        proposer="ann",
        confirmed_by=(),
        open_ends={"left": 6, "right": 3},
        pip_counts={"ann": 2, "bob": 6, "cid": 5},
    )
    scored = only(verdicts, RoundScored)
    assert scored.reason is RoundEnd.BLOCKED
    assert scored.winners == ("ann",)
    assert scored.awards == {"ann": 11, "bob": 0, "cid": 0}
    assert rnd(after).ended is True


def test_the_proposer_is_the_player_who_closed_the_layout_even_if_someone_else_wins() -> None:
    game = table(
        "ann: 1-1 | bob: 6-6 5-1 | cid: 5-5 0-1 | left 5 right 4 | turn bob", rules=IMMEDIATE
    )

    after, verdicts = steps(game, "bob plays 5-1 left", "cid plays 1-0 left")

    assert verdicts[0] == ()
    declared = only(verdicts[1], BlockDeclared)
    assert declared.proposer == "cid"
    assert declared.open_ends == {"left": 0, "right": 4}
    assert only(verdicts[1], RoundScored).winners == ("ann",)
    assert only(verdicts[1], RoundScored).awards == {"ann": 22, "bob": 0, "cid": 0}
    assert rnd(after).ended is True


def test_a_play_that_closes_the_layout_with_tiles_left_in_the_boneyard_declares_nothing() -> None:
    game = table(
        "ann: 1-1 5-6 | bob: 2-4 | cid: 0-5 | boneyard: 0-0 | left 5 right 3", rules=IMMEDIATE
    )

    after, verdicts = play(game, "ann", "5-6", "left")

    assert verdicts == ()
    assert rnd(after).ended is False


def test_a_play_after_which_someone_can_still_play_declares_nothing() -> None:
    game = table("ann: 1-1 5-6 | bob: 2-6 | cid: 0-5 | left 5 right 3", rules=IMMEDIATE)

    after, verdicts = play(game, "ann", "5-6", "left")

    assert verdicts == ()
    assert rnd(after).ended is False


def test_a_draw_that_empties_the_boneyard_leaving_nobody_able_to_play_declares_the_block() -> None:
    game = table("ann: 5-5 | bob: 4-4 | boneyard: 3-3 | left 0 right 1", rules=IMMEDIATE)

    after, verdicts = draw(game, "ann", "3-3")

    assert kinds(verdicts) == ["BlockDeclared", "RoundScored"]
    assert verdicts[0] == BlockDeclared(
        proposer="ann",
        confirmed_by=(),
        open_ends={"left": 0, "right": 1},
        pip_counts={"ann": 16, "bob": 8},
    )
    assert only(verdicts, RoundScored).awards == {"ann": 0, "bob": 16}
    assert rnd(after).ended is True


def test_a_draw_that_empties_the_boneyard_while_someone_can_play_declares_nothing() -> None:
    game = table("ann: 5-5 | bob: 4-1 | boneyard: 3-3 | left 0 right 1", rules=IMMEDIATE)

    after, verdicts = draw(game, "ann", "3-3")

    assert verdicts == ()
    assert rnd(after).ended is False


def test_a_draw_of_the_one_playable_tile_declares_nothing() -> None:
    game = table("ann: 5-5 | bob: 4-4 | boneyard: 1-3 | left 0 right 1", rules=IMMEDIATE)

    after, verdicts = draw(game, "ann", "1-3")

    assert verdicts == ()
    assert rnd(after).ended is False


def test_the_immediate_block_of_the_golden_log_pays_others_minus_own() -> None:
    rules = Rules(
        draw=DrawRule.NONE,
        block_confirmation=BlockConfirmation.IMMEDIATE,
        block_points=PointsPolicy.OTHERS_MINUS_OWN,
    )
    game = deal(
        "ann: 5-5 1-3 | bob: 1-5 6-6 2-2 | cid: 0-1 3-4 4-6",
        rules=rules,
    )

    _, produced = steps(game, "ann plays 5-5", "bob plays 5-1 right", "cid plays 1-0 right")

    assert produced[:2] == [(), ()]
    declared, scored = produced[2]
    assert declared == BlockDeclared(
        proposer="cid",
        confirmed_by=(),
        open_ends={"left": 5, "right": 0},
        pip_counts={"ann": 4, "bob": 16, "cid": 17},
    )
    assert scored == RoundScored(
        reason=RoundEnd.BLOCKED,
        winners=("ann",),
        pip_counts={"ann": 4, "bob": 16, "cid": 17},
        awards={"ann": 29, "bob": 0, "cid": 0},
        cumulative={"ann": 29, "bob": 0, "cid": 0},
        tie=False,
    )


@pytest.mark.parametrize("mode", list(BlockConfirmation))
def test_a_play_that_empties_the_hand_is_a_domino_even_if_it_closes_the_layout(
    mode: BlockConfirmation,
) -> None:
    game = table(
        "ann: 5-6 | bob: 2-4 | cid: 0-5 1-1 | left 5 right 3",
        rules=Rules(block_confirmation=mode),
    )

    after, verdicts = play(game, "ann", "5-6", "left")

    assert kinds(verdicts) == ["RoundScored"]
    scored = only(verdicts, RoundScored)
    assert scored.reason is RoundEnd.DOMINO
    assert scored.winners == ("ann",)
    assert scored.awards == {"ann": 13, "bob": 0, "cid": 0}
    assert rnd(after).ended is True


def test_a_play_that_empties_the_hand_during_a_confirmation_chain_is_a_domino() -> None:
    game = table("ann: 3-0 | bob: 2-4 | cid: 0-5 1-1 | left 5 right 3 | chain bob cid")

    _, verdicts = play(game, "ann", "3-0", "right")

    assert kinds(verdicts) == ["RoundScored"]
    assert only(verdicts, RoundScored).reason is RoundEnd.DOMINO


def test_under_immediate_a_legitimate_pass_alone_never_declares() -> None:
    game = table("ann: 5-5 | bob: 4-1 | cid: 6-6 | left 0 right 1", rules=IMMEDIATE)

    after, verdicts = pass_(game, "ann")

    assert verdicts == ()
    assert rnd(after).ended is False
