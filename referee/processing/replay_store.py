"""``referee replay --database``: an event log fed through the processing step into PostgreSQL.

The log is a partition: its lines are offsets, its stored position says how far it was
processed, so a replay that was killed resumes where its last transaction ended.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from sqlalchemy.ext.asyncio import AsyncEngine

from referee.contracts.rejection import FileSource
from referee.contracts.verdicts import encode_canonical
from referee.processing.outcome import Tally
from referee.processing.replay import PROGRESS_EVERY, ReplayReport, read_log
from referee.processing.step import InputRecord, ProcessingStep
from referee.store.step_store import PostgresStepStore

REPLAY_GROUP = "replay"


def log_topic(log: Path) -> str:
    """Returns the pseudo-topic a log's positions are stored under (``log`` is absolute)."""
    return f"file:{log}"


async def replay_into_store(
    log: Path,
    engine: AsyncEngine,
    verdicts_out: BinaryIO | None,
    rejected_out: BinaryIO | None = None,
    *,
    batch_size: int = 2000,
    max_event_bytes: int,
    cache_games: int = 100_000,
    progress: Callable[[int], None] | None = None,
) -> tuple[ReplayReport, int]:
    """Referees a log (an absolute path) into the store; returns the report and the lines
    skipped because an earlier run had processed them."""
    step = ProcessingStep(
        PostgresStepStore(engine),
        REPLAY_GROUP,
        max_event_bytes=max_event_bytes,
        cache_games=cache_games,
    )
    topic = log_topic(log)
    name = str(log)
    started = time.perf_counter()
    skipped = 0
    batch: list[InputRecord] = []

    async def flush() -> None:
        nonlocal skipped
        result = await step.process(batch)
        skipped += result.skipped
        for _, processed in result.processed:
            if verdicts_out is not None:
                for verdict in processed.verdicts:
                    verdicts_out.write(encode_canonical(verdict) + b"\n")
            if rejected_out is not None and processed.rejection is not None:
                rejected_out.write(encode_canonical(processed.rejection) + b"\n")
        batch.clear()

    for number, line in read_log(log):
        batch.append(InputRecord(line, topic, 0, number, FileSource(name, number)))
        if len(batch) >= batch_size:
            await flush()
        if progress is not None and number % PROGRESS_EVERY == 0:
            progress(number)
    if batch:
        await flush()
    tally: Tally = step.referee.tally
    return ReplayReport(tally, time.perf_counter() - started, 1), skipped
