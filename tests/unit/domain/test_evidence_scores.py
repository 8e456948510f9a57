"""The evidence behind scores, blocks and wins (RULES.md sections 4, 5, 10): the arithmetic.

Each test states the figures it expects: a wrong sum, a missing hand or a wrong share fails it.
"""

from __future__ import annotations

from referee.domain.evidence import (
    BlockFacts,
    CountedEnd,
    CountFacts,
    Evidence,
    GameFacts,
    HeldHand,
    PlaceValue,
    RoundFacts,
    ScoreLine,
    Share,
    SideCount,
)
from referee.domain.explain import explain
from referee.domain.rules import (
    BlockConfirmation,
    BlockWinner,
    DrawRule,
    Layout,
    PlayScoring,
    PointsPolicy,
    Rounding,
    Rules,
    Scoring,
    SpinnerArms,
    TiePolicy,
)
from referee.domain.state import GameState
from referee.domain.verdicts import BlockDeclared, GameWon, PointsScored, RoundScored, Verdict
from tests.notation import action, deal, t, table

NO_DRAW = Rules.of(draw=DrawRule.NONE)
FIVES = Rules.of(layout=Layout.SPINNER, draw=DrawRule.NONE, play_scoring=PlayScoring.FIVES)
EDGE = "left 6 right 6"


def run(game: GameState, *lines: str) -> tuple[GameState, list[Evidence]]:
    """Explains the actions in order; returns the game and every piece of evidence."""
    found: list[Evidence] = []
    for line in lines:
        game, explained = explain(game, action(game, line))
        found += explained
    return game, found


def of(found: list[Evidence], kind: type[Verdict]) -> Evidence:
    [only] = [e for e in found if isinstance(e.verdict, kind)]
    return only


def passes(game: GameState) -> tuple[str, ...]:
    """Every player's pass once, from the one on turn."""
    assert game.round is not None
    n = len(game.players)
    return tuple(f"{game.players[(game.round.turn + i) % n]} passes" for i in range(n))


def hand(player: str, tiles: str, pips: int, places: tuple[PlaceValue, ...]) -> HeldHand:
    return HeldHand(player, tuple(sorted(t(w) for w in tiles.split())), pips, places, ())


ENDS = (PlaceValue("left", 6), PlaceValue("right", 6))


# --- scoring during play (section 10) --------------------------------------------------------


def test_the_count_is_shown_end_by_end_with_doubles_counted_twice() -> None:
    game = deal("ann: 6-6 0-0 | bob: 6-3 1-1", FIVES)

    _, found = run(game, "ann plays 6-6", "bob plays 6-3 right")

    scored = of(found, PointsScored)
    assert scored.rule == "RULES.md §10"
    assert scored.facts == CountFacts(
        tile=t("3-6"),
        place="right",
        single=False,
        ends=(
            CountedEnd("left", 6, 2),  # the spinner is still outermost on left
            CountedEnd("right", 3, 1),
            CountedEnd("up", 6, 0),  # nothing on the arms: they count nothing
            CountedEnd("down", 6, 0),
        ),
        count=15,
        play_scoring="fives",
        fives=3,
        threes=0,
        points=15,
        score=ScoreLine("bob", ("bob",), 0, 15, 15),
    )


def test_a_first_tile_alone_counts_once_at_face_value() -> None:
    game = deal("ann: 2-3 0-0 | bob: 1-1", FIVES)

    _, found = run(game, "ann plays 2-3")

    facts = of(found, PointsScored).facts
    assert isinstance(facts, CountFacts)
    assert facts.single
    assert facts.ends == (CountedEnd("left", 2, 1), CountedEnd("right", 3, 1))
    assert facts.count == 5


def test_a_first_tile_played_with_an_end_named_lies_on_no_end() -> None:
    game = deal("ann: 2-3 0-0 | bob: 1-1", FIVES)

    _, found = run(game, "ann plays 2-3 up")  # the end named with a first tile is ignored

    facts = of(found, PointsScored).facts
    assert isinstance(facts, CountFacts)
    assert facts.place is None
    assert facts.count == 5


def test_an_arm_played_on_counts_and_fives_and_threes_adds_both_parts() -> None:
    rules = Rules.of(
        layout=Layout.SPINNER,
        draw=DrawRule.NONE,
        spinner_arms=SpinnerArms.AT_ONCE,
        play_scoring=PlayScoring.FIVES_AND_THREES,
    )
    game = deal("ann: 5-5 0-1 | bob: 5-0 2-2", rules)

    _, found = run(game, "ann plays 5-5", "bob plays 5-0 up")

    facts = found[-1].facts  # the lead scored too: 10
    assert isinstance(facts, CountFacts)
    assert facts.single  # nothing lies against the lead along the line yet
    assert facts.ends == (
        CountedEnd("left", 5, 1),
        CountedEnd("right", 5, 1),
        CountedEnd("up", 0, 1),
        CountedEnd("down", 5, 0),
    )
    assert (facts.count, facts.fives, facts.threes) == (10, 2, 0)
    assert facts.points == 2


def test_the_points_add_to_the_movers_team() -> None:
    game = deal(
        "ann: 5-5 0-0 | bob: 1-1 0-2 | cid: 5-0 1-2 | dee: 2-2 0-4",
        FIVES,
        teams={"north": ("ann", "cid"), "east": ("bob", "dee")},
    )

    _, found = run(game, "ann plays 5-5", "bob passes", "cid plays 5-0 right")

    scored = [e for e in found if isinstance(e.verdict, PointsScored)]
    assert [e.facts.score for e in scored] == [  # type: ignore[union-attr]
        ScoreLine("north", ("ann", "cid"), 0, 10, 10),
        ScoreLine("north", ("ann", "cid"), 10, 10, 20),
    ]


# --- the block (section 4) -------------------------------------------------------------------


def test_a_block_shows_every_hand_against_the_ends_open_to_it_and_the_passes() -> None:
    game = table("ann: 0-1 2-2 | bob: 0-5 | cid: 3-4 | left 6 right 6 | turn bob", NO_DRAW)

    _, found = run(game, *passes(game))

    block = of(found, BlockDeclared)
    assert block.rule == "RULES.md §4"
    assert block.facts == BlockFacts(
        confirmation="full_round",
        proposer="bob",
        passes=("bob", "cid", "ann"),
        boneyard=0,
        reserve=0,
        hands=(
            hand("ann", "0-1 2-2", 5, ENDS),
            hand("bob", "0-5", 5, ENDS),
            hand("cid", "3-4", 7, ENDS),
        ),
        open_ends=ENDS,
    )


def test_an_immediate_block_names_no_passes() -> None:
    rules = Rules.of(draw=DrawRule.NONE, block_confirmation=BlockConfirmation.IMMEDIATE)
    game = table("ann: 1-6 0-0 | bob: 2-2 | left 3 right 6", rules)

    _, found = run(game, "ann plays 1-6 right")

    facts = of(found, BlockDeclared).facts
    assert isinstance(facts, BlockFacts)
    assert facts.passes == ()
    assert facts.proposer == "ann"
    assert facts.open_ends == (PlaceValue("left", 3), PlaceValue("right", 1))


# --- scoring a round (section 5) -------------------------------------------------------------


def test_a_split_tie_divides_each_base_award_by_the_number_tied() -> None:
    rules = Rules.of(draw=DrawRule.NONE, tie=TiePolicy.SPLIT)
    game = table("ann: 0-1 2-2 | bob: 0-5 | cid: 0-2 0-3 | dee: 1-1 4-4 5-5 | " + EDGE, rules)

    _, found = run(game, *passes(game))

    scored = of(found, RoundScored)
    assert scored.rule == "RULES.md §5.1"
    facts = scored.facts
    assert isinstance(facts, RoundFacts)
    assert (facts.winner_rule, facts.lowest, facts.tied) == (
        "lowest_team",
        5,
        ("ann", "bob", "cid"),
    )
    assert facts.others == 20
    assert facts.shares == (
        Share("ann", 5, 20, 3, 6, 6),
        Share("bob", 5, 20, 3, 6, 6),
        Share("cid", 5, 20, 3, 6, 6),
    )
    assert [(s.before, s.change, s.after) for s in facts.scores] == [
        (0, 6, 6),
        (0, 6, 6),
        (0, 6, 6),
        (0, 0, 0),
    ]


def test_a_lowest_tile_tie_shows_each_tied_sides_lowest_tile() -> None:
    rules = Rules.of(draw=DrawRule.NONE, tie=TiePolicy.LOWEST_TILE)
    game = table("ann: 0-4 1-1 | bob: 0-1 2-3 | cid: 5-5 | " + EDGE, rules)

    _, found = run(game, *passes(game))

    facts = of(found, RoundScored).facts
    assert isinstance(facts, RoundFacts)
    assert facts.tied == ("ann", "bob")
    assert [(s.side, s.pips, s.lowest_tile) for s in facts.sides] == [
        ("ann", 6, 2),
        ("bob", 6, 1),
        ("cid", 10, None),
    ]
    assert facts.winners == ("bob",)
    assert facts.shares == (Share("bob", 6, 16, 1, 16, 16),)


def test_a_lowest_tile_tie_counts_the_double_blank_at_its_value() -> None:
    rules = Rules.of(draw=DrawRule.NONE, tie=TiePolicy.LOWEST_TILE, double_blank=25)
    game = table("ann: 0-0 | bob: 6-6 5-6 1-1 | left 3 right 3", rules)

    _, found = run(game, *passes(game))

    facts = of(found, RoundScored).facts
    assert isinstance(facts, RoundFacts)
    assert facts.tied == ("ann", "bob")
    # [0,0] is ann's lowest tile, and it counts 25: bob's [1,1] is lower
    assert [(s.side, s.pips, s.lowest_tile) for s in facts.sides] == [
        ("ann", 25, 25),
        ("bob", 25, 2),
    ]
    assert facts.winners == ("bob",)


def test_others_minus_own_and_rounding_to_five_are_shown_step_by_step() -> None:
    rules = Rules.of(
        draw=DrawRule.NONE,
        block_points=PointsPolicy.OTHERS_MINUS_OWN,
        rounding=Rounding.NEAREST_5,
    )
    game = table("ann: 0-2 | bob: 4-5 3-3 | " + EDGE, rules)

    _, found = run(game, *passes(game))

    facts = of(found, RoundScored).facts
    assert isinstance(facts, RoundFacts)
    assert (facts.points, facts.others, facts.rounding) == ("others_minus_own", 15, "nearest_5")
    assert facts.shares == (Share("ann", 2, 13, 1, 13, 15),)  # 13 ends in 3: up


def test_a_domino_with_teams_pays_the_others_and_counts_the_partners_pips() -> None:
    rules = Rules.of(draw=DrawRule.NONE, domino_points=PointsPolicy.OTHERS_MINUS_OWN)
    game = table(
        "ann: 3-3 | bob: 0-5 | cid: 1-2 | dee: 4-4 | left 3 right 6",
        rules,
        teams={"north": ("ann", "cid"), "east": ("bob", "dee")},
    )

    _, found = run(game, "ann plays 3-3 left")

    scored = of(found, RoundScored)
    assert scored.rule == "RULES.md §5.1, §9"
    facts = scored.facts
    assert isinstance(facts, RoundFacts)
    assert facts.out == "ann"
    assert facts.winner_rule == "domino"
    assert facts.sides == (
        SideCount("north", ("ann", "cid"), 3),
        SideCount("east", ("bob", "dee"), 13),
    )
    assert facts.shares == (Share("north", 3, 10, 1, 10, 10),)
    assert facts.scores == (
        ScoreLine("north", ("ann", "cid"), 0, 10, 10),
        ScoreLine("east", ("bob", "dee"), 0, 0, 0),
    )


def test_lowest_player_reads_single_counts_across_teams() -> None:
    rules = Rules.of(draw=DrawRule.NONE, block_winner=BlockWinner.LOWEST_PLAYER)
    game = table(
        "ann: 0-1 | bob: 2-3 | cid: 5-5 | dee: 0-2 | " + EDGE,
        rules,
        teams={"north": ("ann", "cid"), "east": ("bob", "dee")},
    )

    _, found = run(game, *passes(game))

    facts = of(found, RoundScored).facts
    assert isinstance(facts, RoundFacts)
    assert (facts.winner_rule, facts.lowest, facts.winners) == ("lowest_player", 1, ("north",))
    assert facts.others == 7  # east's T, though it is lower than north's 11
    assert facts.shares == (Share("north", 11, 7, 1, 7, 7),)


def test_penalty_scoring_adds_each_players_own_pips() -> None:
    rules = Rules.of(draw=DrawRule.NONE, scoring=Scoring.PENALTY)
    game = table("ann: 0-1 | bob: 2-3 | cid: 0-0 1-0 | " + EDGE, rules, scores={"bob": 4})

    _, found = run(game, *passes(game))

    scored = of(found, RoundScored)
    assert scored.rule == "RULES.md §5.3"
    facts = scored.facts
    assert isinstance(facts, RoundFacts)
    assert (facts.winner_rule, facts.lowest, facts.tied) == ("lowest_count", 1, ("ann", "cid"))
    assert facts.winners == ("ann", "cid")
    assert facts.points == "own_pips"
    assert [(s.before, s.change, s.after) for s in facts.scores] == [
        (0, 1, 1),
        (4, 5, 9),
        (0, 1, 1),
    ]


def test_the_double_blank_value_counts_in_the_hands_pips() -> None:
    rules = Rules.of(draw=DrawRule.NONE, double_blank=25)
    game = table("ann: 0-0 | bob: 2-3 | " + EDGE, rules)

    _, found = run(game, *passes(game))

    facts = of(found, RoundScored).facts
    assert isinstance(facts, RoundFacts)
    assert facts.double_blank == 25
    assert [(h.player, h.pips) for h in facts.hands] == [("ann", 25), ("bob", 5)]
    assert facts.winners == ("bob",)


# --- the end of the game (section 5.2) -------------------------------------------------------


def test_a_target_reached_names_the_sides_that_reached_it() -> None:
    rules = Rules.of(draw=DrawRule.NONE, target_score=10)
    game = table("ann: 0-1 | bob: 5-5 | cid: 4-4 | " + EDGE, rules, scores={"cid": 3})

    _, found = run(game, *passes(game))

    won = of(found, GameWon)
    assert won.rule == "RULES.md §5.2"
    assert won.facts == GameFacts(
        condition="target_score",
        round=1,
        rounds=None,
        target_score=10,
        scoring="award",
        best="highest",
        scores=(
            ScoreLine("ann", ("ann",), 18, 0, 18),
            ScoreLine("bob", ("bob",), 0, 0, 0),
            ScoreLine("cid", ("cid",), 3, 0, 3),
        ),
        reached=("ann",),
        winners=("ann",),
    )


def test_the_last_round_ends_the_game_and_the_lowest_wins_under_penalty_scoring() -> None:
    rules = Rules.of(draw=DrawRule.NONE, scoring=Scoring.PENALTY, rounds=1)
    game = table("ann: 0-1 | bob: 5-5 | " + EDGE, rules)

    _, found = run(game, *passes(game))

    facts = of(found, GameWon).facts
    assert isinstance(facts, GameFacts)
    assert (facts.condition, facts.rounds, facts.best, facts.winners) == (
        "rounds",
        1,
        "lowest",
        ("ann",),
    )
    assert [s.after for s in facts.scores] == [1, 10]
