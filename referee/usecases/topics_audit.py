"""``referee audit --topics``, a use case: the store compared with what the output topics hold.

The store's own audit checks the store against itself (the journal judged again); it cannot
see a store that lost commits the topics still hold, since such a store agrees with itself.
This compares, for each input partition, the outbox rows the store holds (verdicts and dead
letters, in position order) with the records of the partition's number on the output topics
(read ``read_committed``, in offset order). Records are matched by their bytes: a verdict's
canonical JSON names its verdict id, a dead letter's its input's coordinates.

A difference is one of: a record on a topic that the store does not hold (the store lost
commits: put back in time, or restored); a record on a topic twice; the topic's records in
another order than the store's; a row the store holds that the topic lacks while a later one
is there (a gap). Rows after the topic's last record are not yet published (a backlog: said,
not a difference), and rows withheld because the broker refused them are expected absent.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class StoredRow:
    """An outbox row as the store holds it."""

    partition: int
    """The input partition whose outbox it is in (its output partition's number)."""
    position: int
    body: bytes
    withheld: bool = False
    """The broker refused it for good: it is not published (``withheld_rows``)."""


@dataclass(frozen=True, slots=True)
class PublishedRecord:
    """A committed record of an output topic."""

    partition: int
    offset: int
    value: bytes


@dataclass(slots=True)
class TopicsReport:
    """What the comparison of the store with the output topics found, per outbox."""

    stored: dict[str, int] = field(default_factory=dict)
    published: dict[str, int] = field(default_factory=dict)
    unpublished: dict[str, int] = field(default_factory=dict)
    """Rows after the last record on their topic: not published yet (not a difference)."""
    withheld: dict[str, int] = field(default_factory=dict)
    differences: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Checks if every record on the topics is the store's, once and in its order."""
        return not self.differences

    def lines(self) -> list[str]:
        """Returns the printed report."""
        out = [
            f"{outbox}: {self.stored[outbox]} in the store, {self.published[outbox]} on the "
            f"topic, {self.unpublished[outbox]} not yet published, {self.withheld[outbox]} withheld"
            for outbox in sorted(self.stored)
        ]
        shown = self.differences[:50]
        out += [f"difference: {d}" for d in shown]
        if len(self.differences) > len(shown):
            out.append(f"... and {len(self.differences) - len(shown)} more differences")
        out.append(
            "the store and the topics agree"
            if self.passed
            else f"{len(self.differences)} differences between the store and the topics"
        )
        return out


def compare_outbox(
    outbox: str,
    stored: list[StoredRow],
    published: list[PublishedRecord],
    report: TopicsReport,
) -> None:
    """Compares one outbox's rows with its topic's records, partition by partition, and adds
    what it finds to ``report``."""
    report.stored[outbox] = len(stored)
    report.published[outbox] = len(published)
    report.unpublished.setdefault(outbox, 0)
    report.withheld[outbox] = sum(r.withheld for r in stored)
    partitions = {r.partition for r in stored} | {r.partition for r in published}
    for p in sorted(partitions):
        rows = sorted((r for r in stored if r.partition == p), key=lambda r: r.position)
        records = sorted((r for r in published if r.partition == p), key=lambda r: r.offset)
        _compare_partition(outbox, p, rows, records, report)


def _compare_partition(
    outbox: str,
    partition: int,
    rows: list[StoredRow],
    records: list[PublishedRecord],
    report: TopicsReport,
) -> None:
    differences = report.differences
    where = f"{outbox} of partition {partition}"
    place = {r.body: n for n, r in enumerate(rows)}
    copies = Counter(r.value for r in records)
    for value, n in copies.items():
        if n > 1:
            differences.append(f"{where}: a record is on the topic {n} times: {_short(value)}")
    strangers = [r for r in records if r.value not in place]
    for r in strangers[:20]:
        differences.append(
            f"{where}: offset {r.offset} is not in the store (the store lost commits the "
            f"topic holds?): {_short(r.value)}"
        )
    if len(strangers) > 20:
        differences.append(f"{where}: {len(strangers) - 20} more records not in the store")
    known = [place[r.value] for r in records if r.value in place]
    if known != sorted(known):
        differences.append(f"{where}: the topic's records are not in the store's order")
    last = max(known, default=-1)
    on_topic = set(known)
    gaps = [n for n, row in enumerate(rows[: last + 1]) if n not in on_topic and not row.withheld]
    for n in gaps[:20]:
        differences.append(
            f"{where}: position {rows[n].position} is not on the topic, though later ones "
            f"are: {_short(rows[n].body)}"
        )
    if len(gaps) > 20:
        differences.append(f"{where}: {len(gaps) - 20} more rows missing before the last one")
    report.unpublished[outbox] += sum(1 for row in rows[last + 1 :] if not row.withheld)


def _short(value: bytes) -> str:
    text = value.decode("utf-8", "replace")
    return text if len(text) <= 160 else text[:157] + "..."
