"""iter_rows: a table's archived rows in journal order across manifests, verified, file by file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.archive import (
    Archive,
    ArchiveMismatchError,
    iter_rows,
    open_archive,
    write_manifest,
    write_segment,
)
from tests.unit.archive.samples import build_archive, rows_for, segment


class CountingArchive:
    """An archive that records which data files were read."""

    def __init__(self, inner: Archive) -> None:
        self.inner = inner
        self.read: list[str] = []

    @property
    def url(self) -> str:
        return self.inner.url

    def write_bytes(self, path: str, data: bytes) -> None:
        self.inner.write_bytes(path, data)

    def read_bytes(self, path: str) -> bytes:
        if not path.startswith("manifests/"):
            self.read.append(path)
        return self.inner.read_bytes(path)

    def list_files(self, prefix: str) -> list[str]:
        return self.inner.list_files(prefix)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)


@pytest.fixture
def built(tmp_path: Path) -> tuple[Archive, dict[str, list[tuple[object, ...]]]]:
    archive = open_archive(str(tmp_path))
    return archive, build_archive(archive)


@pytest.mark.parametrize(
    "name", ["journal", "game_versions", "verdicts", "dead_letters", "consumer_positions"]
)
def test_every_table_reads_back_in_journal_order_across_runs(
    built: tuple[Archive, dict[str, list[tuple[object, ...]]]], name: str
) -> None:
    archive, written = built
    assert list(iter_rows(archive, name)) == written[name]


def test_the_journal_comes_in_id_order_though_partitions_interleave(
    built: tuple[Archive, dict[str, list[tuple[object, ...]]]],
) -> None:
    archive, _ = built
    assert [row[0] for row in iter_rows(archive, "journal")] == list(range(1, 10))
    versions = [(row[3], row[0]) for row in iter_rows(archive, "game_versions")]
    assert versions == sorted(versions)
    assert [v[0] for v in versions] == [j for j in range(1, 10) for _ in range(2)]


def test_files_are_read_one_after_another(tmp_path: Path) -> None:
    inner = open_archive(str(tmp_path))
    entries = []
    for hours, journal in ((0, [(1, 0.5)]), (6, [(2, 6.5)]), (12, [(3, 12.5)])):
        entries.append(
            write_segment(inner, "journal", segment(hours), rows_for(journal)["journal"])
        )
    write_manifest(inner, "run-1", entries)
    archive = CountingArchive(inner)
    rows = iter_rows(archive, "journal")
    assert archive.read == []  # nothing read before it is asked for
    first = next(rows)
    assert first[0] == 1
    assert archive.read == ["journal/day=2026-12-05/p20261205T0000.parquet"]
    next(rows)
    assert len(archive.read) == 2
    assert [r[0] for r in rows] == [3]
    assert len(archive.read) == 3


def test_interleaving_files_are_both_open_and_merged(
    built: tuple[Archive, dict[str, list[tuple[object, ...]]]],
) -> None:
    archive = CountingArchive(built[0])
    rows = iter_rows(archive, "journal")
    assert [next(rows)[0] for _ in range(3)] == [1, 2, 3]
    # ids 1..4 and 3..6 interleave: both files, and only they, are read by the third row
    assert archive.read[-2:] == [
        "journal/day=2026-12-05/p20261205T0000.parquet",
        "journal/day=2026-12-05/p20261205T0600.parquet",
    ]
    assert "journal/day=2026-12-05/p20261205T1200.parquet" not in archive.read


def test_an_altered_file_stops_the_reading_before_its_rows(
    built: tuple[Archive, dict[str, list[tuple[object, ...]]]],
) -> None:
    archive, _ = built
    path = Path(archive.url) / "journal/day=2026-12-05/p20261205T1200.parquet"
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF
    path.write_bytes(bytes(data))
    rows = iter_rows(archive, "journal")
    assert [next(rows)[0] for _ in range(6)] == [1, 2, 3, 4, 5, 6]
    with pytest.raises(ArchiveMismatchError, match=r"p20261205T1200\.parquet: altered"):
        next(rows)


def test_a_missing_file_stops_the_reading(
    built: tuple[Archive, dict[str, list[tuple[object, ...]]]],
) -> None:
    archive, _ = built
    (Path(archive.url) / "verdicts/day=2026-12-05/p20261205T0600.parquet").unlink()
    with pytest.raises(ArchiveMismatchError, match="missing or unreadable"):
        list(iter_rows(archive, "verdicts"))


def test_an_empty_partition_must_be_there_too(
    built: tuple[Archive, dict[str, list[tuple[object, ...]]]],
) -> None:
    archive, _ = built
    (Path(archive.url) / "journal/day=2026-12-05/p20261205T1800.parquet").unlink()
    with pytest.raises(ArchiveMismatchError, match="p20261205T1800"):
        list(iter_rows(archive, "journal"))


def test_a_segment_in_two_manifests_is_refused(
    built: tuple[Archive, dict[str, list[tuple[object, ...]]]],
) -> None:
    archive, _ = built
    manifest = sorted((Path(archive.url) / "manifests").iterdir())[0]
    document = json.loads(manifest.read_text())
    document["run_id"] = "20270101T000000Z-again"
    archive.write_bytes("manifests/20270101T000000Z-again.json", json.dumps(document).encode())
    with pytest.raises(ArchiveMismatchError, match="archived twice, by runs"):
        next(iter_rows(archive, "consumer_positions"))


def test_a_journal_id_in_two_files_is_refused(
    built: tuple[Archive, dict[str, list[tuple[object, ...]]]],
) -> None:
    archive, _ = built
    rows = rows_for([(8, 30.0), (10, 31.0)])
    entries = [write_segment(archive, n, segment(30), r) for n, r in rows.items()]
    write_manifest(archive, "20270101T000000Z-p20261206T0600", entries)
    with pytest.raises(ArchiveMismatchError, match="journal id 8 archived twice"):
        list(iter_rows(archive, "journal"))
    with pytest.raises(ArchiveMismatchError, match="journal id 8 archived twice"):
        list(iter_rows(archive, "verdicts"))
    assert [r[1] for r in iter_rows(archive, "dead_letters")] == [1, 3, 5, 7, 9]


def test_an_unreadable_manifest_is_refused(
    built: tuple[Archive, dict[str, list[tuple[object, ...]]]],
) -> None:
    archive, _ = built
    archive.write_bytes("manifests/zzz.json", b"not json")
    with pytest.raises(ArchiveMismatchError, match=r"manifests/zzz\.json"):
        next(iter_rows(archive, "journal"))
