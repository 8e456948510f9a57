"""Every explanation names the rulebook sections it applies (docs/rulebook.md, RULES.md).

The table below is written from the rulebook, apart from ``explain.py``: a foul is judged by
the table of section 3 and the section that defines what its row reads (whose turn: section 2;
the draw rule: section 2; exhausted and matching: section 1; the places of a spinner and of
trains: section 8; a pending double and a closed train: section 8.2); a block by section 4; a
round by 5.1 (award) or 5.3 (penalty), and 9 with teams; a game's end by 5.2, and 5.3 under
penalty scoring; a play's points by section 10.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from referee.contracts.rejection import FileSource
from referee.domain.explain import BLOCK_RULE, FOUL_RULES, POINTS_RULE, game_rule, round_rule
from referee.domain.fouls import FoulKind
from referee.domain.rules import Rules, Scoring
from referee.domain.verdicts import BlockDeclared, FoulRecorded, GameWon, PointsScored, RoundScored
from referee.simulate import SimulationOptions, simulate
from referee.usecases.explanations import Explained, Explainer

ROOT = Path(__file__).resolve().parents[3]
RULEBOOK = (ROOT / "docs" / "rulebook.md").read_text(encoding="utf-8")

FOULS = {
    "out_of_turn": "§2, §3",  # turns
    "tile_not_in_hand": "§3",
    "end_not_available": "§3, §8",  # the places of each layout
    "double_unsatisfied": "§3, §8.2",  # a pending double
    "train_closed": "§3, §8.2",  # open and closed trains
    "tile_does_not_match": "§1, §3",  # a tile shows a value
    "end_missing": "§3",
    "draw_not_allowed": "§2, §3",  # the draw rule
    "boneyard_empty": "§1, §3",  # exhausted
    "tile_not_in_boneyard": "§3",
    "draw_limit": "§2, §3",  # draw once
    "draw_while_able": "§2, §3",  # can play; draw_while_able
    "false_pass": "§2, §3",  # can play
    "pass_before_drawing": "§2, §3",  # the draw rule still requires a draw
}


def sections(rule: str) -> list[str]:
    assert rule.startswith("RULES.md §"), rule
    return re.findall(r"§([\d.]+)", rule)


def headings() -> set[str]:
    """The numbers of the rulebook's sections and subsections."""
    found = re.findall(r"^## (\d+)\. |^### (\d+\.\d+) ", RULEBOOK, re.MULTILINE)
    return {section or subsection for section, subsection in found}


def section_3_kinds() -> set[str]:
    """The foul kinds of the table of section 3."""
    text = RULEBOOK[RULEBOOK.index("## 3. ") : RULEBOOK.index("## 4. ")]
    return set(re.findall(r"\| `([a-z_]+)` \|\s*$", text, re.MULTILINE))


def test_every_foul_kind_is_in_the_table_of_section_3_and_in_the_explanations() -> None:
    kinds = {k.value for k in FoulKind}
    assert section_3_kinds() == kinds
    assert set(FOULS) == kinds
    assert {k.value for k in FOUL_RULES} == kinds


@pytest.mark.parametrize("kind", sorted(FOULS))
def test_each_foul_applies_its_sections(kind: str) -> None:
    assert FOUL_RULES[FoulKind(kind)] == f"RULES.md {FOULS[kind]}"


def test_each_verdict_kind_applies_its_sections() -> None:
    award, penalty = Rules(), Rules.of(scoring=Scoring.PENALTY)

    assert POINTS_RULE == "RULES.md §10"
    assert BLOCK_RULE == "RULES.md §4"
    assert round_rule(award, teams=False) == "RULES.md §5.1"
    assert round_rule(award, teams=True) == "RULES.md §5.1, §9"
    assert round_rule(penalty, teams=False) == "RULES.md §5.3"
    assert game_rule(award) == "RULES.md §5.2"
    assert game_rule(penalty) == "RULES.md §5.2, §5.3"


def test_every_section_named_is_a_section_of_the_rulebook() -> None:
    named = [*FOUL_RULES.values(), POINTS_RULE, BLOCK_RULE]
    named += [round_rule(Rules.of(scoring=s), teams=t) for s in Scoring for t in (False, True)]
    named += [game_rule(Rules.of(scoring=s)) for s in Scoring]
    found = headings()
    assert {"1", "3", "5.1", "8.2", "10"} <= found  # the search finds them
    for rule in named:
        for number in sections(rule):
            assert number in found, f"{rule}: no section {number} in docs/rulebook.md"


def test_the_explanations_of_a_log_apply_the_sections_of_the_table() -> None:
    """The table is the one applied: every explanation of a simulated log of every family
    names the sections the table gives its verdict."""
    explainer = Explainer()
    seen = set()
    options = SimulationOptions(games=30, seed=36, foul_rate=0.1)
    for number, (game_id, line) in enumerate(simulate(options), 1):
        for chapter in explainer.feed(line, FileSource("sim", number)):
            if not isinstance(chapter, Explained):
                continue
            game = explainer.referee.games[game_id].state
            verdict = chapter.evidence.verdict
            penalty = game.rules.scoring is Scoring.PENALTY
            if isinstance(verdict, FoulRecorded):
                expected, kind = FOULS[verdict.foul.value], verdict.foul.value
            elif isinstance(verdict, PointsScored):
                expected, kind = "§10", "PointsScored"
            elif isinstance(verdict, BlockDeclared):
                expected, kind = "§4", "BlockDeclared"
            elif isinstance(verdict, RoundScored):
                expected = "§5.3" if penalty else "§5.1"
                expected += ", §9" if game.teams.ids is not None else ""
                kind = "RoundScored"
            else:
                assert isinstance(verdict, GameWon)
                expected, kind = ("§5.2, §5.3" if penalty else "§5.2"), "GameWon"
            assert chapter.evidence.rule == f"RULES.md {expected}", verdict
            seen.add(kind)
    assert {"PointsScored", "BlockDeclared", "RoundScored", "GameWon", "false_pass"} <= seen
