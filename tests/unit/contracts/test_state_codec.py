"""A game's state survives the projection's JSON exactly, at every point of a game of every
family, and the states edition 1 stored still read as the same games."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.contracts.rejection import FileSource
from referee.contracts.state_codec import decode_state, encode_state
from referee.processing.referee import Referee
from referee.simulate import SimulationOptions, simulate

EDITION1_STATES = Path(__file__).with_name("edition1_states.jsonl")
"""States written by edition 1's ``encode_state`` (the code of ``main`` before edition 2) while
it refereed ``simulate(SimulationOptions(games=12, seed=5, foul_rate=0.05, concurrency=4))``
(edition 1's random rules, which ``rules="edition1"`` draws again), every 37th record."""


@pytest.mark.parametrize(
    "options",
    [
        SimulationOptions(games=30, seed=3, foul_rate=0.05, concurrency=5),  # every family
        SimulationOptions(games=12, seed=4, foul_rate=0.05, concurrency=4, layout="trains"),
        SimulationOptions(games=12, seed=5, foul_rate=0.05, concurrency=4, layout="spinner"),
        SimulationOptions(games=12, seed=6, foul_rate=0.05, concurrency=4, teams=True),
        SimulationOptions(games=12, seed=7, foul_rate=0.05, concurrency=4, rules="edition1"),
    ],
    ids=["random", "trains", "spinner", "teams", "edition1"],
)
def test_every_state_of_simulated_games_round_trips_through_the_codec(
    options: SimulationOptions,
) -> None:
    referee = Referee()
    checked = 0
    for number, (_, line) in enumerate(simulate(options), start=1):
        result = referee.process(line, FileSource("sim", number))
        if result.game_id is None or result.game_id not in referee.games:
            continue
        state = referee.games[result.game_id].state
        encoded = encode_state(state)
        assert decode_state(encoded) == state
        assert encode_state(decode_state(encoded)) == encoded
        checked += 1
    assert checked > 500


def test_states_stored_by_edition_1_decode_to_the_games_edition_2_derives() -> None:
    stored = [json.loads(line) for line in EDITION1_STATES.read_text().splitlines()]
    wanted = {row["record"]: row for row in stored}
    referee = Referee()
    options = SimulationOptions(games=12, seed=5, foul_rate=0.05, concurrency=4, rules="edition1")
    for number, (_, line) in enumerate(simulate(options), start=1):
        referee.process(line, FileSource("sim", number))
        row = wanted.pop(number, None)
        if row is None:
            continue
        derived = referee.games[row["game_id"]].state
        assert decode_state(row["state"]) == derived
        assert encode_state(derived).decode() == row["state"]  # the same bytes as edition 1
    assert not wanted
    assert len(stored) > 30
