"""The garbage collector's settings for the commands that run the processing step.

A batch of the step allocates a few container objects an event (its records, the journal
rows, the lists that carry them), nearly all acyclic and short-lived; CPython's default
thresholds (700, 10, 10) then run ten young collections a 2,000-event batch and, every so
often, a full collection that walks every game held in the hot cache. Fewer, larger young
collections cost less CPU an event (bench/notes.md, "The garbage collector"). Reference
cycles are still collected, only less often; the young generation bounds how many objects
wait for it.
"""

from __future__ import annotations

import gc

YOUNG = 50_000
"""Allocations of container objects (less deallocations) between two young collections."""
MIDDLE = 20
"""Young collections between two of the middle generation."""
OLD = 20
"""Middle collections between two full ones (CPython also waits for the long-lived objects
to have grown by a quarter since the last)."""


def tune() -> None:
    """Sets the thresholds, and moves everything allocated so far (the modules imported, the
    settings) out of the collector's sight: start-up objects live as long as the process."""
    gc.set_threshold(YOUNG, MIDDLE, OLD)
    gc.freeze()
