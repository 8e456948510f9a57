"""The largest values the size settings and flags accept: past them is a mistake, not a need."""

from __future__ import annotations

MAX_EVENT_BYTES_CAP = 64 * 1024 * 1024
"""The largest event size limit (64 MiB): Kafka's own default message limit is 1 MiB."""

BATCH_SIZE_CAP = 100_000
"""The most records in one transaction; past a few thousand a batch saves nothing more
(docs/benchmarks.md) and holds its locks longer."""
