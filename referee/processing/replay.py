"""``referee replay``: an event log folded in memory, verdicts and rejections written out.

A log is sharded by game, exactly as Kafka partitions a topic: each worker process referees
the games of its shard, and the outputs are merged back into the log's line order, so the
bytes are the same for any number of workers.
"""

from __future__ import annotations

import heapq
import multiprocessing
import os
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO

import msgspec

from referee.contracts.parse import DEFAULT_MAX_EVENT_BYTES, read_envelope
from referee.contracts.rejection import FileSource
from referee.contracts.verdicts import encode_canonical
from referee.contracts.wire import EnvelopeProbe
from referee.processing.outcome import Tally
from referee.processing.referee import Referee

PARALLEL_MIN_BYTES = 4 * 1024 * 1024
"""Logs smaller than this are refereed in one process: forking would cost more than it saves."""

PROGRESS_EVERY = 20_000

Output = tuple[int, int, bytes]
"""(line number, 0 for a verdict or 1 for a rejection, canonical JSON)."""


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """What a replay saw and produced."""

    tally: Tally
    seconds: float
    workers: int

    @property
    def events_per_second(self) -> float:
        """Returns the records handled per second of wall time."""
        return self.tally.records / self.seconds if self.seconds > 0 else 0.0


BLANK = b" \t\r"
"""The bytes a blank line may hold (EVENTS.md): a form feed or a no-break space is a record."""


def read_log(path: Path) -> Iterator[tuple[int, bytes]]:
    """Yields (line number, record) for every line of a log that is not blank.

    A record is the line exactly as written but for its line break (``\\n`` or ``\\r\\n``);
    a blank line holds nothing but spaces, tabs and carriage returns (EVENTS.md).
    """
    with path.open("rb") as f:
        for number, line in enumerate(f, start=1):
            record = line[:-1] if line.endswith(b"\n") else line
            if record.endswith(b"\r"):
                record = record[:-1]
            if record.strip(BLANK):
                yield number, record


def default_workers(log: Path) -> int:
    """Returns how many processes to use: one per core for a large log."""
    if log.stat().st_size < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


def replay(
    log: Path,
    verdicts_out: BinaryIO,
    rejected_out: BinaryIO | None,
    *,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
) -> ReplayReport:
    """Referees a whole log, writing canonical verdict and rejection lines in log order."""
    started = time.perf_counter()
    if workers <= 1:
        tally = _replay_serial(log, verdicts_out, rejected_out, max_event_bytes, progress)
    else:
        tally = _replay_parallel(
            log, verdicts_out, rejected_out, max_event_bytes, workers, progress
        )
    return ReplayReport(tally, time.perf_counter() - started, max(workers, 1))


def _replay_serial(
    log: Path,
    verdicts_out: BinaryIO,
    rejected_out: BinaryIO | None,
    max_event_bytes: int,
    progress: Callable[[int], None] | None,
) -> Tally:
    ref = Referee(max_event_bytes)
    process = ref.process
    name = str(log)
    write = verdicts_out.write
    for number, line in read_log(log):
        result = process(line, FileSource(name, number))
        for verdict in result.verdicts:
            write(encode_canonical(verdict) + b"\n")
        if result.rejection is not None and rejected_out is not None:
            rejected_out.write(encode_canonical(result.rejection) + b"\n")
        if progress is not None and number % PROGRESS_EVERY == 0:
            progress(number)
    return ref.tally


_PROBE = msgspec.json.Decoder(EnvelopeProbe)


def shard_of(line: bytes, shards: int) -> int:
    """Returns the shard of a line: a stable hash of its game id (shard 0 when unreadable).

    The game id is read as the referee reads the place of a record that fails validation,
    and it is the id a valid event has too; a line without a readable game id is judged the
    same in any shard. (A lenient decode of the envelope is cheaper than searching the bytes.)
    """
    try:
        game_id = _PROBE.decode(line).game_id
    except msgspec.DecodeError:
        return 0
    except RecursionError:  # nested too deeply to decode: read as the referee reads it
        game_id = read_envelope(line)[0]
    if not isinstance(game_id, str):
        return 0
    return zlib.crc32(game_id.encode()) % shards


_progress_counter: multiprocessing.sharedctypes.Synchronized[int] | None = None


def _replay_shard(job: tuple[Path, int, int, int]) -> tuple[list[Output], Tally]:
    log, shard, shards, max_event_bytes = job
    ref = Referee(max_event_bytes)
    process = ref.process
    name = str(log)
    outputs: list[Output] = []
    counter = _progress_counter if shard == 0 else None  # one worker reports for all
    for number, line in read_log(log):
        if counter is not None and number % PROGRESS_EVERY == 0:
            counter.value = number
        if shard_of(line, shards) != shard:
            continue
        result = process(line, FileSource(name, number))
        if result.verdicts:
            outputs.extend((number, 0, encode_canonical(v)) for v in result.verdicts)
        if result.rejection is not None:
            outputs.append((number, 1, encode_canonical(result.rejection)))
    return outputs, ref.tally


def _init_worker(counter: multiprocessing.sharedctypes.Synchronized[int]) -> None:
    global _progress_counter  # noqa: PLW0603 - one counter per worker process
    _progress_counter = counter


def _replay_parallel(
    log: Path,
    verdicts_out: BinaryIO,
    rejected_out: BinaryIO | None,
    max_event_bytes: int,
    workers: int,
    progress: Callable[[int], None] | None,
) -> Tally:
    ctx = multiprocessing.get_context("fork")
    counter = ctx.Value("q", 0)
    jobs = [(log, shard, workers, max_event_bytes) for shard in range(workers)]
    with ctx.Pool(workers, initializer=_init_worker, initargs=(counter,)) as pool:
        pending = pool.map_async(_replay_shard, jobs)
        while not pending.ready():
            pending.wait(0.2)
            if progress is not None:
                progress(counter.value)
        results = pending.get()
    tally = Tally()
    for _, part in results:
        tally.merge(part)
    for _, kind, data in heapq.merge(*(outputs for outputs, _ in results)):
        if kind == 0:
            verdicts_out.write(data + b"\n")
        elif rejected_out is not None:
            rejected_out.write(data + b"\n")
    return tally


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
