"""A game's state survives the projection's JSON exactly, at every point of a game."""

from __future__ import annotations

from referee.contracts.rejection import FileSource
from referee.contracts.state_codec import decode_state, encode_state
from referee.processing.referee import Referee
from referee.simulate import SimulationOptions, simulate


def test_every_state_of_simulated_games_round_trips_through_the_codec() -> None:
    referee = Referee()
    checked = 0
    lines = simulate(SimulationOptions(games=30, seed=3, foul_rate=0.05, concurrency=5))
    for number, (_, line) in enumerate(lines, start=1):
        result = referee.process(line, FileSource("sim", number))
        if result.game_id is None or result.game_id not in referee.games:
            continue
        state = referee.games[result.game_id].state
        encoded = encode_state(state)
        assert decode_state(encoded) == state
        assert encode_state(decode_state(encoded)) == encoded
        checked += 1
    assert checked > 1000
