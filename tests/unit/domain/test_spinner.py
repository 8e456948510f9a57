"""The spinner (RULES.md section 8.1): the first double spins and opens up and down."""

from __future__ import annotations

from referee.domain.fouls import FoulKind
from referee.domain.rules import BlockConfirmation, DrawRule, Layout, Rules, SpinnerArms
from referee.domain.state import GameState
from referee.domain.verdicts import BlockDeclared, FoulRecorded
from tests.notation import deal, fouls, only, rnd, spinner_of, steps

SPINNER = Rules.of(layout=Layout.SPINNER, draw=DrawRule.NONE)
AT_ONCE = Rules.of(layout=Layout.SPINNER, draw=DrawRule.NONE, spinner_arms=SpinnerArms.AT_ONCE)

LEAD_SPINNER = "ann: 6-6 6-1 0-0 | bob: 6-3 6-5 1-1 | cid: 6-2 4-4 2-2"
"""ann leads the 6-6, which spins; bob and cid hold tiles for its sides and arms."""


def _rejected(game: GameState, line: str, player: str, kind: FoulKind) -> None:
    after, produced = steps(game, line)
    assert produced == [(FoulRecorded(player, kind, applied=False, penalty=0),)]
    assert after == game


def test_a_double_led_is_the_spinner_and_its_arms_exist_showing_its_value() -> None:
    game = deal(LEAD_SPINNER, SPINNER)

    after, _ = steps(game, "ann plays 6-6")

    assert spinner_of(after).open_ends() == {"left": 6, "right": 6, "up": 6, "down": 6}
    assert not spinner_of(after).arms_open


def test_the_arms_open_only_once_both_sides_of_the_spinner_are_covered() -> None:
    game = deal(LEAD_SPINNER, SPINNER)
    led, _ = steps(game, "ann plays 6-6")

    _rejected(led, "bob plays 6-5 up", "bob", FoulKind.END_NOT_AVAILABLE)
    one_side, _ = steps(led, "bob plays 6-3 right")
    _rejected(one_side, "cid plays 6-2 down", "cid", FoulKind.END_NOT_AVAILABLE)
    both, produced = steps(one_side, "cid plays 6-2 left", "ann plays 6-1 up")

    assert produced == [(), ()]
    assert spinner_of(both).open_ends() == {"left": 2, "right": 3, "up": 1, "down": 6}


def test_under_at_once_the_arms_open_as_soon_as_the_spinner_is_down() -> None:
    game = deal("ann: 5-5 1-1 | bob: 5-0 2-2", AT_ONCE)

    after, produced = steps(game, "ann plays 5-5", "bob plays 5-0 up")

    assert produced == [(), ()]
    assert spinner_of(after).open_ends() == {"left": 5, "right": 5, "up": 0, "down": 5}


def test_the_first_double_played_on_the_line_spins_and_later_doubles_do_not() -> None:
    game = deal("ann: 3-5 3-3 0-1 | bob: 5-5 5-6 1-2", SPINNER)

    after, _ = steps(game, "ann plays 3-5", "bob plays 5-5 right")

    assert spinner_of(after).open_ends() == {"left": 3, "right": 5, "up": 5, "down": 5}
    later, _ = steps(after, "ann plays 3-3 left")
    assert spinner_of(later).spinner == 5  # the 3-3 is an ordinary tile
    assert spinner_of(later).open_ends() == {"left": 3, "right": 5, "up": 5, "down": 5}


def test_before_the_spinner_is_down_up_and_down_do_not_exist() -> None:
    game = deal("ann: 3-5 0-1 | bob: 5-6 1-2", SPINNER)
    led, _ = steps(game, "ann plays 3-5")

    _rejected(led, "bob plays 5-6 up", "bob", FoulKind.END_NOT_AVAILABLE)
    assert spinner_of(led).open_ends() == {"left": 3, "right": 5}


def test_a_tile_on_an_arm_must_show_its_value_and_the_arm_then_shows_its_other_side() -> None:
    game = deal("ann: 5-5 1-1 | bob: 4-0 5-2 2-2", AT_ONCE)
    led, _ = steps(game, "ann plays 5-5")

    _rejected(led, "bob plays 4-0 down", "bob", FoulKind.TILE_DOES_NOT_MATCH)
    after, _ = steps(led, "bob plays 2-5 down")
    assert spinner_of(after).down == 2


def test_an_end_named_with_the_first_tile_is_ignored_but_a_train_is_not() -> None:
    game = deal("ann: 3-5 0-1 | bob: 5-6 1-2", SPINNER)

    after, produced = steps(game, "ann plays 3-5 up")
    assert produced == [()]
    assert spinner_of(after).open_ends() == {"left": 3, "right": 5}
    _rejected(game, "ann plays 3-5 on ann", "ann", FoulKind.END_NOT_AVAILABLE)


def test_once_the_arms_are_open_a_tile_for_an_arm_alone_can_be_played() -> None:
    # While an arm is closed the spinner still shows its value on an uncovered side, so the
    # arms matter to "can play" only once open: here ann's 6-1 fits nothing but up and down.
    game = deal(LEAD_SPINNER, SPINNER)
    after, _ = steps(game, "ann plays 6-6", "bob plays 6-3 right", "cid plays 6-2 left")

    assert spinner_of(after).open_ends() == {"left": 2, "right": 3, "up": 6, "down": 6}
    assert rnd(after).can_play(0) is True
    _, verdicts = steps(after, "ann passes")
    assert fouls(verdicts[0]) == [("ann", FoulKind.FALSE_PASS, True)]


def test_a_blocked_spinner_announces_its_arms_among_the_open_ends() -> None:
    rules = Rules.of(
        layout=Layout.SPINNER,
        draw=DrawRule.NONE,
        spinner_arms=SpinnerArms.AT_ONCE,
        block_confirmation=BlockConfirmation.IMMEDIATE,
    )
    game = deal("ann: 5-5 1-1 | bob: 5-0 2-2 | cid: 3-3 4-4", rules)

    _, produced = steps(game, "ann plays 5-5", "bob plays 5-0 up")

    assert produced[0] == ()  # bob could still play on 5
    declared = only(produced[1], BlockDeclared)
    assert declared.open_ends == {"left": 5, "right": 5, "up": 0, "down": 5}
    assert declared.proposer == "bob"


def test_up_on_a_plain_line_is_end_not_available() -> None:
    game = deal("ann: 6-6 0-0 | bob: 6-3 1-1", Rules(draw=DrawRule.NONE))
    led, _ = steps(game, "ann plays 6-6")

    _, verdicts = steps(led, "bob plays 6-3 up")
    assert fouls(verdicts[0]) == [("bob", FoulKind.END_NOT_AVAILABLE, False)]
