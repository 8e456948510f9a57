"""Where a play goes (RULES.md section 3): places that do not exist, and the fouls' order."""

from __future__ import annotations

import pytest

from referee.domain.fouls import FoulKind
from referee.domain.rules import DrawRule, Rules
from referee.domain.verdicts import FoulRecorded
from tests.notation import play, table

LINE = "ann: 3-4 5-5 | bob: 1-2 | left 3 right 6"


def test_the_fouls_are_listed_in_the_precedence_of_the_table() -> None:
    assert [kind.value for kind in FoulKind] == [
        "out_of_turn",
        "tile_not_in_hand",
        "end_not_available",
        "double_unsatisfied",
        "train_closed",
        "tile_does_not_match",
        "end_missing",
        "draw_not_allowed",
        "boneyard_empty",
        "tile_not_in_boneyard",
        "draw_limit",
        "draw_while_able",
        "false_pass",
        "pass_before_drawing",
    ]
    applied = {k for k in FoulKind if not k.is_rejected}
    assert applied == {FoulKind.DRAW_WHILE_ABLE, FoulKind.FALSE_PASS, FoulKind.PASS_BEFORE_DRAWING}


@pytest.mark.parametrize(
    ("tile", "end", "train", "kind"),
    [
        ("3-4", None, "ann", FoulKind.END_NOT_AVAILABLE),  # a train, on a line
        ("3-4", "left", "ann", FoulKind.END_NOT_AVAILABLE),  # both named at once
        ("3-4", "up", None, FoulKind.END_NOT_AVAILABLE),  # a spinner's end, on a line
        ("5-5", "up", None, FoulKind.END_NOT_AVAILABLE),  # ... before tile_does_not_match
        ("5-5", "left", None, FoulKind.TILE_DOES_NOT_MATCH),
        ("3-4", None, None, FoulKind.END_MISSING),
        ("6-6", None, "ann", FoulKind.TILE_NOT_IN_HAND),  # before end_not_available
    ],
)
def test_a_play_on_a_line_names_left_or_right_and_nothing_else(
    tile: str, end: str | None, train: str | None, kind: FoulKind
) -> None:
    game = table(LINE, rules=Rules(draw=DrawRule.NONE))

    after, verdicts = play(game, "ann", tile, end, train=train)

    assert verdicts == (FoulRecorded("ann", kind, applied=False, penalty=0),)
    assert after == game


def test_a_train_named_with_the_first_tile_of_a_line_is_end_not_available() -> None:
    game = table("ann: 3-4 | bob: 1-2", rules=Rules(draw=DrawRule.NONE))

    _, verdicts = play(game, "ann", "3-4", train="ann")

    assert verdicts == (FoulRecorded("ann", FoulKind.END_NOT_AVAILABLE, applied=False, penalty=0),)
