"""Long loops in slices: the event loop gets a turn between two, so the write in flight, the
consumer's fetches and heartbeats and the probes go on while a batch is decoded, judged and
turned into rows, however long its records take."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

YIELD_AFTER = 0.001
"""Seconds of work between two yields to the event loop (docs/design.md, "Pipelining", says
why this slice)."""


async def each(items: Iterable[T], work: Callable[[T], object]) -> None:
    """Calls ``work`` on each item in turn, yielding to the event loop after every
    ``YIELD_AFTER`` seconds of it."""
    clock = time.perf_counter
    slice_end = clock() + YIELD_AFTER
    for item in items:
        work(item)
        if clock() > slice_end:
            await asyncio.sleep(0)
            slice_end = clock() + YIELD_AFTER
