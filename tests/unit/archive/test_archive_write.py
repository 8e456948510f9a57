"""write_segment, verify_written, write_manifest and the layout they follow."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from referee.archive import (
    Archive,
    ArchiveError,
    ArchiveRowError,
    ManifestError,
    SegmentAlreadyArchivedError,
    VerificationError,
    archived_segments,
    iter_rows,
    make_run_id,
    open_archive,
    read_manifests,
    rows_digest,
    segment_name,
    segment_path,
    verify_written,
    write_manifest,
    write_segment,
)
from referee.archive.layout import Segment
from tests.unit.archive.samples import at, edge_rows, journal_row, rows_for, segment


@pytest.fixture
def archive(tmp_path: Path) -> Archive:
    return open_archive(str(tmp_path))


def test_the_layout_is_table_day_segment(archive: Archive) -> None:
    seg = segment(6)
    assert seg.name == "p20261205T0600"
    assert segment_path("verdicts", seg) == "verdicts/day=2026-12-05/p20261205T0600.parquet"
    # several segments in one day directory when the interval is shorter than a day
    paths = {segment_path("journal", segment(h, 6)) for h in (0, 6, 12, 18)}
    assert {p.rsplit("/", 1)[0] for p in paths} == {"journal/day=2026-12-05"}
    assert len(paths) == 4
    # the day is the UTC day of the start, whatever zone the bounds came in
    zone = timezone(timedelta(hours=5))  # 23:00 UTC is 04:00 the next day there
    late = Segment("p20261205T2300", at(23).astimezone(zone), at(24).astimezone(zone))
    assert segment_path("journal", late) == "journal/day=2026-12-05/p20261205T2300.parquet"
    with pytest.raises(ArchiveError, match="no archived table"):
        segment_path("game_revisions", seg)


def test_a_segment_has_a_plain_name_and_aware_bounds_in_order() -> None:
    with pytest.raises(ArchiveError, match="segment name"):
        Segment("../p1", at(0), at(1))
    with pytest.raises(ArchiveError, match="naive"):
        Segment("p1", datetime(2026, 12, 5), at(1))  # noqa: DTZ001
    with pytest.raises(ArchiveError, match="not before"):
        Segment("p1", at(1), at(1))


def test_run_ids_sort_by_time_and_name_their_segments() -> None:
    earlier = make_run_id(at(30), [segment(6), segment(0)])
    later = make_run_id(at(30) + timedelta(seconds=1), [segment(0)])
    assert earlier == "20261206T060000Z-p20261205T0000-p20261205T0600"
    assert later == "20261206T060001Z-p20261205T0000"
    assert sorted([later, earlier]) == [earlier, later]
    assert segment_name(at(6)) == "p20261205T0600"


def test_written_verified_and_listed(archive: Archive) -> None:
    rows = edge_rows()["journal"]
    seg = segment(0)
    entry = write_segment(archive, "journal", seg, rows)
    verify_written(archive, entry, rows_digest("journal", rows))
    assert entry.path == "journal/day=2026-12-05/p20261205T0000.parquet"
    assert (entry.rows, entry.first_journal_id, entry.last_journal_id) == (
        4,
        -(2**63),
        2**63 - 1,
    )
    assert entry.size == len(archive.read_bytes(entry.path))
    # not archived until a manifest lists it: the audit reads nothing yet
    assert list(iter_rows(archive, "journal")) == []
    manifest = write_manifest(archive, "run-1", [entry])
    assert read_manifests(archive) == [manifest]
    assert archived_segments(archive) == {("journal", seg.name): ("run-1", entry)}
    assert list(iter_rows(archive, "journal")) == rows


def test_the_manifest_fields(archive: Archive) -> None:
    rows = rows_for([(1, 0.5), (2, 1.0)])["verdicts"]
    entry = write_segment(archive, "verdicts", segment(0), rows)
    write_manifest(archive, "run-1", [entry])
    document = json.loads(archive.read_bytes("manifests/run-1.json"))
    assert document["run_id"] == "run-1"
    assert document["format"] == "referee-archive-manifest/1"
    (listed,) = document["files"]
    assert listed == {
        "table": "verdicts",
        "path": "verdicts/day=2026-12-05/p20261205T0000.parquet",
        "segment": "p20261205T0000",
        "from": "2026-12-05T00:00:00Z",
        "to": "2026-12-05T06:00:00Z",
        "rows": 4,
        "first_journal_id": 1,
        "last_journal_id": 2,
        "size": entry.size,
        "sha256": entry.sha256,
        "rows_digest": rows_digest("verdicts", rows),
    }


def test_verify_written_catches_other_rows_and_an_altered_file(archive: Archive) -> None:
    rows = rows_for([(1, 0.5), (2, 1.0)])["journal"]
    entry = write_segment(archive, "journal", segment(0), rows)
    # the store holds a row more than was written
    more = [*rows, journal_row(3, at(2))]
    with pytest.raises(VerificationError, match="not the store's"):
        verify_written(archive, entry, rows_digest("journal", more))
    # the file is not what was written
    archive.write_bytes(entry.path, archive.read_bytes(entry.path)[:-1] + b"\0")
    with pytest.raises(VerificationError, match="altered"):
        verify_written(archive, entry, rows_digest("journal", rows))
    (Path(archive.url) / entry.path).unlink()
    with pytest.raises(VerificationError, match="missing"):
        verify_written(archive, entry, rows_digest("journal", rows))


def test_a_partition_without_rows_is_archived_as_an_empty_file(archive: Archive) -> None:
    entry = write_segment(archive, "dead_letters", segment(0), [])
    assert (entry.rows, entry.first_journal_id, entry.last_journal_id) == (0, None, None)
    verify_written(archive, entry, rows_digest("dead_letters", []))


def test_rows_outside_the_segment_are_refused(archive: Archive) -> None:
    seg = segment(0)
    for when in (at(6), at(0) - timedelta(microseconds=1)):
        with pytest.raises(ArchiveRowError, match="outside segment p20261205T0000"):
            write_segment(archive, "journal", seg, [journal_row(1, when)])
    assert archive.list_files("journal") == []


def test_rows_out_of_reading_order_are_refused(archive: Archive) -> None:
    seg = segment(0)
    with pytest.raises(ArchiveRowError, match="out of order"):
        write_segment(archive, "journal", seg, [journal_row(2, at(1)), journal_row(1, at(1))])
    with pytest.raises(ArchiveRowError, match="out of order"):
        write_segment(archive, "journal", seg, [journal_row(1, at(1)), journal_row(1, at(1))])
    gv = [("g2", 1, "{}", 5, at(1)), ("g1", 1, "{}", 5, at(1))]
    with pytest.raises(ArchiveRowError, match="out of order"):
        write_segment(archive, "game_versions", seg, gv)
    # journal ids may repeat in the other tables, in their natural order
    write_segment(archive, "game_versions", seg, gv[::-1])


def test_an_archived_segment_is_not_written_again(archive: Archive) -> None:
    rows = rows_for([(1, 0.5)])["journal"]
    entry = write_segment(archive, "journal", segment(0), rows)
    write_manifest(archive, "run-1", [entry])
    with pytest.raises(SegmentAlreadyArchivedError, match="already archived by run run-1"):
        write_segment(archive, "journal", segment(0), rows_for([(2, 0.5)])["journal"])
    assert archive.read_bytes(entry.path) != b""
    verify_written(archive, entry, rows_digest("journal", rows))


def test_a_file_left_by_a_run_without_manifest_is_replaced(archive: Archive) -> None:
    first = write_segment(archive, "journal", segment(0), rows_for([(1, 0.5)])["journal"])
    rows = rows_for([(1, 0.5), (2, 0.7)])["journal"]
    again = write_segment(archive, "journal", segment(0), rows)
    assert again.sha256 != first.sha256
    verify_written(archive, again, rows_digest("journal", rows))


def test_write_manifest_refusals(archive: Archive) -> None:
    a = write_segment(archive, "journal", segment(0), rows_for([(1, 0.5)])["journal"])
    b = write_segment(archive, "journal", segment(6), rows_for([(2, 6.5)])["journal"])
    with pytest.raises(ManifestError, match="at least one"):
        write_manifest(archive, "run-0", [])
    with pytest.raises(SegmentAlreadyArchivedError, match="listed twice"):
        write_manifest(archive, "run-0", [a, a])
    write_manifest(archive, "run-1", [a])
    with pytest.raises(ManifestError, match="already exists"):
        write_manifest(archive, "run-1", [b])
    with pytest.raises(SegmentAlreadyArchivedError, match="already archived by run run-1"):
        write_manifest(archive, "run-2", [a, b])
    (Path(archive.url) / b.path).unlink()
    with pytest.raises(ManifestError, match="is not in"):
        write_manifest(archive, "run-2", [b])
    with pytest.raises(ArchiveError, match="run id"):
        write_manifest(archive, "../run", [b])
    assert [m.run_id for m in read_manifests(archive)] == ["run-1"]


def test_a_manifest_whose_name_is_not_its_run_is_refused(archive: Archive) -> None:
    entry = write_segment(archive, "journal", segment(0), rows_for([(1, 0.5)])["journal"])
    write_manifest(archive, "run-1", [entry])
    archive.write_bytes("manifests/run-2.json", archive.read_bytes("manifests/run-1.json"))
    with pytest.raises(ManifestError, match="it says run run-1"):
        read_manifests(archive)


def test_a_journal_segment_archived_by_an_earlier_release_verifies_and_reads(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Release 0.3.0 archived the journal without ``referee_version`` (migration 0011): its
    files verify against their manifests' digests and read with no writer."""
    from referee.archive import parquet, tables
    from referee.archive.tables import earlier

    old = earlier(tables.TABLES["journal"], 15)
    rows = [r[:15] for r in rows_for([(1, 1), (2, 2)])["journal"]]
    with monkeypatch.context() as m:  # the earlier release's column set, as it wrote it
        m.setitem(tables.TABLES, "journal", old)
        m.setitem(parquet.SCHEMAS, "journal", parquet.arrow_schema(old))
        entry = write_segment(archive, "journal", segment(0), rows)
        verify_written(archive, entry, rows_digest("journal", rows))
    write_manifest(archive, "run-1", [entry])
    assert list(iter_rows(archive, "journal")) == [(*r, None) for r in rows]
    # the digest is still checked: the same file under another manifest digest is refused
    assert rows_digest("journal", rows, 15) == entry.rows_digest
    assert rows_digest("journal", [(*r, None) for r in rows]) != entry.rows_digest
