"""One record never stops a partition: ``referee serve`` with a judge that fails on one record.

The service runs as ``python -m tests.faults serve``: the real referee with the test's own
faulty judge put in place, failing on one chosen play of a simulated stream. The record must
reach the dead-letter topic as ``internal_error``, take no place in its game, and everything
else must be judged exactly as an in-memory replay with the same fault judges it (and, outside
the faulted game, exactly as without the fault). The partition must reach its end: nothing
waits behind the record, no batch is retried for it.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from referee.domain import revisions
from referee.usecases.replay import replay as replay_log
from tests.faults import chosen_play, fault_env, faulty_judge, play_of, with_judge_1
from tests.integration.conftest import fetch
from tests.integration.kafka.conftest import Replay, Stack
from tests.integration.kafka.test_service import http_get, wait_ready
from tests.reliability.harness import SOAK, Figures, verify
from tools.testkit.kafkatools import keyed_lines, produce

pytestmark = [pytest.mark.reliability, pytest.mark.kafka]

GAMES = 600 if SOAK else 150


def in_memory_with(log: Path, line: bytes | None) -> Replay:
    """``referee replay`` in this process, with the faulty judge when ``line`` is given."""
    saved = revisions.REVISIONS
    if line is not None:
        revisions.REVISIONS = with_judge_1(faulty_judge(play_of(line)))
    try:
        verdicts, rejected, summary = io.BytesIO(), io.BytesIO(), None
        summary = replay_log(log, verdicts, rejected, workers=1)
    finally:
        revisions.REVISIONS = saved
    return Replay(
        [v.decode() for v in verdicts.getvalue().splitlines()],
        [json.loads(r) for r in rejected.getvalue().splitlines()],
        summary.tally.duplicates,
    )


async def test_a_record_the_judge_fails_on_is_dead_lettered_and_the_partition_goes_on(
    make_stack: Callable[..., Any], simulated: Callable[..., Path], tmp_path: Path
) -> None:
    figures = Figures("quarantine_live")
    stack: Stack = await make_stack()
    log = simulated(GAMES, 31, "--bad-rate", "0.01", "--duplicate-rate", "0.01")
    number, line = chosen_play(log)
    faulted_game = json.loads(line)["game_id"]
    expected = in_memory_with(log, line)
    clean = in_memory_with(log, None)
    quarantined = [r for r in expected.rejections if r["reason"] == "internal_error"]
    assert [q["raw"] for q in quarantined] == [line.decode()], "the fault hits the chosen play"

    await produce(stack.bootstrap, stack.topics.input, keyed_lines(log))
    started = time.monotonic()
    _, port = stack.start(module="tests.faults", extra_env=fault_env(line))
    await wait_ready(port)
    await verify(stack, log, tmp_path, figures, expected=expected)
    figures["caught_up_seconds"] = round(time.monotonic() - started, 1)

    rows = await fetch(
        stack.database_url,
        "SELECT source_partition, source_offset, outcome, took_place, raw FROM journal "
        "WHERE reason = 'internal_error'",
    )
    assert [(r["outcome"], r["took_place"], bytes(r["raw"])) for r in rows] == [
        ("rejected", False, line)
    ]
    partition = rows[0]["source_partition"]
    ends = await fetch(
        stack.database_url,
        "SELECT max(source_offset) AS last, count(*) AS n FROM journal WHERE source_partition = $1",
        partition,
    )
    assert ends[0]["last"] == ends[0]["n"] - 1, "the partition was processed to its end"
    figures["partition_records_after_the_fault"] = int(ends[0]["last"] - rows[0]["source_offset"])

    # Outside the faulted game, exactly the verdicts of a run without the fault.
    assert [v for v in expected.verdicts if json.loads(v)["game_id"] != faulted_game] == [
        v for v in clean.verdicts if json.loads(v)["game_id"] != faulted_game
    ]
    # The faulted game stops at the record, which took no place: its later events are gaps.
    fault_seq = json.loads(line)["seq"]
    mine = [v for v in map(json.loads, expected.verdicts) if v["game_id"] == faulted_game]
    assert all(v["cause_seq"] < fault_seq for v in mine)
    gaps = [
        r for r in expected.rejections if r["game_id"] == faulted_game and r["reason"] == "seq_gap"
    ]
    assert gaps, "the game's next events wait for the record to be sent again"
    assert all(r["seq"] > fault_seq for r in gaps)

    status, metrics = await asyncio.to_thread(http_get, port, "/metrics")
    assert status == 200
    assert "referee_quarantined_total 1.0" in metrics
    assert 'referee_rejections_total{reason="internal_error"} 1.0' in metrics
    errors = re.findall(r"^referee_batch_errors_total (\S+)$", metrics, re.MULTILINE)
    assert errors == ["0.0"], "no batch failed: the fault was isolated inside its batch"
    figures["batch_errors"] = 0
    figures["quarantined"] = 1
    figures["line"] = number

    audited = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "referee", "audit", "--database", stack.database_url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert audited.returncode == 0, audited.stdout + audited.stderr
    assert "quarantined records (internal_error): 1" in audited.stdout
    figures.emit()
