"""Where each file goes: ``<table>/day=YYYY-MM-DD/<segment>.parquet`` and ``manifests/<run>.json``.

A segment is one time partition of one table, ``[start, end)`` on ``recorded_at``; its name says
which partition it came from (``p20261205T0000``). The day directory is the UTC day of its start,
so a day holds several segments when partitions are shorter than a day.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from referee.archive.errors import ArchiveError
from referee.archive.tables import table

MANIFESTS = "manifests"
"""The directory of the manifests."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,199}$")


def _aware(value: datetime, what: str) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ArchiveError(f"{what} {value.isoformat()} is a naive datetime: give it a timezone")
    return value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Segment:
    """One time partition: its name and bounds ``[start, end)`` (aware datetimes, kept in UTC)."""

    name: str
    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ArchiveError(
                f"a segment name is letters, digits and _ . + - (200 at most): {self.name!r}"
            )
        object.__setattr__(self, "start", _aware(self.start, f"segment {self.name} start"))
        object.__setattr__(self, "end", _aware(self.end, f"segment {self.name} end"))
        if not self.start < self.end:
            raise ArchiveError(f"segment {self.name}: its start is not before its end")

    def holds(self, moment: datetime) -> bool:
        """Whether ``moment`` is inside ``[start, end)``."""
        return self.start <= moment < self.end


def segment_name(start: datetime) -> str:
    """The conventional name of the partition that starts at ``start``: ``pYYYYMMDDTHHMM`` (UTC)."""
    return "p" + _aware(start, "partition start").strftime("%Y%m%dT%H%M")


def segment_path(table_name: str, segment: Segment) -> str:
    """``<table>/day=<UTC day of the start>/<segment name>.parquet``."""
    t = table(table_name)
    return f"{t.name}/day={segment.start:%Y-%m-%d}/{segment.name}.parquet"


def check_run_id(run_id: str) -> str:
    """``run_id`` if it can name a manifest file."""
    if not _NAME.match(run_id):
        raise ArchiveError(f"a run id is letters, digits and _ . + - (200 at most): {run_id!r}")
    return run_id


def manifest_path(run_id: str) -> str:
    """``manifests/<run id>.json``."""
    return f"{MANIFESTS}/{check_run_id(run_id)}.json"


def make_run_id(started_at: datetime, segments: Iterable[Segment]) -> str:
    """A run id that sorts by time: ``<started_at, UTC, to the second>Z-<first segment>-<last>``
    (the segments by start). The caller reads the clock and passes ``started_at``."""
    ordered = sorted(segments, key=lambda s: (s.start, s.name))
    if not ordered:
        raise ArchiveError("an archive run archives at least one segment")
    stamp = _aware(started_at, "run start").strftime("%Y%m%dT%H%M%SZ")
    first, last = ordered[0].name, ordered[-1].name
    return check_run_id(f"{stamp}-{first}" if first == last else f"{stamp}-{first}-{last}")
