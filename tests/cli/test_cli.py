"""The ``referee`` command line, run as a real process: ``replay`` and ``simulate``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from referee.contracts.verdicts import decode_verdict

REASONS = {
    "malformed_json",
    "schema_violation",
    "unknown_type",
    "too_large",
    "unknown_game",
    "game_already_started",
    "unknown_player",
    "bad_deal",
    "round_not_started",
    "wrong_round",
    "round_over",
    "game_over",
    "seq_gap",
    "seq_conflict",
}


def referee(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "referee", *map(str, args)],
        capture_output=True,
        check=check,
        timeout=120,
    )


@pytest.fixture(scope="module")
def bad_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A simulated log of 40 games with bad lines and re-sent events."""
    log = tmp_path_factory.mktemp("cli") / "games.jsonl"
    referee(
        "simulate", "--games", "40", "--seed", "7", "--bad-rate", "0.05",
        "--duplicate-rate", "0.05", "--foul-rate", "0.05", "--output", log,
    )  # fmt: skip
    # a blank line is skipped; a non-UTF-8 line and a line of two events are rejected
    with log.open("ab") as f:
        f.write(b"\n   \n\xff\xfe not json\n{}{}\n")
    return log


@pytest.fixture(scope="module")
def replayed(
    bad_log: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[subprocess.CompletedProcess[bytes], Path]:
    rejected = tmp_path_factory.mktemp("out") / "rejected.jsonl"
    return referee("replay", bad_log, "--rejected", rejected, "--workers", "1"), rejected


def test_replay_writes_canonical_verdicts_to_stdout(
    replayed: tuple[subprocess.CompletedProcess[bytes], Path],
) -> None:
    result, _ = replayed
    lines = result.stdout.splitlines()
    assert lines
    assert result.stdout.endswith(b"\n")
    for line in lines:
        verdict = decode_verdict(line)
        assert verdict.schema_version == 1
        as_json = json.loads(line)
        assert line == json.dumps(as_json, sort_keys=True, separators=(",", ":"),
                                  ensure_ascii=False).encode()  # fmt: skip
    kinds = {json.loads(line)["type"] for line in lines}
    assert {"FoulRecorded", "RoundScored"} <= kinds


def test_replay_writes_event_rejected_lines(
    replayed: tuple[subprocess.CompletedProcess[bytes], Path], bad_log: Path
) -> None:
    _, rejected = replayed
    records = [json.loads(line) for line in rejected.read_bytes().splitlines()]
    assert records
    assert all(r["type"] == "EventRejected" for r in records)
    assert {r["reason"] for r in records} <= REASONS
    assert {"malformed_json", "unknown_type", "too_large", "unknown_game"} <= {
        r["reason"] for r in records
    }
    assert all(r["detail"] for r in records)
    assert all(r["source"]["kind"] == "file" for r in records)
    assert all(r["source"]["file"] == str(bad_log) for r in records)
    lines = bad_log.read_bytes().split(b"\n")
    for r in records:
        original = lines[r["source"]["line"] - 1].rstrip(b"\r")  # the line as written
        if r["raw_encoding"] == "utf-8":
            assert r["raw"].encode() == original
    (garbage,) = [r for r in records if r["raw_encoding"] == "base64"]
    assert garbage["reason"] == "malformed_json"


def test_replay_summarises_on_stderr(
    replayed: tuple[subprocess.CompletedProcess[bytes], Path],
) -> None:
    result, rejected = replayed
    summary = result.stderr.decode()
    records = [json.loads(line) for line in rejected.read_bytes().splitlines()]
    events = re.search(r"events: (\d+) records, (\d+) judged \((.+)\)", summary)
    assert events is not None, summary
    verdicts = re.search(r"verdicts: (\d+) \((.+)\)", summary)
    assert verdicts is not None, summary
    assert int(verdicts.group(1)) == len(result.stdout.splitlines())
    for kind in ("FoulRecorded", "RoundScored"):
        count = sum(1 for line in result.stdout.splitlines() if json.loads(line)["type"] == kind)
        assert f"{kind} {count}" in verdicts.group(2)
    rejections = re.search(r"rejections: (\d+) \((.+)\)", summary)
    assert rejections is not None, summary
    assert int(rejections.group(1)) == len(records)
    for reason in {r["reason"] for r in records}:
        count = sum(1 for r in records if r["reason"] == reason)
        assert f"{reason} {count}" in rejections.group(2)
    duplicates = re.search(r"duplicates: (\d+)", summary)
    assert duplicates is not None, summary
    assert int(duplicates.group(1)) > 0
    assert int(events.group(1)) == int(events.group(2)) + len(records) + int(duplicates.group(1))
    assert re.search(r"[\d,]+ events/s", summary), summary


def test_replay_counts_every_non_blank_line(
    replayed: tuple[subprocess.CompletedProcess[bytes], Path], bad_log: Path
) -> None:
    result, _ = replayed
    non_blank = sum(1 for line in bad_log.read_bytes().split(b"\n") if line.strip())
    assert f"events: {non_blank} records" in result.stderr.decode()


def test_two_replays_are_byte_identical(
    bad_log: Path, replayed: tuple[subprocess.CompletedProcess[bytes], Path], tmp_path: Path
) -> None:
    first, first_rejected = replayed
    output = tmp_path / "verdicts.jsonl"
    rejected = tmp_path / "rejected.jsonl"
    referee("replay", bad_log, "--output", output, "--rejected", rejected, "--workers", "2")
    assert output.read_bytes() == first.stdout
    assert rejected.read_bytes() == first_rejected.read_bytes()


def test_replay_of_a_missing_log_fails(tmp_path: Path) -> None:
    result = referee("replay", tmp_path / "absent.jsonl", check=False)
    assert result.returncode == 2
    assert b"no such log" in result.stderr


def test_replay_honours_max_event_bytes(tmp_path: Path) -> None:
    log = tmp_path / "one.jsonl"
    referee("simulate", "--games", "1", "--seed", "1", "--output", log)
    rejected = tmp_path / "rejected.jsonl"
    referee("replay", log, "--rejected", rejected, "--max-event-bytes", "100")
    records = [json.loads(line) for line in rejected.read_bytes().splitlines()]
    assert records
    assert {r["reason"] for r in records} <= {"too_large", "unknown_game"}
    assert records[0]["reason"] == "too_large"


def test_simulate_is_deterministic_by_seed(tmp_path: Path) -> None:
    args = ("simulate", "--games", "15", "--bad-rate", "0.1", "--duplicate-rate", "0.1")
    one, two, other = tmp_path / "1", tmp_path / "2", tmp_path / "3"
    referee(*args, "--seed", "11", "--output", one)
    referee(*args, "--seed", "11", "--output", two)
    referee(*args, "--seed", "12", "--output", other)
    assert one.read_bytes() == two.read_bytes()
    assert one.read_bytes() != other.read_bytes()
    stdout = referee(*args, "--seed", "11").stdout
    assert stdout == one.read_bytes()


def test_simulate_with_default_rules(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    referee("simulate", "--games", "5", "--seed", "2", "--rules", "default", "--output", log)
    starts = [json.loads(line) for line in log.read_bytes().splitlines()]
    starts = [e for e in starts if e["type"] == "GameStarted"]
    assert len(starts) == 5
    assert all(e["rules"] == {} for e in starts)


def _starts(log: Path) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in log.read_bytes().splitlines()]
    return [e for e in events if e["type"] == "GameStarted"]


def test_simulate_forces_a_family_on_every_game(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    referee(
        "simulate", "--games", "12", "--seed", "4", "--layout", "trains", "--teams",
        "--output", log,
    )  # fmt: skip
    starts = _starts(log)
    assert len(starts) == 12
    for e in starts:
        rules = e["rules"]
        assert isinstance(rules, dict)
        assert rules["layout"] == "trains"
        assert rules["scoring"] == "award"  # what teams need in trains
        assert isinstance(e["teams"], dict)
    deals = [json.loads(line) for line in log.read_bytes().splitlines()]
    assert all("engine" in e for e in deals if e["type"] == "RoundStarted")


def test_simulate_refuses_flags_that_cannot_make_a_game() -> None:
    done = referee("simulate", "--games", "1", "--scoring", "penalty", "--teams", check=False)
    assert done.returncode == 2
    assert b"--scoring penalty cannot go with --teams" in done.stderr
    done = referee("simulate", "--games", "1", "--layout", "trains", "--play-scoring", "fives",
                   check=False)  # fmt: skip
    assert done.returncode == 2
    assert b"not trains" in done.stderr


def test_simulate_edition1_rules_are_edition_1s_random_rules(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    referee("simulate", "--games", "40", "--seed", "9", "--rules", "edition1", "--output", log)
    edition2 = {"layout", "scoring", "play_scoring", "rounds", "block_winner", "boneyard_reserve"}
    starts = _starts(log)
    assert any(e["rules"] for e in starts)
    assert all(not edition2 & set(e["rules"]) and "teams" not in e for e in starts)


def test_simulate_keyed_prefixes_the_game_id_and_a_tab(tmp_path: Path) -> None:
    plain, keyed = tmp_path / "plain", tmp_path / "keyed"
    referee("simulate", "--games", "8", "--seed", "5", "--bad-rate", "0.1", "--output", plain)
    referee(
        "simulate", "--games", "8", "--seed", "5", "--bad-rate", "0.1", "--keyed",
        "--output", keyed,
    )  # fmt: skip
    plain_lines = plain.read_bytes().splitlines()
    keyed_lines = keyed.read_bytes().splitlines()
    assert len(plain_lines) == len(keyed_lines)
    for bare, prefixed in zip(plain_lines, keyed_lines, strict=True):
        key, _, line = prefixed.partition(b"\t")
        assert line == bare
        assert key
        try:
            game_id = json.loads(line).get("game_id")
        except json.JSONDecodeError:
            continue
        if isinstance(game_id, str):
            assert key.decode() == game_id


def test_a_simulated_clean_log_replays_without_rejections(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    referee("simulate", "--games", "30", "--seed", "3", "--output", log)
    rejected = tmp_path / "rejected.jsonl"
    result = referee("replay", log, "--rejected", rejected)
    assert rejected.read_bytes() == b""
    assert "rejections: 0 (none)" in result.stderr.decode()
    assert "duplicates: 0" in result.stderr.decode()
