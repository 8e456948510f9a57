"""A game's state survives the projection's JSON exactly, at every point of a game of every
family, and the states edition 1 stored still read as the same games."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.contracts.rejection import FileSource
from referee.contracts.state_codec import decode_state, encode_state, encode_state_plainly
from referee.domain.rules import Rules
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
        assert encoded == encode_state_plainly(state)  # the cached pieces change no byte
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


def test_the_cached_pieces_follow_a_state_whose_rules_or_players_changed() -> None:
    referee = Referee()
    options = SimulationOptions(games=2, seed=8, foul_rate=0.0, concurrency=1)
    for number, (_, line) in enumerate(simulate(options), start=1):
        referee.process(line, FileSource("sim", number))
    state = next(iter(referee.games.values())).state
    assert encode_state(state) == encode_state_plainly(state)  # cached now
    # the same players tuple (the cache's key) with other rules: a fresh piece, not the cached
    other = state._replace(rules=Rules(target_score=(state.rules.target_score or 100) + 7))
    assert encode_state(other) == encode_state_plainly(other) != encode_state(state)
    renamed = state._replace(players=tuple(f"{p}-x" for p in state.players))
    assert encode_state(renamed) == encode_state_plainly(renamed) != encode_state(state)
