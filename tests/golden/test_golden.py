"""The golden logs: each replay equals its hand-written verdicts byte for byte (README.md)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from referee.usecases.replay import replay

HERE = Path(__file__).parent
LOGS = sorted(
    log
    for log in HERE.glob("*.jsonl")
    if not log.name.endswith(".verdicts.jsonl")
    and log.with_name(log.name.removesuffix(".jsonl") + ".verdicts.jsonl").is_file()
)


def expected_of(log: Path) -> Path:
    return log.with_name(log.name.removesuffix(".jsonl") + ".verdicts.jsonl")


def test_there_are_golden_logs() -> None:
    assert len(LOGS) >= 8


@pytest.mark.parametrize("log", LOGS, ids=[log.stem for log in LOGS])
def test_replay_matches_the_expected_verdicts(log: Path) -> None:
    verdicts, rejected = io.BytesIO(), io.BytesIO()
    report = replay(log, verdicts, rejected)
    assert rejected.getvalue() == b""
    assert sum(report.tally.rejections.values()) == 0
    assert report.tally.duplicates == 0
    got = verdicts.getvalue().decode().splitlines()
    want = expected_of(log).read_bytes().decode().splitlines()
    assert got == want  # line by line first, for a readable diff
    assert verdicts.getvalue() == expected_of(log).read_bytes()


@pytest.mark.parametrize("log", LOGS, ids=[log.stem for log in LOGS])
def test_replay_with_two_workers_matches_too(log: Path) -> None:
    verdicts = io.BytesIO()
    replay(log, verdicts, None, workers=2)
    assert verdicts.getvalue() == expected_of(log).read_bytes()
