"""``referee replay``: an event log folded in memory, verdicts and rejections written out.

A log is sharded by game, exactly as Kafka partitions a topic: each worker process referees
the games of its shard, and the outputs are merged back into the log's line order, so the
bytes are the same for any number of workers.
"""

from __future__ import annotations

import heapq
import io
import multiprocessing
import os
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import msgspec

from referee.contracts.parse import DEFAULT_MAX_EVENT_BYTES, probe_envelope, read_envelope
from referee.contracts.rejection import FileSource
from referee.contracts.verdicts import encode_canonical
from referee.domain.revisions import NEWEST, revision
from referee.processing.outcome import Tally
from referee.processing.referee import Referee

PARALLEL_MIN_BYTES = 4 * 1024 * 1024
"""Logs smaller than this are refereed in one process: forking would cost more than it saves."""

PROGRESS_EVERY = 1024
"""Lines between two progress reports (a power of two: the check is one ``&``); the bar
decides itself how often to redraw."""

Progress = Callable[[int, int], None]
"""Told (bytes read, lines read) every ``PROGRESS_EVERY`` lines and once at the end."""

Log = Path | BinaryIO
"""A log: a file, or a stream read once (standard input)."""

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


class Records:
    """The records of a log stream, telling a progress callback how far it has read."""

    __slots__ = ("progress", "stream")

    def __init__(self, stream: BinaryIO, progress: Progress | None = None) -> None:
        self.stream = stream
        self.progress = progress

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        """Yields (line number, record) for every line that is not blank.

        A record is the line exactly as written but for its line break (``\\n`` or
        ``\\r\\n``); a blank line holds nothing but spaces, tabs and carriage returns
        (EVENTS.md).
        """
        progress = self.progress
        if progress is None:
            for number, line in enumerate(self.stream, start=1):
                record = line.rstrip(b"\n")  # a line holds one newline at the most, at its end
                if record[-1:] == b"\r":
                    record = record[:-1]
                # A record almost always opens its object at once: strip only what does not.
                if record[:1] == b"{" or record.strip(BLANK):
                    yield number, record
            return
        size = number = 0
        for number, line in enumerate(self.stream, start=1):
            size += len(line)
            if not number % PROGRESS_EVERY:
                progress(size, number)
            record = line.rstrip(b"\n")
            if record[-1:] == b"\r":
                record = record[:-1]
            if record[:1] == b"{" or record.strip(BLANK):
                yield number, record
        progress(size, number)


def opened(log: Log) -> BinaryIO:
    """Returns a log's stream (a file is opened; the caller closes what it opened)."""
    return log.open("rb") if isinstance(log, Path) else log


def default_workers(log: Log) -> int:
    """Returns how many processes to use: one per core for a large log file (else one)."""
    if not isinstance(log, Path) or log.stat().st_size < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


def replay(
    log: Log,
    verdicts_out: BinaryIO,
    rejected_out: BinaryIO | None,
    *,
    name: str | None = None,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    workers: int = 1,
    progress: Progress | None = None,
    rules_revision: int = NEWEST,
) -> ReplayReport:
    """Referees a whole log, writing canonical verdict and rejection lines in log order.

    ``name`` is the file name the rejections' sources give (default: the path, or ``-`` for
    a stream). A stream is read once; with more than one worker it is read into memory
    first, so that every worker can read its shard. Every game of the log is judged under
    ``rules_revision`` (``UnknownRevisionError`` before anything is read, if there is none).
    """
    revision(rules_revision)
    started = time.perf_counter()
    source_name = name if name is not None else str(log) if isinstance(log, Path) else "-"
    if workers <= 1:
        stream = opened(log)
        try:
            tally = _replay_serial(
                Records(stream, progress),
                source_name,
                verdicts_out,
                rejected_out,
                max_event_bytes,
                rules_revision,
            )
        finally:
            if isinstance(log, Path):
                stream.close()
    else:
        shared = log if isinstance(log, Path) else log.read()
        tally = _replay_parallel(
            shared,
            source_name,
            verdicts_out,
            rejected_out,
            max_event_bytes,
            workers,
            progress,
            rules_revision,
        )
    return ReplayReport(tally, time.perf_counter() - started, max(workers, 1))


def _replay_serial(
    records: Records,
    name: str,
    verdicts_out: BinaryIO,
    rejected_out: BinaryIO | None,
    max_event_bytes: int,
    rules_revision: int,
) -> Tally:
    ref = Referee(max_event_bytes, rules_revision=rules_revision)
    process = ref.process
    write = verdicts_out.write
    for number, line in records:
        result = process(line, FileSource(name, number))
        for verdict in result.verdicts:
            write(encode_canonical(verdict) + b"\n")
        if result.rejection is not None and rejected_out is not None:
            rejected_out.write(encode_canonical(result.rejection) + b"\n")
    return ref.tally


def shard_of(line: bytes, shards: int) -> int:
    """Returns the shard of a line: a stable hash of its game id (shard 0 when unreadable).

    The game id is read as the referee reads the place of a record that fails validation,
    and it is the id a valid event has too; a line without a readable game id is judged the
    same in any shard. (A lenient decode of the envelope is cheaper than searching the bytes.)
    """
    try:
        game_id = probe_envelope(line).game_id
    except msgspec.DecodeError:
        return 0
    except RecursionError:  # nested too deeply to decode: read as the referee reads it
        game_id = read_envelope(line)[0]
    if not isinstance(game_id, str):
        return 0
    return zlib.crc32(game_id.encode()) % shards


_progress_counter: multiprocessing.sharedctypes.SynchronizedArray[int] | None = None
_log_in_memory: bytes = b""


def _replay_shard(
    job: tuple[Path | None, str, int, int, int, int],
) -> tuple[list[Output], Tally]:
    log, name, shard, shards, max_event_bytes, rules_revision = job
    ref = Referee(max_event_bytes, rules_revision=rules_revision)
    process = ref.process
    outputs: list[Output] = []
    counter = _progress_counter if shard == 0 else None  # one worker reports for all

    def report(size: int, lines: int) -> None:
        assert counter is not None
        counter[0], counter[1] = size, lines

    stream = io.BytesIO(_log_in_memory) if log is None else log.open("rb")
    with stream:
        for number, line in Records(stream, None if counter is None else report):
            if shard_of(line, shards) != shard:
                continue
            result = process(line, FileSource(name, number))
            if result.verdicts:
                outputs.extend((number, 0, encode_canonical(v)) for v in result.verdicts)
            if result.rejection is not None:
                outputs.append((number, 1, encode_canonical(result.rejection)))
    return outputs, ref.tally


def _init_worker(counter: multiprocessing.sharedctypes.SynchronizedArray[int], data: bytes) -> None:
    global _progress_counter, _log_in_memory  # noqa: PLW0603 - one of each per worker process
    _progress_counter = counter
    _log_in_memory = data


def _replay_parallel(
    log: Path | bytes,
    name: str,
    verdicts_out: BinaryIO,
    rejected_out: BinaryIO | None,
    max_event_bytes: int,
    workers: int,
    progress: Progress | None,
    rules_revision: int,
) -> Tally:
    ctx = multiprocessing.get_context("fork")
    counter = ctx.Array("q", 2)  # bytes read, lines read
    path, data = (log, b"") if isinstance(log, Path) else (None, log)
    jobs = [
        (path, name, shard, workers, max_event_bytes, rules_revision) for shard in range(workers)
    ]
    # forked, the workers share the in-memory log: initargs are not pickled under fork
    with ctx.Pool(workers, initializer=_init_worker, initargs=(counter, data)) as pool:
        pending = pool.map_async(_replay_shard, jobs)
        while not pending.ready():
            pending.wait(0.2)
            if progress is not None:
                progress(counter[0], counter[1])
        results = pending.get()
    if progress is not None:
        progress(counter[0], counter[1])
    tally = Tally()
    for _, part in results:
        tally.merge(part)
    for _, kind, data_line in heapq.merge(*(outputs for outputs, _ in results)):
        if kind == 0:
            verdicts_out.write(data_line + b"\n")
        elif rejected_out is not None:
            rejected_out.write(data_line + b"\n")
    return tally
