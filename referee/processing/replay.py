"""``referee replay``: an event log folded in memory, verdicts and rejections written out."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO

from referee.contracts.rejection import FileSource
from referee.contracts.verdicts import encode_canonical
from referee.processing.referee import Referee, Tally


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """What a replay saw and produced."""

    tally: Tally
    seconds: float

    @property
    def events_per_second(self) -> float:
        """Returns the records handled per second of wall time."""
        return self.tally.records / self.seconds if self.seconds > 0 else 0.0


def read_log(path: Path) -> Iterator[tuple[int, bytes]]:
    """Yields (line number, line) for every non-blank line of a JSON Lines log."""
    with path.open("rb") as f:
        for number, line in enumerate(f, start=1):
            stripped = line.strip()
            if stripped:
                yield number, stripped


def replay(
    log: Path,
    verdicts_out: BinaryIO,
    rejected_out: BinaryIO | None,
    *,
    referee: Referee | None = None,
    progress: Callable[[int], None] | None = None,
) -> ReplayReport:
    """Referees a whole log in memory, writing canonical verdict and rejection lines."""
    ref = referee or Referee()
    name = str(log)
    write = verdicts_out.write
    started = time.perf_counter()
    for number, line in read_log(log):
        result = ref.process(line, FileSource(name, number))
        for verdict in result.verdicts:
            write(encode_canonical(verdict) + b"\n")
        if result.rejection is not None and rejected_out is not None:
            rejected_out.write(encode_canonical(result.rejection) + b"\n")
        if progress is not None and number % 20_000 == 0:
            progress(number)
    return ReplayReport(ref.tally, time.perf_counter() - started)


def format_summary(report: ReplayReport) -> str:
    """Returns the human summary printed on standard error."""
    t = report.tally
    lines = [
        (
            f"events: {t.records} records, {sum(t.events.values())} judged "
            f"({_counts(t.events)}), {report.events_per_second:,.0f} events/s"
        ),
        f"verdicts: {sum(t.verdicts.values())} ({_counts(t.verdicts)})",
        f"rejections: {sum(t.rejections.values())} ({_counts(t.rejections)})",
        f"duplicates: {t.duplicates}",
    ]
    return "\n".join(lines)


def _counts(counter: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items())) or "none"


class ProgressBar:
    """A one-line progress bar on a terminal, driven by the log's line count."""

    def __init__(self, total_lines: int, stream: TextIO = sys.stderr) -> None:
        self.total = max(total_lines, 1)
        self.stream = stream

    def __call__(self, done: int) -> None:
        """Redraws the bar."""
        width = 40
        filled = min(width, width * done // self.total)
        bar = "#" * filled + "-" * (width - filled)
        print(f"\r[{bar}] {done}/{self.total}", end="", file=self.stream, flush=True)

    def close(self) -> None:
        """Ends the bar's line."""
        print(file=self.stream)
