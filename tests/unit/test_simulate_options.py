"""`referee simulate`'s forced options: every combination it accepts makes games that can be.

A combination ``options_problem`` refuses is refused up front with a reason; every other one
must simulate without the simulator's own assertion firing, and must force what it says on
every game (``--play-scoring`` without ``--layout`` once drew trains games, which cannot
score during play, and crashed).
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.simulate import RULE_CHOICES, SimulationOptions, options_problem, simulate

forced = st.builds(
    SimulationOptions,
    games=st.integers(1, 12),
    seed=st.integers(0, 10**6),
    rules=st.sampled_from(RULE_CHOICES),
    layout=st.sampled_from((None, "line", "spinner", "trains")),
    teams=st.booleans(),
    play_scoring=st.sampled_from((None, "none", "fives", "threes", "fives_and_threes")),
    scoring=st.sampled_from((None, "award", "penalty")),
)


@settings(max_examples=60, deadline=None)
@given(options=forced)
def test_every_accepted_combination_simulates_and_forces_its_options(
    options: SimulationOptions,
) -> None:
    if options_problem(options) is not None:
        return  # refused with a reason before any game is drawn
    started = [
        json.loads(line)
        for _, line in simulate(options)
        if b'"type":"GameStarted"' in line and line.startswith(b"{")
    ]
    assert len(started) == options.games
    for event in started:
        rules = event.get("rules", {})
        layout = rules.get("layout", "line")
        if options.layout is not None:
            assert layout == options.layout
        if options.play_scoring not in (None, "none"):
            assert layout != "trains"
            assert rules.get("play_scoring") == options.play_scoring
        if options.scoring is not None:
            assert rules.get("scoring", "penalty" if layout == "trains" else "award") == (
                options.scoring
            )


def test_play_scoring_without_a_layout_draws_only_layouts_that_score_in_play() -> None:
    options = SimulationOptions(games=80, seed=3, play_scoring="fives")
    layouts = {
        json.loads(line)["rules"].get("layout", "line")
        for _, line in simulate(options)
        if b'"type":"GameStarted"' in line
    }
    assert layouts == {"line", "spinner"}
