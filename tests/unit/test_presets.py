"""Every sample ``GameStarted`` of docs/presets.md parses, and takes the options it names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from referee.contracts.parse import parse_event
from referee.contracts.rejection import FileSource
from referee.contracts.wire import GameStartedWire
from referee.domain.rules import DrawRule, Layout, PlayScoring, Rules, Scoring
from referee.processing.outcome import Outcome
from referee.processing.referee import Referee

PAGE = Path(__file__).resolve().parents[2] / "docs" / "presets.md"
SAMPLES = re.findall(r"^## (.+?)\n.*?```json\n(.+?)\n```", PAGE.read_text(), re.S | re.M)

EXPECTED: dict[str, dict[str, Any]] = {
    "Block": {"draw": DrawRule.NONE},
    "Draw": {"draw": DrawRule.UNTIL_PLAYABLE, "layout": Layout.LINE},
    "Muggins": {"layout": Layout.LINE, "play_scoring": PlayScoring.FIVES},
    "All Fives": {"layout": Layout.SPINNER, "play_scoring": PlayScoring.FIVES},
    "Fives and Threes": {"play_scoring": PlayScoring.FIVES_AND_THREES},
    "Mexican Train": {
        "layout": Layout.TRAINS,
        "draw": DrawRule.ONCE,
        "scoring": Scoring.PENALTY,
        "max_pip": 12,
        "rounds": 13,
    },
    "Partnership": {"draw": DrawRule.NONE, "scoring": Scoring.AWARD},
}


def test_every_preset_has_a_sample() -> None:
    names = [name.split(" (")[0] for name, _ in SAMPLES]
    assert names == list(EXPECTED)


@pytest.mark.parametrize(("name", "sample"), SAMPLES, ids=[n for n, _ in SAMPLES])
def test_the_sample_parses_and_starts_a_game_with_the_options_it_names(
    name: str, sample: str
) -> None:
    parsed = parse_event(sample.encode())
    assert isinstance(parsed, GameStartedWire), parsed
    rules: Rules = parsed.rules.to_domain()
    for option, value in EXPECTED[name.split(" (", maxsplit=1)[0]].items():
        assert getattr(rules, option) == value, (name, option)
    result = Referee().process(sample.encode(), FileSource("presets.md", 1))
    assert result.outcome is Outcome.APPLIED, result.rejection


def test_the_partnership_sample_has_its_teams() -> None:
    (sample,) = [s for n, s in SAMPLES if n.startswith("Partnership")]
    parsed = parse_event(sample.encode())
    assert isinstance(parsed, GameStartedWire)
    assert parsed.to_domain().teams == {"us": ("ann", "cid"), "them": ("bob", "dee")}
