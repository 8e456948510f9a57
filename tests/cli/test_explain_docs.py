"""docs/disputes.md shows what the command writes: each of its examples, run again."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "disputes.md"
EXAMPLE = re.compile(r"```text\n\$ (referee explain[^\n]*)\n((?:(?!```)[^\n]*\n)*)```")
EXAMPLES = EXAMPLE.findall(DOC.read_text(encoding="utf-8"))


def test_the_page_has_an_example_of_every_verdict_kind() -> None:
    shown = "".join(output for _, output in EXAMPLES)
    for kind in ("FoulRecorded", "PointsScored", "BlockDeclared", "RoundScored", "GameWon"):
        assert f"verdict: {kind}" in shown or f'"type":"{kind}"' in shown, kind
    assert "rejected: nothing changed" in shown
    assert "applied: the action stood" in shown


@pytest.mark.parametrize(("command", "output"), EXAMPLES, ids=[c for c, _ in EXAMPLES])
def test_each_example_is_what_the_command_writes(command: str, output: str) -> None:
    args = shlex.split(command)[1:]
    done = subprocess.run(
        [sys.executable, "-m", "referee", *args],
        capture_output=True,
        check=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.stdout.rstrip("\n") == output.rstrip("\n")
