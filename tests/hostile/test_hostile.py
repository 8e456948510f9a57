"""Hostile logs: each record's outcome, as EVENTS.md prescribes it, in memory, in the store
and live.

The logs and their expectations are written by ``build.py`` (the expectations by hand, from
the contract). Every log is refereed three ways: in memory (the ``Referee``, and ``referee
replay`` as a user runs it), through ``referee replay --database`` followed by ``referee
audit``, and through ``referee serve`` on the real broker; each record must come out as
expected every time, and nothing may crash.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.contracts.parse import read_envelope
from referee.contracts.rejection import FileSource
from referee.processing.outcome import Processed
from referee.processing.referee import Referee
from referee.usecases.replay import Records
from tests.hostile import build
from tests.integration.conftest import fetch
from tests.integration.kafka.checks import assert_same_verdicts, stored_verdicts
from tests.integration.kafka.conftest import close_stack, open_stack
from tests.integration.kafka.test_service import wait_ready
from tools.testkit.kafkatools import drain, produce

HERE = Path(__file__).resolve().parent
NAMES = sorted(build.LOGS)


def log_path(name: str) -> Path:
    return HERE / f"{name}.jsonl"


def read_log(path: Path) -> Iterator[tuple[int, bytes]]:
    """Yields (line number, record) for every line of a log that is not blank, as replay
    reads it."""
    with path.open("rb") as f:
        yield from Records(f)


def expectations(name: str) -> dict[int, dict[str, Any]]:
    lines = (HERE / f"{name}.expected.jsonl").read_text(encoding="utf-8").splitlines()
    return {e["line"]: e for e in map(json.loads, lines)}


def check(name: str, line: int, raw: bytes, got: dict[str, Any], where: str) -> None:
    """Compares one record's outcome with its expectation."""
    want = expectations(name)[line]
    label = f"{name}.jsonl line {line} {where} ({want['why'] or 'see build.py'})"
    assert got["outcome"] == want["outcome"], f"{label}: {got}"
    assert got["reason"] == want["reason"], f"{label}: {got}"
    assert got["took_place"] == want["took_place"], f"{label}: {got}"
    if want["detail"] is not None:
        assert want["detail"] in (got["detail"] or ""), f"{label}: {got['detail']}"
    if got["raw"] is not None:
        assert got["raw"] == (want["raw"] if want["raw"] is not None else raw.decode()), label


def outcome_of(p: Processed) -> dict[str, Any]:
    rejection = p.rejection
    return {
        "outcome": p.outcome.value,
        "reason": None if rejection is None else rejection.reason.value,
        "took_place": p.took_place,
        "detail": None if rejection is None else rejection.detail,
        "raw": None if rejection is None else rejection.raw,
    }


@pytest.mark.parametrize("name", NAMES)
def test_the_committed_logs_are_what_build_py_writes(name: str) -> None:
    log, expected = build.render(name)
    assert log_path(name).read_bytes() == log, "run: uv run python -m tests.hostile.build"
    assert (HERE / f"{name}.expected.jsonl").read_bytes() == expected


@pytest.mark.parametrize("name", NAMES)
def test_every_record_comes_out_as_events_md_says_in_memory(name: str) -> None:
    referee = Referee()
    seen = []
    path = log_path(name)
    for number, raw in read_log(path):
        seen.append(number)
        check(
            name, number, raw, outcome_of(referee.process(raw, FileSource(str(path), number))), ""
        )
    assert seen == sorted(expectations(name)), "blank lines are skipped, every other is a record"


@pytest.mark.parametrize("name", NAMES)
def test_referee_replay_runs_every_hostile_log_to_the_end(name: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "referee", "replay", str(log_path(name)), "--workers", "2"],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    rejected = sum(1 for e in expectations(name).values() if e["outcome"] == "rejected")
    assert f"rejections: {rejected} ".encode() in done.stderr


def test_verdicts_copy_occurred_at_exactly_as_sent() -> None:
    verdicts = [v for v in _replay_verdicts("rfc3339") if v["cause_seq"] == 3]
    assert [v["occurred_at"] for v in verdicts] == ["2026-11-30t12:00:00z"]


def test_a_player_named_boneyard_wins_a_blocked_round_like_any_player() -> None:
    scored = [v for v in _replay_verdicts("player_names") if v["type"] == "RoundScored"]
    assert [(v["winners"], v["pip_counts"], v["awards"]) for v in scored] == [
        (["boneyard"], {"boneyard": 0, "null": 10}, {"boneyard": 10, "null": 0})
    ]


def _replay_verdicts(name: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "referee", "replay", str(log_path(name))],
        capture_output=True,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


JOURNAL = (
    "SELECT j.source_offset, j.outcome, j.reason, j.took_place, d.body FROM journal j "
    "LEFT JOIN dead_letters d ON d.journal_id = j.id ORDER BY j.id"
)


def stored_outcome(row: Any) -> dict[str, Any]:
    body = None if row["body"] is None else json.loads(row["body"])
    return {
        "outcome": row["outcome"],
        "reason": row["reason"],
        "took_place": row["took_place"],
        "detail": None if body is None else body["detail"],
        "raw": None if body is None else body["raw"],
    }


@pytest.mark.postgres
@pytest.mark.parametrize("name", NAMES)
async def test_every_record_comes_out_the_same_through_the_store_and_the_audit_passes(
    name: str, migrated_database: str
) -> None:
    path = log_path(name)
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "referee", "replay", str(path), "--database", migrated_database],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    records = dict(read_log(path))
    rows = await fetch(migrated_database, JOURNAL)
    assert [r["source_offset"] for r in rows] == sorted(expectations(name))
    for row in rows:
        number = row["source_offset"]
        check(name, number, records[number], stored_outcome(row), "in the store")
    audited = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "referee", "audit", "--database", migrated_database],
        capture_output=True,
        text=True,
        check=False,
    )
    assert audited.returncode == 0, audited.stdout + audited.stderr
    assert "audit passed" in audited.stdout


@pytest.mark.kafka
async def test_every_hostile_record_comes_out_the_same_through_the_live_service(
    bootstrap: str, admin_url: str, tmp_path: Path
) -> None:
    stream: list[tuple[str, int, bytes]] = [
        (name, number, raw) for name in NAMES for number, raw in read_log(log_path(name))
    ]
    expected_verdicts = [
        json.dumps(v, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        for name in NAMES
        for v in _replay_verdicts(name)
    ]
    stack = await open_stack(bootstrap, admin_url, tmp_path, partitions=1)
    try:
        keyed = [(_key(raw), raw) for _, _, raw in stream]
        await produce(bootstrap, stack.topics.input, keyed)
        _, port = stack.start()
        await wait_ready(port)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            count = await fetch(stack.database_url, "SELECT count(*) AS n FROM journal")
            if count[0]["n"] >= len(stream):
                break
            await asyncio.sleep(0.5)
        rows = await fetch(stack.database_url, JOURNAL)
        assert [r["source_offset"] for r in rows] == list(range(len(stream))), stack.logs()
        for (name, number, raw), row in zip(stream, rows, strict=True):
            check(name, number, raw, stored_outcome(row), "live")
        assert_same_verdicts(
            await stored_verdicts(stack.database_url), expected_verdicts, "in PostgreSQL"
        )
        published = await drain(
            bootstrap, stack.topics.verdicts, expect=len(expected_verdicts), quiet_seconds=3
        )
        assert [v.decode() for *_, v, _ in published] == expected_verdicts
        rejected = [
            raw
            for name, number, raw in stream
            if expectations(name)[number]["outcome"] == "rejected"
        ]
        dead = await drain(bootstrap, stack.topics.dlq, expect=len(rejected), quiet_seconds=3)
        assert sorted(json.loads(v)["raw"].encode() for *_, v, _ in dead) == sorted(rejected)
    finally:
        await close_stack(stack, admin_url)


def _key(raw: bytes) -> bytes | None:
    game_id = read_envelope(raw)[0]
    return None if game_id is None else game_id.encode()
