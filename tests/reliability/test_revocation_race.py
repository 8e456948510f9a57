"""A partition revoked while a batch of it is in flight: the race the rebalance storm hits.

aiokafka calls the rebalance listener from its coordinator task, concurrently with the batch
handler: ``on_partitions_revoked`` -> ``ProcessingStep.forget`` empties the game
cache while ``ProcessingStep.process`` is awaiting the database. These tests put the
revocation at exactly those awaits (deterministically) and check that the step either gives
up or judges correctly, but never commits a verdict or rejection made from a missing or
stale game state.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from referee.contracts.rejection import KafkaSource
from referee.processing.step import InputRecord, ProcessingStep
from referee.store.database import create_engine
from referee.store.step_store import PostgresStepReads, PostgresStepStore
from tests.integration.conftest import fetch
from tests.reliability.conftest import Simulated

pytestmark = [pytest.mark.reliability, pytest.mark.postgres]

TOPIC = "in"


def records_of_one_game(log: Path) -> list[InputRecord]:
    lines = [line for line in log.read_bytes().splitlines() if line.strip()]
    games = Counter(json.loads(line)["game_id"] for line in lines)
    game = games.most_common(1)[0][0]
    mine = [line for line in lines if json.loads(line)["game_id"] == game]
    return [
        InputRecord(raw, TOPIC, 0, i, KafkaSource(TOPIC, 0, i), game) for i, raw in enumerate(mine)
    ]


async def take_back(step: ProcessingStep) -> None:
    """The step adopts the partition from where the store has it, as a new owner does."""
    stored = await step.store.load_positions(step.group_id, TOPIC, [0])
    await step.adopt(TOPIC, {0: (None, stored.get(0, -1))})


def revoke_concurrently(step: ProcessingStep, pending: list[asyncio.Future[object]]) -> None:
    """The listener's revocation, as the coordinator task would run it (sync or async API)."""
    result = step.forget({(TOPIC, 0)})
    if inspect.isawaitable(result):
        pending.append(asyncio.ensure_future(result))


async def revoke_now(step: ProcessingStep) -> None:
    result = step.forget({(TOPIC, 0)})
    if inspect.isawaitable(result):
        await result


async def outcomes(url: str, first: int, last: int) -> list[tuple[int, str, str | None]]:
    rows = await fetch(
        url,
        "SELECT source_offset, outcome, reason FROM journal "
        "WHERE source_offset BETWEEN $1 AND $2 ORDER BY source_offset",
        first,
        last,
    )
    return [(r["source_offset"], r["outcome"], r["reason"]) for r in rows]


async def test_revocation_while_a_batch_reads_prints_commits_no_misjudgement(
    migrated_database: str, simulated: Simulated, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = records_of_one_game(simulated(20, 61, "--foul-rate", "0"))
    assert len(records) >= 30
    engine = create_engine(migrated_database)
    pending: list[asyncio.Future[object]] = []
    step = ProcessingStep(PostgresStepStore(engine), "g")
    try:
        await step.process(records[:10])  # the game is now stored and cached
        real = PostgresStepReads.load_prints

        async def revoked_meanwhile(*args: Any, **kwargs: Any) -> Any:
            revoke_concurrently(step, pending)  # on_partitions_revoked, mid-batch
            await asyncio.sleep(0)
            return await real(*args, **kwargs)

        monkeypatch.setattr(PostgresStepReads, "load_prints", revoked_meanwhile)
        # giving up (and retrying later) would be a correct outcome
        with contextlib.suppress(Exception):
            await step.process(records[10:20])
        await asyncio.gather(*pending)
        monkeypatch.undo()
    finally:
        await engine.dispose()
    committed = await outcomes(migrated_database, 10, 19)
    wrong = [row for row in committed if row[1] == "rejected"]
    assert not wrong, f"events judged against an emptied cache were committed: {wrong[:3]}"


async def test_revoked_partition_leaves_no_stale_game_in_the_cache(
    migrated_database: str, simulated: Simulated, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = records_of_one_game(simulated(20, 61, "--foul-rate", "0"))
    assert len(records) >= 40
    engine = create_engine(migrated_database)
    pending: list[asyncio.Future[object]] = []
    a = ProcessingStep(PostgresStepStore(engine), "g")
    b = ProcessingStep(PostgresStepStore(engine), "g")
    try:
        await b.process(records[:10])
        # instance a owns the partition and loads the game, but the partition is revoked
        # while it waits for the stored versions; its batch still commits (it holds the fence)
        real = PostgresStepReads.load_games

        async def revoked_meanwhile(*args: Any, **kwargs: Any) -> Any:
            loaded = await real(*args, **kwargs)
            revoke_concurrently(a, pending)
            await asyncio.sleep(0)
            return loaded

        monkeypatch.setattr(PostgresStepReads, "load_games", revoked_meanwhile)
        await take_back(a)
        with contextlib.suppress(Exception):  # giving up is a correct outcome
            await a.process(records[10:20])
        await asyncio.gather(*pending)
        monkeypatch.undo()
        # b takes the partition over and moves the game on
        await revoke_now(b)
        await take_back(b)
        done = await outcomes(migrated_database, 10, 19)
        start = 10 if not done else 20
        await b.process(records[start:30])
        # the partition comes back to a: it must not judge from the state it cached before
        await take_back(a)
        await a.process(records[30:40])
    finally:
        await engine.dispose()
    committed = await outcomes(migrated_database, 0, 39)
    assert len(committed) == 40
    wrong = [row for row in committed if row[1] == "rejected"]
    assert not wrong, f"events judged against a stale cached state were committed: {wrong[:3]}"
