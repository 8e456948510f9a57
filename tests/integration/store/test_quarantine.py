"""One record never stops the store: a record the referee fails on is quarantined.

Two faults, each the test's own: a judge that fails on one chosen play (the referee catches it
per record), and a store that refuses one chosen record (the step splits its batch until that
record is alone). Either way the record is journaled and dead-lettered as ``internal_error``,
takes no place, and every other record is judged exactly as without the fault. An outage is
not a defect: it is raised for a retry and quarantines nothing.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from referee.domain import revisions
from referee.processing.rows import Fenced, StepRows, Written
from referee.simulate import SimulationOptions, simulate
from referee.store.database import create_engine
from referee.store.step_store import PostgresStepStore
from referee.store.views import StoreViews
from referee.usecases.audit import audit
from referee.usecases.replay import replay
from referee.usecases.replay_store import replay_into_store
from tests.faults import chosen_play, faulty_judge, play_of, with_judge_1
from tests.integration.conftest import fetch

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("quarantine") / "stream.jsonl"
    options = SimulationOptions(games=30, seed=21, concurrency=10)
    path.write_bytes(b"".join(line + b"\n" for _, line in simulate(options)))
    return path


def in_memory(log: Path) -> tuple[list[bytes], list[dict[str, Any]]]:
    verdicts, rejected = io.BytesIO(), io.BytesIO()
    replay(log, verdicts, rejected, workers=1)
    return verdicts.getvalue().splitlines(), [
        json.loads(line) for line in rejected.getvalue().splitlines()
    ]


async def into_store(log: Path, url: str, batch_size: int) -> tuple[list[bytes], list[bytes]]:
    engine = create_engine(url)
    verdicts, rejected = io.BytesIO(), io.BytesIO()
    try:
        await replay_into_store(
            log, engine, verdicts, rejected, batch_size=batch_size, max_event_bytes=65536
        )
    finally:
        await engine.dispose()
    return verdicts.getvalue().splitlines(), rejected.getvalue().splitlines()


def game_of(line: bytes) -> str:
    return str(json.loads(line)["game_id"])


async def assert_quarantined(
    url: str, log: Path, number: int, line: bytes, cause: str
) -> dict[str, Any]:
    """Checks the journal row and the dead letter of the quarantined line; returns the latter."""
    rows = await fetch(
        url,
        "SELECT outcome, reason, took_place, raw FROM journal WHERE source_offset = $1",
        number,
    )
    assert [(r["outcome"], r["reason"], r["took_place"], bytes(r["raw"])) for r in rows] == [
        ("rejected", "internal_error", False, line)
    ]
    dead = await fetch(url, "SELECT body FROM dead_letters WHERE reason = 'internal_error'")
    assert len(dead) == 1
    rejection: dict[str, Any] = json.loads(dead[0]["body"])
    assert rejection["raw"] == line.decode()
    assert rejection["source"] == {"file": str(log), "kind": "file", "line": number}
    assert cause in rejection["detail"]
    event = json.loads(line)
    assert (rejection["game_id"], rejection["seq"], rejection["event_id"]) == (
        event["game_id"],
        event["seq"],
        event["event_id"],
    )
    return rejection


def assert_rest_as_without_the_fault(
    clean: tuple[list[bytes], list[dict[str, Any]]],
    faulty: tuple[list[bytes], list[dict[str, Any]]],
    faulted_game: str,
) -> None:
    """Every other game is judged exactly as without the fault; the faulted game's records
    after the quarantined one are seq gaps (it took no place)."""
    clean_verdicts, clean_rejections = clean
    verdicts, rejections = faulty
    assert [v for v in verdicts if game_of(v) != faulted_game] == [
        v for v in clean_verdicts if game_of(v) != faulted_game
    ]
    others = [r for r in rejections if r["game_id"] != faulted_game]
    assert others == [r for r in clean_rejections if r["game_id"] != faulted_game]
    mine = [r for r in rejections if r["game_id"] == faulted_game]
    assert len(mine) > 1
    assert mine[0]["reason"] == "internal_error"
    assert {r["reason"] for r in mine[1:]} == {"seq_gap"}


async def test_a_judge_that_fails_on_one_record_quarantines_that_record_only(
    migrated_database: str, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    number, line = chosen_play(log)
    clean = in_memory(log)
    monkeypatch.setattr(revisions, "REVISIONS", with_judge_1(faulty_judge(play_of(line))))
    memory = in_memory(log)

    verdicts, rejected = await into_store(log, migrated_database, batch_size=40)

    assert verdicts == memory[0], "the store judges as the in-memory replay with the same fault"
    assert [json.loads(r) for r in rejected] == memory[1]
    rejection = await assert_quarantined(migrated_database, log, number, line, "InjectedFaultError")
    assert "tests/faults.py" in rejection["detail"]
    assert_rest_as_without_the_fault(clean, memory, game_of(line))

    monkeypatch.undo()  # the audit runs without the fault, as a later version would
    engine = create_engine(migrated_database)
    try:
        report = await audit(StoreViews(engine), 65536)
    finally:
        await engine.dispose()
    assert report.passed, report.differences
    assert report.quarantined == 1


def refusing(chosen: bytes, calls: list[int]) -> Callable[..., Any]:
    """A ``write`` that refuses the chosen record as PostgreSQL refuses a value it cannot
    store (SQLSTATE 22021), unless it is journaled as rejected."""
    real = PostgresStepStore.write

    async def write(
        store: PostgresStepStore, group_id: str, fence: Sequence[Fenced], rows: StepRows
    ) -> Written:
        calls.append(len(rows.journal))
        for row in rows.journal:
            if row.raw == chosen and row.reason != "internal_error":
                raise asyncpg.exceptions.CharacterNotInRepertoireError(
                    "invalid byte sequence for encoding UTF8 (injected)"
                )
        return await real(store, group_id, fence, rows)

    return write


async def test_a_record_the_store_refuses_is_isolated_by_splitting_its_batch(
    migrated_database: str, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    number, line = chosen_play(log)
    clean = in_memory(log)
    calls: list[int] = []
    monkeypatch.setattr(PostgresStepStore, "write", refusing(line, calls))

    verdicts, rejected = await into_store(log, migrated_database, batch_size=64)

    await assert_quarantined(migrated_database, log, number, line, "CharacterNotInRepertoireError")
    assert_rest_as_without_the_fault(
        clean, (verdicts, [json.loads(r) for r in rejected]), game_of(line)
    )
    # The batch of 64 failed, then halves of 32, 16, 8, 4, 2 and 1 around the record: the
    # split took log2(64) + 1 more attempts than the batches themselves.
    records = len(log.read_bytes().splitlines())  # noqa: ASYNC240 - a small file
    batches = -(-records // 64)
    assert len(calls) >= batches + 6
    rows = await fetch(migrated_database, "SELECT count(*) AS n FROM journal")
    assert rows[0]["n"] == records
    monkeypatch.undo()
    engine = create_engine(migrated_database)
    try:
        report = await audit(StoreViews(engine), 65536)
    finally:
        await engine.dispose()
    assert report.passed, report.differences


async def test_an_outage_is_raised_for_a_retry_and_quarantines_nothing(
    migrated_database: str, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = len(log.read_bytes().splitlines())  # noqa: ASYNC240 - a small file
    real = PostgresStepStore.write
    failures = [asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed")]

    async def write(
        store: PostgresStepStore, group_id: str, fence: Sequence[Fenced], rows: StepRows
    ) -> Written:
        if failures:
            raise failures.pop()
        return await real(store, group_id, fence, rows)

    monkeypatch.setattr(PostgresStepStore, "write", write)
    with pytest.raises(asyncpg.exceptions.ConnectionDoesNotExistError):
        await into_store(log, migrated_database, batch_size=64)
    assert (await fetch(migrated_database, "SELECT count(*) AS n FROM journal"))[0]["n"] == 0

    await into_store(log, migrated_database, batch_size=64)  # the retry, once the store is back
    rows = await fetch(migrated_database, "SELECT count(*) AS n FROM journal")
    assert rows[0]["n"] == records
    quarantined = await fetch(
        migrated_database, "SELECT count(*) AS n FROM journal WHERE reason = 'internal_error'"
    )
    assert quarantined[0]["n"] == 0
