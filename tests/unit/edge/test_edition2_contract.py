"""The edition-2 contract at the edge: options and their combinations (RULES.md sections 6 and
9), teams, engines, trains named by plays, and the fields a verdict has only when meaningful."""

from __future__ import annotations

import json
from typing import Any

import pytest

from referee.contracts.parse import parse_event
from referee.contracts.verdicts import encode_canonical
from referee.contracts.wire import GameStartedWire, RulesWire, TilePlayedWire
from referee.domain.rules import DrawRule, Layout, Scoring
from referee.processing.outcome import Outcome, Processed
from tests.unit.edge.edge_helpers import Table, event, raw

FOUR = ["ann", "bob", "cid", "dee"]
PARTNERS = {"ns": ["ann", "cid"], "ew": ["bob", "dee"]}


def game(rules: dict[str, Any], players: list[str] | None = None, **fields: Any) -> bytes:
    return raw(event("GameStarted", 1, players=players or ["ann", "bob"], rules=rules, **fields))


def rejected(result: Processed, reason: str, *mentions: str) -> None:
    assert result.outcome is Outcome.REJECTED, result
    assert result.rejection is not None
    assert result.rejection.reason.value == reason, result.rejection.detail
    for mention in mentions:
        assert mention in result.rejection.detail, (mention, result.rejection.detail)


# --- options ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "mentions"),
    [
        ({"layout": "circle"}, ["$.rules.layout"]),
        ({"spinner_arms": "later"}, ["$.rules.spinner_arms"]),
        ({"boneyard_reserve": 3}, ["$.rules.boneyard_reserve"]),
        ({"boneyard_reserve": -1}, ["$.rules.boneyard_reserve"]),
        ({"rounds": 0}, ["$.rules.rounds"]),
        ({"rounds": 101}, ["$.rules.rounds"]),
        ({"mexican_train": "yes"}, ["$.rules.mexican_train"]),
        ({"play_scoring": "sevens"}, ["$.rules.play_scoring"]),
        ({"scoring": "points"}, ["$.rules.scoring"]),
        ({"block_winner": "highest"}, ["$.rules.block_winner"]),
        ({"double_rule": "never"}, ["$.rules.double_rule"]),
        ({"engine_order": "ascending"}, ["$.rules.engine_order"]),
        ({"foul_penalty": {"train_wreck": 1}}, ["$.rules.foul_penalty"]),
        ({"chicken_foot": True}, ["chicken_foot"]),
    ],
)
def test_an_unknown_option_or_an_out_of_range_value_is_a_schema_violation(
    rules: dict[str, Any], mentions: list[str]
) -> None:
    rejected(Table().one(game(rules)), "schema_violation", *mentions)


@pytest.mark.parametrize(
    ("rules", "mentions"),
    [
        ({"spinner_arms": "at_once"}, ["$.rules.spinner_arms", "layout spinner", "line"]),
        ({"layout": "trains", "spinner_arms": "at_once"}, ["$.rules.spinner_arms", "trains"]),
        ({"mexican_train": False}, ["$.rules.mexican_train", "layout trains"]),
        ({"layout": "spinner", "double_rule": "follow_up"}, ["$.rules.double_rule"]),
        ({"engine_order": "descending"}, ["$.rules.engine_order", "layout trains"]),
        (
            {"layout": "trains", "scoring": "award", "play_scoring": "fives"},
            ["$.rules.play_scoring", "line or spinner"],
        ),
        (
            {"layout": "trains", "block_confirmation": "immediate"},
            ["$.rules.block_confirmation", "trains"],
        ),
        ({"scoring": "penalty", "tie": "split"}, ["$.rules.tie", "penalty"]),
        ({"scoring": "penalty", "play_scoring": "fives"}, ["$.rules.play_scoring", "penalty"]),
        ({"scoring": "penalty", "rounding": "nearest_5"}, ["$.rules.rounding"]),
        ({"scoring": "penalty", "block_points": "all"}, ["$.rules.block_points"]),
        ({"scoring": "penalty", "domino_points": "all"}, ["$.rules.domino_points"]),
        ({"scoring": "penalty", "block_winner": "lowest_player"}, ["$.rules.block_winner"]),
        # In trains the scoring is penalty unless award is given: these are penalty's limits.
        ({"layout": "trains", "tie": "split"}, ["$.rules.tie", "default of layout trains"]),
    ],
)
def test_an_option_the_layout_or_scoring_does_not_use_set_off_its_default_is_a_violation(
    rules: dict[str, Any], mentions: list[str]
) -> None:
    rejected(Table().one(game(rules)), "schema_violation", *mentions)


@pytest.mark.parametrize(
    "rules",
    [
        {"spinner_arms": "after_sides"},  # given at their defaults: always allowed
        {"mexican_train": True, "double_rule": "satisfy", "engine_order": "free"},
        {"play_scoring": "none", "layout": "trains"},
        {"layout": "trains", "scoring": "penalty", "tie": "no_winner", "rounding": "none"},
        {"layout": "trains", "scoring": "award", "tie": "split", "block_winner": "lowest_player"},
        {"layout": "spinner", "spinner_arms": "at_once", "play_scoring": "fives"},
        {"layout": "line", "play_scoring": "fives_and_threes", "boneyard_reserve": 2, "rounds": 7},
        {"scoring": "penalty", "target_score": 100, "rounds": 3, "double_blank": 25},
    ],
)
def test_options_that_go_together_start_a_game(rules: dict[str, Any]) -> None:
    result = Table().one(game(rules))
    assert result.outcome is Outcome.APPLIED, result.rejection


def test_the_trains_defaults_come_from_the_layout_and_a_given_value_wins() -> None:
    def effective(rules: dict[str, Any]) -> tuple[DrawRule, Scoring]:
        parsed = parse_event(game(rules))
        assert isinstance(parsed, GameStartedWire)
        domain = parsed.rules.to_domain()
        return domain.draw, domain.scoring

    assert effective({}) == (DrawRule.UNTIL_PLAYABLE, Scoring.AWARD)
    assert effective({"layout": "trains"}) == (DrawRule.ONCE, Scoring.PENALTY)
    assert effective({"layout": "trains", "draw": "until_playable", "scoring": "award"}) == (
        DrawRule.UNTIL_PLAYABLE,
        Scoring.AWARD,
    )
    assert effective({"layout": "spinner"}) == (DrawRule.UNTIL_PLAYABLE, Scoring.AWARD)


def test_an_edition_1_rules_object_encodes_exactly_as_edition_1_did() -> None:
    # The fingerprint of an event is that of its re-encoding: an edition-1 GameStarted must
    # re-encode with every edition-1 option spelled out and no edition-2 one.
    parsed = parse_event(game({"max_pip": 9}))
    assert isinstance(parsed, GameStartedWire)
    assert json.loads(encode_canonical(parsed))["rules"] == {
        "block_confirmation": "full_round",
        "block_points": "others",
        "domino_points": "others",
        "double_blank": 0,
        "draw": "until_playable",
        "draw_while_able": "allowed",
        "foul_penalty": {},
        "max_pip": 9,
        "rounding": "none",
        "target_score": None,
        "tie": "no_winner",
    }


def test_the_state_codecs_rules_round_trip_what_absence_would_give() -> None:
    trains = RulesWire(layout=Layout.TRAINS, scoring=Scoring.AWARD).to_domain()
    assert RulesWire.from_domain(trains).to_domain() == trains
    assert RulesWire.from_domain(trains).scoring is Scoring.AWARD  # spelled: not trains' default


# --- teams -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("teams", "mentions"),
    [
        ({"ns": ["ann", "bob", "cid", "dee"]}, ["at least 2 teams"]),
        ({"ns": ["ann", "cid"], "ew": ["bob"]}, ["in no team"]),
        ({"ns": ["ann", "cid"], "ew": ["bob", "dee", "eve"]}, ["'eve'", "not a player"]),
        ({"ns": ["ann", "cid"], "ew": ["bob", "ann"]}, ["'ann'", "listed twice"]),
        ({"ns": ["ann", "bob"], "ew": ["cid", "dee"]}, ["alternate"]),
        ({"ns": ["ann", "cid", "bob"], "ew": ["dee"]}, ["same size"]),
        ({"ns": [], "ew": FOUR}, ["no players"]),
        ({"": ["ann", "cid"], "ew": ["bob", "dee"]}, ["$.teams"]),
        ({"n\u0007s": ["ann", "cid"], "ew": ["bob", "dee"]}, ["control character"]),
        ({"x" * 65: ["ann", "cid"], "ew": ["bob", "dee"]}, ["$.teams"]),
        ([["ann", "cid"], ["bob", "dee"]], ["$.teams"]),
    ],
)
def test_teams_that_are_no_partnership_are_a_schema_violation(
    teams: object, mentions: list[str]
) -> None:
    rejected(Table().one(game({}, FOUR, teams=teams)), "schema_violation", "teams", *mentions)


def test_teams_with_penalty_scoring_are_a_schema_violation_naming_the_trains_default() -> None:
    result = Table().one(game({"layout": "trains"}, FOUR, teams=PARTNERS))
    rejected(result, "schema_violation", "$.teams", "penalty", "scoring: award")


def test_valid_partnerships_start_a_game_and_null_teams_mean_none() -> None:
    assert Table().one(game({}, FOUR, teams=PARTNERS)).outcome is Outcome.APPLIED
    assert (
        Table()
        .one(game({}, FOUR, teams={"a": ["ann"], "b": ["bob"], "c": ["cid"], "d": ["dee"]}))
        .outcome
        is Outcome.APPLIED
    )
    assert Table().one(game({}, FOUR, teams=None)).outcome is Outcome.APPLIED


def test_a_player_called_mexican_cannot_sit_at_a_game_with_the_mexican_train() -> None:
    rejected(
        Table().one(game({"layout": "trains"}, ["ann", "mexican"])),
        "schema_violation",
        "$.players",
        "'mexican'",
    )
    assert (
        Table().one(game({"layout": "trains", "mexican_train": False}, ["ann", "mexican"])).outcome
        is Outcome.APPLIED
    )
    assert Table().one(game({}, ["ann", "mexican"])).outcome is Outcome.APPLIED  # a line game


# --- engines and trains on the wire --------------------------------------------------------


def trains_table() -> Table:
    table = Table()
    assert table.one(game({"layout": "trains", "max_pip": 12})).outcome is Outcome.APPLIED
    return table


def deal(**fields: Any) -> bytes:
    hands = {"ann": [[12, 5], [5, 10]], "bob": [[12, 3], [0, 0]]}
    fields = {"boneyard": [], **fields}
    return raw(event("RoundStarted", 2, round=1, hands=hands, leader="ann", **fields))


@pytest.mark.parametrize(
    ("fields", "mentions"),
    [
        ({}, ["needs an engine"]),
        ({"engine": None}, ["needs an engine"]),
        ({"engine": [12, 11]}, ["not a double"]),
        ({"engine": [12, 5]}, ["not a double"]),
        ({"engine": [0, 0]}, ["dealt twice"]),  # bob holds [0,0]
        ({"engine": [1, 1], "boneyard": [[1, 1]]}, ["dealt twice"]),
    ],
)
def test_an_engine_that_cannot_be_is_a_bad_deal(
    fields: dict[str, Any], mentions: list[str]
) -> None:
    rejected(trains_table().one(deal(**fields)), "bad_deal", *mentions)


def test_an_engine_dealt_in_a_line_game_is_a_bad_deal() -> None:
    table = Table()
    table.one(game({"max_pip": 12}))
    rejected(table.one(deal(engine=[12, 12])), "bad_deal", "only in layout trains")


def test_an_engine_out_of_range_is_a_schema_violation() -> None:
    rejected(trains_table().one(deal(engine=[19, 19])), "schema_violation", "$.engine")


def test_a_train_is_named_by_any_string_and_one_that_is_no_train_is_a_foul() -> None:
    table = trains_table()
    assert table.one(deal(engine=[12, 12])).outcome is Outcome.APPLIED
    play = event("TilePlayed", 3, round=1, player="ann", tile=[12, 5], train="no such train")
    result = table.one(raw(play))
    assert result.outcome is Outcome.FOULED
    assert json.loads(encode_canonical(result.verdicts[0]))["foul"] == "end_not_available"


def test_a_null_train_is_no_train_named() -> None:
    parsed = parse_event(
        raw(event("TilePlayed", 3, round=1, player="ann", tile=[1, 2], train=None))
    )
    assert isinstance(parsed, TilePlayedWire)
    assert parsed.to_domain().train is None


@pytest.mark.parametrize("end", ["up", "down"])
def test_up_and_down_are_ends_of_the_wire(end: str) -> None:
    parsed = parse_event(raw(event("TilePlayed", 3, round=1, player="ann", tile=[1, 2], end=end)))
    assert isinstance(parsed, TilePlayedWire)


def test_any_other_end_is_a_schema_violation() -> None:
    line = raw(event("TilePlayed", 3, round=1, player="ann", tile=[1, 2], end="middle"))
    rejected(Table().one(line), "schema_violation", "$.end")


# --- verdict fields that only some games have ------------------------------------------------


def test_an_edition_1_verdict_has_no_edition_2_field() -> None:
    table = Table()
    table.one(game({"draw": "none"}))
    table.one(
        raw(
            event(
                "RoundStarted",
                2,
                round=1,
                hands={"ann": [[1, 2]], "bob": [[3, 3]]},
                boneyard=[],
                leader="ann",
            )
        )
    )
    result = table.one(raw(event("TilePlayed", 3, round=1, player="ann", tile=[1, 2])))
    (scored,) = result.verdicts
    assert set(json.loads(encode_canonical(scored))) == {
        "verdict_id",
        "type",
        "game_id",
        "round",
        "cause_event_id",
        "cause_seq",
        "occurred_at",
        "schema_version",
        "reason",
        "winners",
        "pip_counts",
        "awards",
        "cumulative",
        "tie",
    }


def test_a_penalty_round_says_so_and_a_team_round_gives_the_team_figures() -> None:
    table = Table()
    table.one(game({"draw": "none", "scoring": "penalty"}))
    table.one(
        raw(
            event(
                "RoundStarted",
                2,
                round=1,
                hands={"ann": [[1, 2]], "bob": [[3, 3]]},
                boneyard=[],
                leader="ann",
            )
        )
    )
    (scored,) = table.one(raw(event("TilePlayed", 3, round=1, player="ann", tile=[1, 2]))).verdicts
    body = json.loads(encode_canonical(scored))
    assert body["scoring"] == "penalty"
    assert body["awards"] == {"ann": 0, "bob": 6}
    assert "team_awards" not in body
