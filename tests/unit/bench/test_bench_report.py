"""The benchmark report renders the same Markdown for the same results.

``*.results.json`` are synthetic results of every section (``full``: a whole run;
``partial``: a quick run with optional parts absent; ``ab``: ``--ab-before``), and
``*.report.md`` what the report makes of them: a change to the report that changes them is
seen here, and the golden files are written again on purpose.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from bench import report
from bench.context import FULL, QUICK
from bench.sections.base import Page

HERE = Path(__file__).parent
KEPT = HERE / "kept"
INFO = {
    "nproc": "2",
    "cpu": "A CPU",
    "mem": "7.8 GiB",
    "python": "3.11.9",
    "kernel": "6.1.0",
    "postgres": "16",
    "load": "0.50 0.40 0.30",
    "build": "compiled",
}
COMMANDS = [
    "uv run referee simulate --games 1900 --seed 7 --rules edition1 --output main.jsonl",
    "# a comment already",
    "uv run referee replay main.jsonl --output /dev/null",
]


def _run(*, quick: bool) -> report.Run:
    page = Page(QUICK if quick else FULL, quick, "img", KEPT)
    return report.Run(INFO, "1.00 0.90 0.80", 1234.5 / 60, "2026-12-07 04:30 UTC", COMMANDS, page)


def _results(name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((HERE / f"{name}.results.json").read_text(encoding="utf-8"))
    return found


@pytest.mark.parametrize(("name", "quick"), [("full", False), ("partial", True)])
def test_a_run_renders_as_before(name: str, quick: bool) -> None:
    text = report.render(_results(name), _run(quick=quick))
    assert text + "\n" == (HERE / f"{name}.report.md").read_text(encoding="utf-8")


def test_the_ab_renders_as_before() -> None:
    text = report.render_ab(_results("ab"), _run(quick=False), rounds=3)
    assert text + "\n" == (HERE / "ab.report.md").read_text(encoding="utf-8")


def test_results_of_the_wrong_type_are_refused_with_their_place() -> None:
    results = _results("full")
    results["memory"] = {**results["memory"], "games": "many"}
    with pytest.raises(msgspec.ValidationError, match=r"\$\.games"):
        report.render(results, _run(quick=False))
