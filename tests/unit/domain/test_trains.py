"""Trains (RULES.md section 8.2): trains that open and close, pending doubles, the chain."""

from __future__ import annotations

import pytest

from referee.domain.errors import InvalidInput, RejectionReason
from referee.domain.fouls import FoulKind
from referee.domain.judge import judge
from referee.domain.rules import DoubleRule, DrawRule, EngineOrder, Layout, Rules
from referee.domain.state import GameState
from referee.domain.verdicts import BlockDeclared, FoulRecorded, RoundEnd, RoundScored
from tests.notation import (
    deal,
    dealt,
    fouls,
    kinds,
    next_round,
    only,
    open_trains,
    pass_,
    play,
    rnd,
    started,
    steps,
    table,
    trains_of,
    turn,
)

TRAINS = Rules.of(layout=Layout.TRAINS, max_pip=12, draw=DrawRule.NONE)
"""Double-twelve trains with no drawing: a player who cannot play passes at once."""

FOLLOW_UP = Rules.of(
    layout=Layout.TRAINS, max_pip=12, draw=DrawRule.NONE, double_rule=DoubleRule.FOLLOW_UP
)


def ends(game: GameState) -> dict[str, int]:
    return trains_of(game).open_ends()


def _rejected(game: GameState, line: str, player: str, kind: FoulKind) -> None:
    after, produced = steps(game, line)
    assert produced == [(FoulRecorded(player, kind, applied=False, penalty=0),)]
    assert after == game


# --- trains at the start, open and closed ------------------------------------------------------


def test_a_round_starts_with_every_train_showing_the_engine_and_only_the_mexican_open() -> None:
    game = deal("ann: 3-3 | bob: 12-4 | cid: 1-2 | engine 12 | leader bob", TRAINS)

    assert ends(game) == {"ann": 12, "bob": 12, "cid": 12, "mexican": 12}
    assert open_trains(game) == {"mexican"}
    assert turn(game) == "bob"


def test_a_tile_played_on_a_train_leaves_its_other_side_showing() -> None:
    game = deal("ann: 3-3 | bob: 12-4 4-6 | cid: 1-2 | engine 12 | leader bob", TRAINS)

    after, produced = steps(game, "bob plays 4-12 on mexican")

    assert produced == [()]
    assert ends(after)["mexican"] == 4
    assert turn(after) == "cid"


def test_a_play_on_another_players_closed_train_is_rejected_as_train_closed() -> None:
    game = deal("ann: 3-3 | bob: 12-4 | cid: 1-2 | engine 12 | leader bob", TRAINS)

    _rejected(game, "bob plays 12-4 on cid", "bob", FoulKind.TRAIN_CLOSED)


def test_train_closed_beats_tile_does_not_match() -> None:
    game = deal("ann: 3-3 | bob: 9-9 12-4 | cid: 1-2 | engine 12 | leader bob", TRAINS)

    _rejected(game, "bob plays 9-9 on cid", "bob", FoulKind.TRAIN_CLOSED)
    _rejected(game, "bob plays 9-9 on bob", "bob", FoulKind.TILE_DOES_NOT_MATCH)


def test_a_pass_opens_the_passers_train_and_another_player_may_then_play_on_it() -> None:
    game = deal("ann: 3-3 | bob: 12-4 0-1 | cid: 1-2 12-5 | engine 12", TRAINS)

    after, produced = steps(game, "ann passes", "bob plays 12-4 on ann")

    assert produced == [(), ()]
    assert open_trains(after) == {"ann", "mexican"}  # only the owner's play closes a train
    assert ends(after)["ann"] == 4


def test_the_owners_play_on_their_own_train_closes_it() -> None:
    game = table(
        "ann: 4-7 0-0 | bob: 1-1 | trains ann 4 bob 12 mexican 12 | open ann", rules=TRAINS
    )

    after, _ = play(game, "ann", "4-7", train="ann")

    assert open_trains(after) == {"mexican"}
    assert ends(after)["ann"] == 7


def test_a_player_may_always_play_on_their_own_train_and_the_mexican_train() -> None:
    game = table("ann: 4-7 3-9 | bob: 1-1 | trains ann 4 bob 3 mexican 9", rules=TRAINS)

    assert [(m.tile, m.train) for m in rnd(game).legal_plays(0)] == [
        ((3, 9), "mexican"),
        ((4, 7), "ann"),
    ]
    assert rnd(game).can_play(1) is False  # bob's 1-1 matches no train available to him


# --- places that do not exist -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("bob plays 12-4 left", FoulKind.END_NOT_AVAILABLE),  # an end, in trains
        ("bob plays 12-4 on dee", FoulKind.END_NOT_AVAILABLE),  # no such train
        ("bob plays 12-4", FoulKind.END_MISSING),  # no place: every play in trains needs one
    ],
)
def test_a_play_must_name_one_of_this_games_trains(line: str, kind: FoulKind) -> None:
    game = deal("ann: 3-3 | bob: 12-4 | cid: 1-2 | engine 12 | leader bob", TRAINS)

    _rejected(game, line, "bob", kind)


def test_naming_an_end_and_a_train_at_once_is_end_not_available() -> None:
    game = deal("ann: 3-3 | bob: 12-4 | cid: 1-2 | engine 12 | leader bob", TRAINS)

    after, verdicts = play(game, "bob", "12-4", "left", train="bob")

    assert fouls(verdicts) == [("bob", FoulKind.END_NOT_AVAILABLE, False)]
    assert after == game


def test_without_the_mexican_train_there_is_none_and_a_player_may_be_called_mexican() -> None:
    rules = Rules.of(layout=Layout.TRAINS, max_pip=12, draw=DrawRule.NONE, mexican_train=False)
    game = deal("ann: 3-3 | mexican: 12-4 0-1 | cid: 1-2 | engine 12 | leader mexican", rules)

    assert open_trains(game) == set()
    after, produced = steps(game, "mexican plays 12-4 on mexican")

    assert produced == [()]  # the player's own personal train
    assert ends(after) == {"ann": 12, "mexican": 4, "cid": 12}


def test_tile_not_in_hand_beats_end_not_available() -> None:
    game = deal("ann: 3-3 | bob: 12-4 | cid: 1-2 | engine 12 | leader bob", TRAINS)

    _rejected(game, "bob plays 3-3 left", "bob", FoulKind.TILE_NOT_IN_HAND)


# --- doubles ---------------------------------------------------------------------------------

SATISFIED_BY_NEXT = "ann: 12-5 5-5 0-0 | bob: 5-2 12-6 6-1 | cid: 12-7 3-4 | engine 12"
"""ann will play 5-5 on her train; only bob holds another 5 (5-2)."""

OPENING = ("ann plays 12-5 on ann", "bob plays 12-6 on bob", "cid plays 12-7 on cid")


def test_a_double_others_could_answer_is_pending_and_its_player_plays_again() -> None:
    game = deal(SATISFIED_BY_NEXT, TRAINS)

    after, produced = steps(game, *OPENING, "ann plays 5-5 on ann")

    assert produced[-1] == ()
    assert trains_of(after).double_pending
    assert turn(after) == "ann"


def test_a_pending_double_is_satisfied_by_its_own_player() -> None:
    game = deal("ann: 12-5 5-5 5-1 | bob: 5-2 12-6 | cid: 12-7 3-4 | engine 12", TRAINS)

    after, _ = steps(game, *OPENING, "ann plays 5-5 on ann", "ann plays 5-1 on ann")

    assert not trains_of(after).double_pending
    assert ends(after)["ann"] == 1
    assert turn(after) == "bob"


def test_a_pending_double_binds_the_next_player_who_satisfies_it() -> None:
    game = deal(SATISFIED_BY_NEXT, TRAINS)

    after, produced = steps(
        game, *OPENING, "ann plays 5-5 on ann", "ann passes", "bob plays 5-2 on ann"
    )

    assert produced[-2:] == [(), ()]  # ann cannot satisfy it: her pass is legitimate
    assert not trains_of(after).double_pending
    assert ends(after)["ann"] == 2
    assert turn(after) == "cid"


def test_while_a_double_is_pending_a_play_on_another_train_is_double_unsatisfied() -> None:
    game = deal(SATISFIED_BY_NEXT, TRAINS)
    bound, _ = steps(game, *OPENING, "ann plays 5-5 on ann", "ann passes")

    # bob's 6-1 would match his own train, but the double binds him to ann's.
    _rejected(bound, "bob plays 6-1 on bob", "bob", FoulKind.DOUBLE_UNSATISFIED)
    # double_unsatisfied comes before tile_does_not_match in the table.
    _rejected(bound, "bob plays 5-2 on mexican", "bob", FoulKind.DOUBLE_UNSATISFIED)


def test_end_not_available_beats_double_unsatisfied() -> None:
    game = deal(SATISFIED_BY_NEXT, TRAINS)
    bound, _ = steps(game, *OPENING, "ann plays 5-5 on ann", "ann passes")

    _rejected(bound, "bob plays 5-2 on dee", "bob", FoulKind.END_NOT_AVAILABLE)


OWN_DOUBLE_PENDING = "ann: 12-5 5-5 6-0 12-3 | bob: 5-2 12-6 6-1 | cid: 12-7 3-4 | engine 12"
"""After ``OPENING`` ann's train shows 5, bob's (closed) 6, cid's (closed) 7, the Mexican 12;
ann's 5-5 on her own train is then pending (bob's 5-2 answers it) and the turn stays with her.
Her 6-0 matches bob's train, her 12-3 the Mexican train."""


def test_double_unsatisfied_beats_train_closed() -> None:
    """RULES.md section 3 lists, in this order,

        | play | `trains`: a double is pending (§8.2) and the train named is not the one it is
        on | rejected | `double_unsatisfied` |
        | play | `trains`: the train named is another player's personal train and it is
        closed | rejected | `train_closed` |

    and decides "When several rows apply, the first in the table decides". Section 8.2: "Personal
    trains start each round closed; the Mexican train is always open. [...] A play by a train's
    owner on their own train closes it." and "Available trains for player P: if a double is
    pending, only the train it is on." So with her own double pending, ann naming bob's closed
    train is ``double_unsatisfied``, not ``train_closed``.
    """
    game = deal(OWN_DOUBLE_PENDING, TRAINS)
    opened, _ = steps(game, *OPENING)
    # Both rows apply on their own: bob's closed train before the double ...
    _rejected(opened, "ann plays 6-0 on bob", "ann", FoulKind.TRAIN_CLOSED)
    bound, _ = steps(opened, "ann plays 5-5 on ann")
    assert trains_of(bound).double_pending
    assert open_trains(bound) == {"mexican"}  # bob's and cid's trains are closed
    assert turn(bound) == "ann"

    # ... and with the double pending on ann's train the first row decides.
    _rejected(bound, "ann plays 6-0 on bob", "ann", FoulKind.DOUBLE_UNSATISFIED)
    # cid's closed train shows 7: three rows apply (tile_does_not_match too), the first decides.
    _rejected(bound, "ann plays 6-0 on cid", "ann", FoulKind.DOUBLE_UNSATISFIED)


def test_a_pending_double_binds_its_own_player_away_from_the_mexican_train() -> None:
    """RULES.md section 8.2: "Available trains for player P: if a double is pending, only the
    train it is on." The Mexican train, always open, is no exception: ann's 12-3 matches it, but
    her own double pending on her train makes the play ``double_unsatisfied``."""
    game = deal(OWN_DOUBLE_PENDING, TRAINS)
    bound, _ = steps(game, *OPENING, "ann plays 5-5 on ann")

    _rejected(bound, "ann plays 12-3 on mexican", "ann", FoulKind.DOUBLE_UNSATISFIED)


ELSEWHERE = (
    "ann: 0-0 | bob: 1-1 | cid: 5-2 | dee: 7-0 3-8 4-9 5-6"
    " | trains ann 4 bob 5 cid 6 dee 7 mexican 3 | open bob cid | pending bob by cid | turn dee"
)
"""cid's double on bob's open train is pending (cid passed since, opening his own train); dee,
on turn, holds a tile for her own train (7-0), the Mexican (3-8), ann's closed train (4-9) and
the pending double's (5-6)."""


@pytest.mark.parametrize(
    "line",
    [
        "dee plays 7-0 on dee",  # her own train
        "dee plays 3-8 on mexican",  # the Mexican train
        "dee plays 4-9 on ann",  # ann's closed train: before train_closed
        "dee plays 7-0 on ann",  # ... and before tile_does_not_match
        "dee plays 4-9 on cid",  # cid's open train, where the tile does not match
    ],
)
def test_a_double_pending_on_another_train_makes_every_other_train_double_unsatisfied(
    line: str,
) -> None:
    """RULES.md section 8.2: "Available trains for player P: if a double is pending, only the
    train it is on. Otherwise P's own train, the Mexican train, and every other player's open
    train." Section 3: "When several rows apply, the first in the table decides", and
    `double_unsatisfied` comes before `train_closed` and `tile_does_not_match`."""
    game = table(ELSEWHERE, rules=TRAINS)

    _rejected(game, line, "dee", FoulKind.DOUBLE_UNSATISFIED)
    after, produced = steps(game, "dee plays 5-6 on bob")  # the double's own train: applied
    assert produced == [()]
    assert not trains_of(after).double_pending


def test_with_a_double_pending_only_its_train_counts_for_can_play() -> None:
    game = deal(SATISFIED_BY_NEXT, TRAINS)
    bound, _ = steps(game, *OPENING, "ann plays 5-5 on ann", "ann passes", "bob plays 5-2 on ann")
    # Now cid: nothing pending; his 3-4 matches no train (cid 7, bob 6, ann 2, mexican 12).
    assert rnd(bound).can_play(2) is False
    held = table(
        "ann: 0-0 | bob: 6-1 | cid: 3-4 | trains ann 5 bob 6 cid 7 mexican 12 | open ann"
        " | pending ann by ann | turn bob",
        rules=TRAINS,
    )
    # bob holds 6-1 for his own train, but the pending double on ann's train binds him.
    assert rnd(held).can_play(1) is False
    _, verdicts = pass_(held, "bob")
    assert verdicts == ()  # a legitimate pass, not a false one


def test_a_dead_double_is_not_pending_and_the_turn_passes() -> None:
    # No hand and no boneyard holds another 5: the double can never be answered.
    game = deal("ann: 12-5 5-5 0-0 | bob: 2-2 12-6 | cid: 12-7 3-4 | engine 12", TRAINS)

    after, _ = steps(game, *OPENING, "ann plays 5-5 on ann")

    assert not trains_of(after).double_pending
    assert turn(after) == "bob"


def test_a_double_is_live_while_the_boneyard_holds_a_tile_that_answers_it() -> None:
    rules = Rules.of(layout=Layout.TRAINS, max_pip=12)  # draw: once, the trains default
    game = deal(
        "ann: 12-5 5-5 0-0 | bob: 2-2 12-6 | cid: 12-7 3-4 | boneyard: 5-9 | engine 12", rules
    )

    after, _ = steps(game, *OPENING, "ann plays 5-5 on ann")

    assert trains_of(after).double_pending
    assert turn(after) == "ann"


def test_a_double_as_the_last_tile_ends_the_round_by_domino() -> None:
    game = deal("ann: 12-5 5-5 | bob: 5-2 12-6 | cid: 12-7 3-4 | engine 12", TRAINS)

    after, produced = steps(game, *OPENING, "ann plays 5-5 on ann")

    scored = only(produced[-1], RoundScored)
    assert scored.reason is RoundEnd.DOMINO
    assert scored.winners == ("ann",)
    assert rnd(after).ended


def test_the_player_of_a_pending_double_may_draw_again_this_turn() -> None:
    rules = Rules.of(layout=Layout.TRAINS, max_pip=12)  # draw: once
    game = table(
        "ann: 4-7 3-3 | bob: 3-1 | cid: 0-0 | boneyard: 9-9 8-8 | trains ann 4 bob 12 cid 12"
        " mexican 3 | drew",
        rules=rules,
    )
    # ann drew once already this turn; her double on the Mexican train is pending (bob: 3-1).
    after, produced = steps(game, "ann plays 3-3 on mexican", "ann draws 9-9")

    assert produced == [(), ()]  # the draw is a fresh turn's first, not a draw_limit
    assert turn(after) == "ann"


def test_under_satisfy_the_pending_double_outlives_its_players_turn() -> None:
    game = deal(SATISFIED_BY_NEXT, TRAINS)
    bound, _ = steps(game, *OPENING, "ann plays 5-5 on ann", "ann passes")

    assert trains_of(bound).double_pending
    _rejected(bound, "bob plays 6-1 on bob", "bob", FoulKind.DOUBLE_UNSATISFIED)


def test_under_follow_up_a_pending_double_ends_with_its_players_turn() -> None:
    game = deal(SATISFIED_BY_NEXT, FOLLOW_UP)

    after, produced = steps(
        game, *OPENING, "ann plays 5-5 on ann", "ann passes", "bob plays 6-1 on bob"
    )

    assert produced[-2:] == [(), ()]
    assert not trains_of(after).double_pending
    assert ends(after) == {"ann": 5, "bob": 1, "cid": 7, "mexican": 12}


# --- the confirmation chain --------------------------------------------------------------------

STUCK = "ann: 0-0 | bob: 1-1 | cid: 2-2 | trains ann 3 bob 4 cid 5 mexican 6 | open ann bob"
"""Nobody can play anywhere; cid's train is closed."""


def test_a_pass_that_opens_a_train_starts_the_chain_afresh_with_the_passer() -> None:
    game = table(STUCK + " | chain ann bob | turn cid", rules=TRAINS)

    after, verdicts = pass_(game, "cid")

    assert verdicts == ()  # no block: ann and bob have not passed since cid's train opened
    assert rnd(after).chain == (2,)
    assert open_trains(after) == {"ann", "bob", "cid", "mexican"}
    _, produced = steps(after, "ann passes", "bob passes")
    declared = only(produced[-1], BlockDeclared)
    assert declared.proposer == "cid"
    assert declared.confirmed_by == ("cid", "ann", "bob")


def test_a_pass_on_an_already_open_train_continues_the_chain() -> None:
    game = table(STUCK + " cid | chain ann bob | turn cid", rules=TRAINS)

    _, verdicts = pass_(game, "cid")

    declared = only(verdicts, BlockDeclared)
    assert declared.confirmed_by == ("ann", "bob", "cid")
    assert declared.open_ends == {"ann": 3, "bob": 4, "cid": 5, "mexican": 6}


def test_a_pass_that_ends_its_own_pending_double_leaves_the_chain_empty() -> None:
    game = table(
        "ann: 0-0 | bob: 9-1 | cid: 2-2 | trains ann 3 bob 4 cid 5 mexican 9 | open ann"
        " | pending mexican by ann",
        rules=FOLLOW_UP,
    )

    after, verdicts = pass_(game, "ann")

    assert verdicts == ()
    assert not trains_of(after).double_pending
    assert rnd(after).chain == ()  # ann's own ends changed: from the Mexican train to three


def test_passes_under_a_pending_double_nobody_can_answer_declare_the_block() -> None:
    # The only other 9 is kept back in the boneyard (boneyard_reserve 1): live, but unreachable.
    rules = Rules.of(layout=Layout.TRAINS, max_pip=12, boneyard_reserve=1)
    game = table(
        "ann: 0-0 | bob: 3-4 | cid: 5-5 | boneyard: 9-1 | trains ann 3 bob 4 cid 5 mexican 9"
        " | pending mexican by ann",
        rules=rules,
    )

    after, produced = steps(game, "ann passes", "bob passes", "cid passes")

    assert produced[:2] == [(), ()]
    assert kinds(produced[2]) == ["BlockDeclared", "RoundScored"]
    declared = only(produced[2], BlockDeclared)
    assert declared.confirmed_by == ("ann", "bob", "cid")
    assert declared.open_ends == {"ann": 3, "bob": 4, "cid": 5, "mexican": 9}
    scored = only(produced[2], RoundScored)
    assert scored.awards == {"ann": 0, "bob": 7, "cid": 10}  # penalty: each adds their pips
    assert scored.winners == ("ann",)
    assert rnd(after).ended


# --- engines ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "detail"),
    [
        ("ann: 3-3 | bob: 12-4", "needs an engine"),
        ("ann: 3-3 | bob: 12-4 | engine 12 | boneyard: 12-12", "dealt twice"),
        ("ann: 3-3 | bob: 12-12 | engine 12", "dealt twice"),
    ],
)
def test_a_trains_deal_needs_one_engine_of_its_own(spec: str, detail: str) -> None:
    game = started("ann bob", Rules.of(layout=Layout.TRAINS, max_pip=12))

    with pytest.raises(InvalidInput) as caught:
        judge(game, dealt(spec))

    assert caught.value.reason is RejectionReason.BAD_DEAL
    assert detail in caught.value.detail


def test_an_engine_that_is_no_double_or_not_in_the_set_is_a_bad_deal() -> None:
    game = started("ann bob", Rules.of(layout=Layout.TRAINS, max_pip=12))
    for engine, detail in (((12, 11), "not a double"), ((13, 13), "not in the double-12")):
        event = dealt("ann: 3-3 | bob: 12-4")._replace(engine=engine)
        with pytest.raises(InvalidInput) as caught:
            judge(game, event)
        assert caught.value.reason is RejectionReason.BAD_DEAL
        assert detail in caught.value.detail


def test_an_engine_in_a_game_that_is_not_trains_is_a_bad_deal() -> None:
    with pytest.raises(InvalidInput) as caught:
        judge(started("ann bob"), dealt("ann: 3-3 | bob: 1-4 | engine 6"))

    assert caught.value.reason is RejectionReason.BAD_DEAL
    assert "only in layout trains" in caught.value.detail


def test_under_descending_engines_each_round_takes_the_next_double_down() -> None:
    rules = Rules.of(layout=Layout.TRAINS, max_pip=6, engine_order=EngineOrder.DESCENDING)
    game = deal("ann: 6-1 | bob: 2-3 | engine 6", rules)
    ended, _ = steps(game, "ann plays 6-1 on ann")
    assert rnd(ended).ended

    with pytest.raises(InvalidInput) as caught:
        judge(ended, dealt("ann: 5-1 | bob: 2-3 | engine 4", round=2))
    assert caught.value.reason is RejectionReason.BAD_DEAL
    assert "must be [5,5]" in caught.value.detail
    second = next_round(ended, "ann: 5-1 | bob: 2-3 | engine 5")
    assert ends(second) == {"ann": 5, "bob": 5, "mexican": 5}


def test_descending_engines_wrap_around_after_the_double_blank() -> None:
    rules = Rules.of(layout=Layout.TRAINS, max_pip=6, engine_order=EngineOrder.DESCENDING)
    game = started("ann bob", rules)

    for number in range(1, 9):
        due = 6 - (number - 1) % 7  # 6, 5, ..., 0, then 6 again in round 8
        lead = f"{due}-{(due + 1) % 7}"
        game, _ = judge(
            game,
            dealt(f"ann: {lead} | bob: {(due + 2) % 7}-{(due + 3) % 7} | engine {due}", number),
        )
        assert ends(game)["mexican"] == due
        game, _ = steps(game, f"ann plays {lead} on ann")  # her last tile: the round ends
        assert rnd(game).ended
