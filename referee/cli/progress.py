"""The progress bar of ``referee replay`` and the summary it prints: terminal UI only.

The replay tells the bar how many bytes and lines of the log it has read; the bar redraws at
most every ``interval`` seconds, so its cost does not depend on the log's size, and it knows
the total from the file's size, never from counting the lines first.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from referee.usecases.replay import ReplayReport

WIDTH = 24
MIB = 1024 * 1024


class ProgressBar:
    """A one-line progress bar on standard error: percent, size, rate and time left."""

    def __init__(
        self,
        total_bytes: int | None,
        stream: TextIO = sys.stderr,
        *,
        interval: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total_bytes if total_bytes else None
        self.stream = stream
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self.drawn_at: float | None = None
        self.bytes = 0
        self.lines = 0

    def __call__(self, bytes_read: int, lines_read: int) -> None:
        """Notes the progress; redraws if ``interval`` has passed since the last drawing."""
        self.bytes, self.lines = bytes_read, lines_read
        now = self.clock()
        if self.drawn_at is None or now - self.drawn_at >= self.interval:
            self._draw(now)

    def close(self) -> None:
        """Draws the final state (100% for a file read to its end) and ends the line."""
        self._draw(self.clock())
        print(file=self.stream, flush=True)

    def render(self, elapsed: float) -> str:
        """Returns the bar's text after ``elapsed`` seconds."""
        rate = self.lines / elapsed if elapsed > 0 else 0.0
        speed = f"{rate:,.0f} lines/s"
        if self.total is None:  # a pipe: no size to measure against
            return f"{self.bytes / MIB:,.1f} MiB  {self.lines:,} lines  {speed}"
        done = min(self.bytes, self.total)
        filled = WIDTH * done // self.total
        bar = "#" * filled + "-" * (WIDTH - filled)
        percent = 100 * done // self.total
        sizes = f"{done / MIB:,.1f}/{self.total / MIB:,.1f} MiB"
        if done >= self.total:
            left = f"in {_clock(elapsed)}"
        elif done and elapsed > 0:
            left = f"ETA {_clock(elapsed * (self.total - done) / done)}"
        else:
            left = "ETA --:--"
        return f"[{bar}] {percent:3d}%  {sizes}  {speed}  {left}"

    def _draw(self, now: float) -> None:
        self.drawn_at = now
        # \r back to the start, \x1b[K clears what a longer line before left behind
        print(f"\r{self.render(now - self.started)}\x1b[K", end="", file=self.stream, flush=True)


def _clock(seconds: float) -> str:
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_summary(report: ReplayReport) -> str:
    """Returns the human summary printed on standard error."""
    t = report.tally
    lines = [
        (f"events: {t.records} records, {sum(t.events.values())} judged ({_counts(t.events)})"),
        f"verdicts: {sum(t.verdicts.values())} ({_counts(t.verdicts)})",
        f"rejections: {sum(t.rejections.values())} ({_counts(t.rejections)})",
        f"duplicates: {t.duplicates}",
        (
            f"speed: {report.events_per_second:,.0f} events/s "
            f"({report.seconds:.2f} s, {report.workers} worker(s))"
        ),
    ]
    return "\n".join(lines)


def _counts(counter: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items())) or "none"
