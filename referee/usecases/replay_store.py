"""``referee replay --database``: an event log fed through the processing step into PostgreSQL.

The log is a partition: its lines are offsets, its stored position says how far it was
processed, so a replay that was killed resumes where its last transaction ended.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import BinaryIO

from sqlalchemy.ext.asyncio import AsyncEngine

from referee.contracts.rejection import FileSource
from referee.contracts.verdicts import encode_canonical
from referee.domain.revisions import NEWEST
from referee.processing.outcome import Tally
from referee.processing.step import InputRecord, ProcessingStep, StepResult
from referee.store.partitions import PartitionMaker, PartitionPolicy
from referee.store.step_store import PostgresStepStore
from referee.usecases.replay import Log, Progress, Records, ReplayReport, opened

REPLAY_GROUP = "replay"


def log_topic(name: str | Path) -> str:
    """Returns the pseudo-topic a log's positions are stored under (its absolute path, or
    the name given to a stream)."""
    return f"file:{name}"


async def replay_into_store(
    log: Log,
    engine: AsyncEngine,
    verdicts_out: BinaryIO | None,
    rejected_out: BinaryIO | None = None,
    *,
    name: str | None = None,
    batch_size: int = 2000,
    max_event_bytes: int,
    cache_games: int = 100_000,
    progress: Progress | None = None,
    rules_revision: int = NEWEST,
    partitions: PartitionPolicy | None = None,
) -> tuple[ReplayReport, int]:
    """Referees a log into the store; returns the report and the lines skipped because an
    earlier run had processed them.

    The log's positions are stored under ``name`` (default: the path, which must be
    absolute); a stream needs a name, the same each time the same stream is replayed.
    """
    if name is None:
        if not isinstance(log, Path):
            raise ValueError("a stream replayed into the store needs a name for its positions")
        name = str(log)
    skipped = 0

    def committed(result: StepResult) -> None:
        nonlocal skipped
        skipped += result.skipped
        for _, processed in result.processed:
            if verdicts_out is not None:
                for verdict in processed.verdicts:
                    verdicts_out.write(encode_canonical(verdict) + b"\n")
            if rejected_out is not None and processed.rejection is not None:
                rejected_out.write(encode_canonical(processed.rejection) + b"\n")

    # The time partitions are made before the first write, then kept ahead beside the writes.
    maker = PartitionMaker(engine, partitions or PartitionPolicy())
    # Batches are pipelined: the next is judged while the one before commits.
    step = ProcessingStep(
        PostgresStepStore(engine, partitions=maker),
        REPLAY_GROUP,
        max_event_bytes=max_event_bytes,
        cache_games=cache_games,
        on_committed=committed,
        rules_revision=rules_revision,
    )
    topic = log_topic(name)
    started = time.perf_counter()
    batch: list[InputRecord] = []
    stream = opened(log)
    try:
        async with maker.kept():
            for number, line in Records(stream, progress):
                batch.append(InputRecord(line, topic, 0, number, FileSource(name, number)))
                if len(batch) >= batch_size:
                    await step.submit(batch)
                    batch = []
            if batch:
                await step.submit(batch)
            await step.settle()
    finally:
        if isinstance(log, Path):
            stream.close()
    tally: Tally = step.referee.tally
    return ReplayReport(tally, time.perf_counter() - started, 1), skipped
