"""Section 5: peak memory with many open games (``bench.scenarios.memory``)."""

from __future__ import annotations

import msgspec

from bench.sections.base import Page, Section, typed


class Memory(msgspec.Struct, frozen=True):
    """``referee serve`` holding the openings of many games; ``/proc`` figures in KiB."""

    games: int
    events: int
    idle_hwm: float
    hwm: float
    rss: float
    per_game: float
    """Bytes an open game."""
    seconds: float


def rows(mem: Memory) -> list[str]:
    """Its summary row (reported, no target)."""
    hwm = f"VmHWM {mem.hwm / 1024:,.0f} MiB"
    return [f"| 5. peak RSS, {mem.games:,} open games | (reported) | {hwm} | | | |"]


def section(mem: Memory, page: Page) -> list[str]:  # noqa: ARG001 - every section's signature
    """Section 5."""
    return [
        "## 5. Peak memory",
        "",
        (
            "`referee serve` (default REFEREE_CACHE_GAMES=100000) fed GameStarted +"
            f" RoundStarted for {mem.games:,} games ({mem.events:,} events; every game"
            " left open, so"
            " every state stays in the hot cache), then `VmHWM` read from"
            " `/proc/<pid>/status` once all were processed."
        ),
        "",
        "| | |",
        "|---|---|",
        f"| VmHWM idle (after start-up) | {mem.idle_hwm / 1024:,.0f} MiB |",
        f"| VmHWM with {mem.games:,} open games | {mem.hwm / 1024:,.0f} MiB |",
        f"| VmRSS at the end | {mem.rss / 1024:,.0f} MiB |",
        f"| per open game | {mem.per_game / 1024:,.1f} KiB |",
        f"| time to process the {mem.events:,} events | {mem.seconds:.0f} s |",
        "",
    ]


SECTION = Section(lambda results: typed(results, "memory", Memory), section, rows)
