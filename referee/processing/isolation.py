"""One record never stops a partition: a batch that fails on a record is halved until the
record is alone, and that record is quarantined (docs/reliability.md)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from referee.processing.records import InputRecord, PositionMoved, StepResult
from referee.processing.referee import failure_detail

log = logging.getLogger("referee.step")

Process = Callable[[list[InputRecord]], Awaitable[StepResult]]
"""Processes records in one transaction (raises on failure, keeping nothing)."""
Quarantine = Callable[[InputRecord, str], Awaitable[StepResult]]
"""Appends one record as rejected (``internal_error``) with the failure's detail."""


async def isolating(
    records: list[InputRecord],
    process: Process,
    quarantine: Quarantine,
    is_outage: Callable[[BaseException], bool],
) -> StepResult:
    """Processes records, isolating any one the referee or the store fails on.

    An outage or a moved position is raised (retried by the caller, nothing quarantined);
    any other failure means a record of the batch cannot be processed: the batch is split in
    halves, each in its own transaction, until the failing record is alone and quarantined.
    """
    try:
        return await process(records)
    except PositionMoved:
        raise
    except Exception as exc:
        if is_outage(exc):
            raise
        failure = exc
    if len(records) == 1:
        return await quarantine(records[0], failure_detail(failure))
    log.warning(
        "batch failed on a record; isolating it",
        extra={"records": len(records), "error": f"{type(failure).__name__}: {failure}"},
    )
    half = len(records) // 2
    result = await isolating(records[:half], process, quarantine, is_outage)
    result.extend(await isolating(records[half:], process, quarantine, is_outage))
    return result
