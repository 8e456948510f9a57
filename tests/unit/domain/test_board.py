"""The board: each tile laid where its play put it, turned as it lies on the table."""

from __future__ import annotations

from referee.domain.board import Board, board_for, laid
from referee.domain.explain import explain
from referee.domain.rules import DrawRule, Layout, Rules, SpinnerArms
from referee.domain.state import GameState
from tests.notation import action, deal, raw

NO_DRAW = Rules.of(draw=DrawRule.NONE)


def follow(game: GameState, *lines: str) -> Board:
    """Lays the tiles of the actions on a board, as ``referee explain`` does."""
    assert game.round is not None
    board = board_for(game.round.layout)
    for line in lines:
        event = action(game, line)
        before = game.round
        game, _ = explain(game, event)
        assert game.round is not None
        assert game.round is not before, f"{line} was rejected"
        words = line.split()
        place = words[-1] if len(words) > 3 else None
        board = laid(board, before.layout, game.round.layout, raw(words[2]), place)
    return board


def test_a_line_grows_both_ways_each_tile_turned_to_its_neighbour() -> None:
    game = deal("ann: 3-5 2-3 0-0 | bob: 5-6 4-4", NO_DRAW)

    board = follow(game, "ann plays 3-5", "bob plays 6-5 right", "ann plays 2-3 left")

    assert board == Board(line=((2, 3), (3, 5), (5, 6)))


def test_the_spinner_is_marked_and_keeps_its_place_as_the_line_grows_left() -> None:
    rules = Rules.of(layout=Layout.SPINNER, draw=DrawRule.NONE, spinner_arms=SpinnerArms.AT_ONCE)
    game = deal("ann: 1-5 2-1 0-0 | bob: 5-5 5-6 3-3", rules)

    board = follow(
        game,
        "ann plays 1-5",
        "bob plays 5-5 right",
        "ann plays 2-1 left",
        "bob plays 5-6 up",
    )

    assert board.line == ((2, 1), (1, 5), (5, 5))
    assert board.spinner == 2
    assert board.up == ((5, 6),)
    assert board.down == ()


def test_each_train_grows_from_the_engine() -> None:
    rules = Rules.of(layout=Layout.TRAINS, max_pip=12, draw=DrawRule.NONE)
    game = deal("ann: 12-3 3-7 | bob: 1-12 0-0 | engine 12", rules)

    board = follow(game, "ann plays 3-12 on ann", "bob plays 1-12 on mexican")

    assert board.engine == 12
    assert board.trains == (((12, 3),), (), ((12, 1),))
