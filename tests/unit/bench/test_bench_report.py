"""The benchmark report renders the same Markdown for the same results.

``*.results.json`` are synthetic results of every section (``full``: a whole run;
``partial``: a quick run with optional parts absent; ``ab``: ``--ab-before``), and
``*.report.md`` what the report makes of them: a change to the report that changes them is
seen here, and the golden files are written again on purpose.
"""

from __future__ import annotations

import datetime as real_dt
import json
import types
from pathlib import Path

import pytest

import bench.report as report
from bench.context import FULL, QUICK, Context, Options

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


class _Clock:
    @staticmethod
    def now(tz: real_dt.tzinfo | None = None) -> real_dt.datetime:
        return real_dt.datetime(2026, 12, 7, 4, 30, tzinfo=real_dt.UTC)


@pytest.fixture(autouse=True)
def _fixed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "dt", types.SimpleNamespace(datetime=_Clock, UTC=real_dt.UTC))
    monkeypatch.setattr(report, "EDITION2_AB", KEPT / "edition2-ab.md")
    monkeypatch.setattr(report, "AB_SECTION", KEPT / "relay-transactions.md")
    monkeypatch.setattr(report, "OWNER_AB", KEPT / "one-owner-ab.md")
    monkeypatch.setattr(report, "EXPLAIN_SECTION", KEPT / "explain.md")


@pytest.mark.parametrize(("name", "quick"), [("full", False), ("partial", True)])
def test_a_run_renders_as_before(name: str, quick: bool) -> None:
    ctx = Context(Options(quick=quick), QUICK if quick else FULL, Path("/nonexistent"))
    ctx.results = json.loads((HERE / f"{name}.results.json").read_text(encoding="utf-8"))
    ctx.commands = list(COMMANDS)
    text = report.render(ctx, INFO, "1.00 0.90 0.80", 1234.5, "img")
    assert text + "\n" == (HERE / f"{name}.report.md").read_text(encoding="utf-8")


def test_the_ab_renders_as_before() -> None:
    ctx = Context(Options(rounds=3), FULL, Path("/nonexistent"))
    ctx.results = json.loads((HERE / "ab.results.json").read_text(encoding="utf-8"))
    text = report.render_ab(ctx, INFO, "1.00 0.90 0.80")
    assert text + "\n" == (HERE / "ab.report.md").read_text(encoding="utf-8")
