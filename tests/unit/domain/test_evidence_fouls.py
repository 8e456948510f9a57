"""The evidence behind every kind of foul (RULES.md section 3), read from the judge's fold.

Each test states the whole of the facts it expects: a tile left out, a wrong end or a wrong
count fails it.
"""

from __future__ import annotations

from referee.domain.evidence import (
    DrawFacts,
    Evidence,
    HandFacts,
    Penalty,
    PendingDouble,
    PlaceFacts,
    PlaceValue,
    Playable,
    PlayableFacts,
    TurnFacts,
)
from referee.domain.explain import explain
from referee.domain.fouls import FoulKind
from referee.domain.rules import (
    DrawRule,
    DrawWhileAble,
    Layout,
    Rules,
    Scoring,
    SpinnerArms,
)
from referee.domain.state import GameState
from referee.domain.verdicts import FoulRecorded
from tests.notation import action, deal, t, table

LINE = "ann: 3-4 5-5 1-6 | bob: 1-2 6-6 | cid: 0-0 2-4 | boneyard: 1-1 0-1 | left 3 right 6"
TRAINS = Rules.of(layout=Layout.TRAINS, max_pip=12, draw=DrawRule.NONE)


def evidence_of(game: GameState, line: str) -> Evidence:
    """Returns the evidence of the one foul the action gives."""
    _, found = explain(game, action(game, line))
    assert len(found) == 1, found
    assert isinstance(found[0].verdict, FoulRecorded)
    return found[0]


def p(place: str, value: int) -> PlaceValue:
    return PlaceValue(place, value)


def can(tile_text: str, place: str | None, value: int | None) -> Playable:
    return Playable(t(tile_text), place, value)


# --- passes and draws: what the hand could play -----------------------------------------------


def test_a_false_pass_names_every_tile_that_plays_and_each_place_it_matches() -> None:
    game = table(LINE)

    found = evidence_of(game, "ann passes")

    assert found.rule == "RULES.md §2, §3"
    assert found.actor == "ann"
    assert found.facts == PlayableFacts(
        hand_size=3,
        hand=(t("1-6"), t("3-4"), t("5-5")),
        places=(p("left", 3), p("right", 6)),
        playable=(can("1-6", "right", 6), can("3-4", "left", 3)),
        boneyard=2,
        reserve=0,
        draw="until_playable",
        drew=False,
        draw_while_able="allowed",
    )


def test_a_tile_that_matches_both_ends_is_named_once_for_each() -> None:
    game = table("ann: 3-6 0-0 | bob: 1-2 | left 3 right 6")

    facts = evidence_of(game, "ann passes").facts

    assert isinstance(facts, PlayableFacts)
    assert facts.playable == (can("3-6", "left", 3), can("3-6", "right", 6))


def test_a_false_pass_on_an_empty_layout_names_every_tile_of_the_hand() -> None:
    game = table("ann: 3-6 0-0 | bob: 1-2")

    facts = evidence_of(game, "ann passes").facts

    assert isinstance(facts, PlayableFacts)
    assert facts.places is None
    assert facts.playable == (can("0-0", None, None), can("3-6", None, None))


def test_a_false_pass_on_a_spinner_names_the_arms_once_they_are_open() -> None:
    rules = Rules.of(layout=Layout.SPINNER, spinner_arms=SpinnerArms.AT_ONCE)
    game = deal("ann: 2-2 5-6 0-0 | bob: 2-5 1-1", rules)
    game, _ = explain(game, action(game, "ann plays 2-2"))  # the spinner: its arms open at once
    game, _ = explain(game, action(game, "bob plays 2-5 up"))

    facts = evidence_of(game, "ann passes").facts

    assert isinstance(facts, PlayableFacts)
    assert facts.places == (p("left", 2), p("right", 2), p("up", 5), p("down", 2))
    assert facts.playable == (can("5-6", "up", 5),)


def test_a_false_pass_in_trains_names_the_own_mexican_and_open_trains_but_not_closed_ones() -> None:
    game = table(
        "ann: 5-9 4-11 7-8 | bob: 1-1 | cid: 2-2 | trains ann 9 bob 4 cid 8 mexican 7 | open cid",
        TRAINS,
    )

    facts = evidence_of(game, "ann passes").facts

    assert isinstance(facts, PlayableFacts)
    # bob's train shows 4 but is closed: [4,11] plays nowhere
    assert facts.places == (p("ann", 9), p("cid", 8), p("mexican", 7))
    assert facts.playable == (
        can("5-9", "ann", 9),
        can("7-8", "cid", 8),
        can("7-8", "mexican", 7),
    )


def test_a_pending_double_binds_the_false_pass_to_its_train() -> None:
    game = table(
        "ann: 5-9 6-12 | bob: 1-1 | cid: 2-2 | trains ann 9 bob 6 cid 8 mexican 7 "
        "| pending bob by cid",
        TRAINS,
    )

    facts = evidence_of(game, "ann passes").facts

    assert isinstance(facts, PlayableFacts)
    assert facts.places == (p("bob", 6),)
    assert facts.playable == (can("6-12", "bob", 6),)


def test_a_pass_before_drawing_shows_no_playable_tile_and_a_boneyard_to_draw_from() -> None:
    game = table("ann: 0-0 1-1 | bob: 1-2 | boneyard: 2-2 4-4 | left 3 right 6")

    found = evidence_of(game, "ann passes")

    assert found.verdict == FoulRecorded("ann", FoulKind.PASS_BEFORE_DRAWING, True, 0)
    assert found.facts == PlayableFacts(
        hand_size=2,
        hand=(t("0-0"), t("1-1")),
        places=(p("left", 3), p("right", 6)),
        playable=(),
        boneyard=2,
        reserve=0,
        draw="until_playable",
        drew=False,
        draw_while_able="allowed",
    )


def test_a_pass_before_drawing_under_once_says_the_player_had_not_drawn() -> None:
    rules = Rules.of(draw=DrawRule.ONCE, boneyard_reserve=1)
    game = table("ann: 0-0 | bob: 1-2 | boneyard: 2-2 4-4 | left 3 right 6", rules)

    facts = evidence_of(game, "ann passes").facts

    assert isinstance(facts, PlayableFacts)
    assert (facts.boneyard, facts.reserve, facts.draw, facts.drew) == (2, 1, "once", False)


def test_a_draw_while_able_names_the_tiles_that_played() -> None:
    rules = Rules(draw_while_able=DrawWhileAble.FOUL)
    game = table(LINE, rules)

    found = evidence_of(game, "ann draws 1-1")

    assert found.verdict == FoulRecorded("ann", FoulKind.DRAW_WHILE_ABLE, True, 0)
    assert isinstance(found.facts, PlayableFacts)
    assert found.facts.playable == (can("1-6", "right", 6), can("3-4", "left", 3))
    assert found.facts.draw_while_able == "foul"


# --- rejected actions: what the rule needed and what the action was -----------------------------


def test_out_of_turn_names_whose_turn_it_was() -> None:
    game = table(LINE)

    found = evidence_of(game, "cid passes")

    assert found.facts == TurnFacts("ann", "Passed")
    assert found.actor == "cid"


def test_out_of_turn_names_what_the_offender_did() -> None:
    game = table(LINE)

    played = evidence_of(game, "bob plays 1-2 left").facts
    drew = evidence_of(game, "cid draws 1-1").facts

    assert played == TurnFacts("ann", "TilePlayed")
    assert drew == TurnFacts("ann", "TileDrawn")


def test_tile_not_in_hand_shows_the_hand_and_where_the_tile_was() -> None:
    game = table(LINE)

    in_hand = evidence_of(game, "ann plays 6-6 right").facts
    in_boneyard = evidence_of(game, "ann plays 0-1 right").facts
    elsewhere = evidence_of(game, "ann plays 2-3 left").facts
    no_set = evidence_of(game, "ann plays 7-7 left").facts

    hand = (t("1-6"), t("3-4"), t("5-5"))
    assert in_hand == HandFacts(t("6-6"), hand, "in bob's hand")
    assert in_boneyard == HandFacts(t("0-1"), hand, "in the boneyard")
    assert elsewhere == HandFacts(t("2-3"), hand, "on the layout or out of play")
    assert no_set == HandFacts(t("7-7"), hand, "not in the double-6 set")


def test_tile_does_not_match_shows_the_value_of_the_place_named() -> None:
    game = table(LINE)

    found = evidence_of(game, "ann plays 5-5 left")

    assert found.rule == "RULES.md §1, §3"
    assert found.facts == PlaceFacts(
        need="a tile played on a place shows that place's value",
        tile=t("5-5"),
        end="left",
        train=None,
        places=(p("left", 3), p("right", 6)),
        value=3,
    )


def test_end_missing_shows_the_places_one_of_which_was_needed() -> None:
    game = table(LINE)

    facts = evidence_of(game, "ann plays 3-4").facts

    assert isinstance(facts, PlaceFacts)
    assert facts.need == "a play on a layout that is not empty names an end"
    assert (facts.end, facts.train) == (None, None)
    assert facts.places == (p("left", 3), p("right", 6))


def test_end_not_available_says_which_place_the_layout_lacks() -> None:
    line = table(LINE)
    trains = table("ann: 5-9 | bob: 1-1 | trains ann 9 bob 4 mexican 7", TRAINS)
    spinner = deal("ann: 2-2 0-4 | bob: 3-3 | boneyard: 6-6", Rules.of(layout=Layout.SPINNER))
    spinner, _ = explain(spinner, action(spinner, "ann plays 2-2"))  # down, arms not yet open
    spinner, _ = explain(spinner, action(spinner, "bob draws 6-6"))
    spun = evidence_of(spinner, "bob plays 3-3 up").facts

    up_on_a_line = evidence_of(line, "ann plays 3-4 up").facts
    train_on_a_line = evidence_of(line, "ann plays 3-4 on ann").facts
    end_in_trains = evidence_of(trains, "ann plays 5-9 left").facts
    no_such_train = evidence_of(trains, "ann plays 5-9 on zed").facts
    both = evidence_of(trains, "ann plays 5-9 left on ann").facts

    needs = [
        getattr(f, "need", None)
        for f in (up_on_a_line, train_on_a_line, end_in_trains, no_such_train, both, spun)
    ]
    assert needs == [
        "a line has two ends, left and right",
        "a line or a spinner has no trains: a play names an end",
        "trains have no ends: a play names a train",
        "the train named must be a train of this game: ann, bob, mexican",
        "a play names one place: an end or a train, not both",
        "up and down open once tiles lie against both sides of the spinner",
    ]
    assert isinstance(no_such_train, PlaceFacts)
    assert no_such_train.places == (p("ann", 9), p("mexican", 7))
    assert no_such_train.train == "zed"


def test_double_unsatisfied_names_the_pending_double_and_its_player() -> None:
    game = table(
        "ann: 5-9 6-12 | bob: 1-1 | cid: 2-2 | trains ann 9 bob 6 cid 8 mexican 7 "
        "| pending bob by cid",
        TRAINS,
    )

    facts = evidence_of(game, "ann plays 5-9 on ann").facts

    assert isinstance(facts, PlaceFacts)
    assert facts.pending == PendingDouble("bob", 6, "cid")
    assert facts.places == (p("bob", 6),)
    assert facts.train == "ann"


def test_train_closed_names_the_open_trains() -> None:
    game = table(
        "ann: 4-11 | bob: 1-1 | cid: 2-2 | trains ann 9 bob 4 cid 8 mexican 7 | open cid",
        TRAINS,
    )

    facts = evidence_of(game, "ann plays 4-11 on bob").facts

    assert isinstance(facts, PlaceFacts)
    assert facts.open_trains == ("cid", "mexican")
    assert facts.train == "bob"


def test_the_draw_fouls_show_the_draw_rule_and_the_boneyard() -> None:
    none = table("ann: 0-0 | bob: 1-2 | left 3 right 6", Rules.of(draw=DrawRule.NONE))
    reserved = table(
        "ann: 0-0 | bob: 1-2 | boneyard: 4-4 | left 3 right 6", Rules(boneyard_reserve=1)
    )
    once = table(
        "ann: 0-0 | bob: 1-2 | boneyard: 4-4 5-5 | left 3 right 6 | drew",
        Rules.of(draw=DrawRule.ONCE),
    )
    usual = table(LINE)

    assert evidence_of(none, "ann draws 4-4").facts == DrawFacts(
        "nobody draws in a game whose draw rule is none", "none", 0, 0, False, t("4-4"), None
    )
    assert evidence_of(reserved, "ann draws 4-4").facts == DrawFacts(
        "a draw needs more tiles in the boneyard than boneyard_reserve",
        "until_playable",
        1,
        1,
        False,
        t("4-4"),
        None,
    )
    assert evidence_of(once, "ann draws 5-5").facts == DrawFacts(
        "under draw once a player draws one tile a turn", "once", 2, 0, True, t("5-5"), None
    )
    assert evidence_of(usual, "ann draws 6-6").facts == DrawFacts(
        "a tile drawn comes from the boneyard",
        "until_playable",
        2,
        0,
        False,
        t("6-6"),
        "in bob's hand",
    )


def test_a_penalty_shows_the_score_before_and_after() -> None:
    award = Rules(foul_penalty={FoulKind.FALSE_PASS: 5})
    penalty = Rules.of(scoring=Scoring.PENALTY, foul_penalty={FoulKind.FALSE_PASS: 5})

    deducted = evidence_of(table(LINE, award, scores={"ann": 12}), "ann passes").facts
    added = evidence_of(table(LINE, penalty, scores={"ann": 12}), "ann passes").facts

    assert isinstance(deducted, PlayableFacts)
    assert isinstance(added, PlayableFacts)
    assert deducted.penalty == Penalty(5, "ann", 12, 7)
    assert added.penalty == Penalty(5, "ann", 12, 17)


def test_a_team_pays_its_members_penalty() -> None:
    rules = Rules(foul_penalty={FoulKind.OUT_OF_TURN: 2})
    game = table(
        "ann: 0-0 | bob: 1-1 | cid: 2-2 | dee: 3-3 | left 3 right 6",
        rules,
        scores={"north": 10, "east": 4},
        teams={"north": ("ann", "cid"), "east": ("bob", "dee")},
    )

    facts = evidence_of(game, "cid passes").facts

    assert facts == TurnFacts("ann", "Passed", Penalty(2, "north", 10, 8))
