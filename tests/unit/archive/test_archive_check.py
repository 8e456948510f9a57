"""check_archive: a whole archive against its manifests, every kind of tampering named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.archive import (
    Archive,
    Problem,
    check_archive,
    open_archive,
    rows_to_parquet,
    write_manifest,
    write_segment,
)
from tests.unit.archive.samples import at, build_archive, journal_row, rows_for, segment

JOURNAL_0 = "journal/day=2026-12-05/p20261205T0000.parquet"
VERDICTS_6 = "verdicts/day=2026-12-05/p20261205T0600.parquet"


@pytest.fixture
def archive(tmp_path: Path) -> Archive:
    archive = open_archive(str(tmp_path / "archive"))
    build_archive(archive)
    return archive


def root(archive: Archive) -> Path:
    return Path(archive.url)


def manifests(archive: Archive) -> list[Path]:
    return sorted((root(archive) / "manifests").iterdir())


def kinds(problems: tuple[Problem, ...]) -> list[tuple[str, str]]:
    return [(p.kind, p.path) for p in problems]


def test_an_untouched_archive_has_no_problem(archive: Archive) -> None:
    report = check_archive(archive)
    assert report.ok, str(report)
    assert (report.manifests, report.files) == (2, 20)
    assert report.rows == {
        "journal": 9,
        "game_versions": 18,
        "verdicts": 18,
        "dead_letters": 5,
        "consumer_positions": 9,
    }
    assert "no problem" in str(report)


def test_a_missing_file(archive: Archive) -> None:
    (root(archive) / JOURNAL_0).unlink()
    report = check_archive(archive)
    assert kinds(report.problems) == [("missing", JOURNAL_0)]
    assert "listed by run 20261206T060000Z-p20261205T0000-p20261205T0600" in str(report)


def test_an_extra_file(archive: Archive) -> None:
    extra = "verdicts/day=2026-12-07/p20261207T0000.parquet"
    archive.write_bytes(extra, rows_to_parquet("verdicts", []))
    leftover = "journal/day=2026-12-05/.p20261205T0000.parquet.abc.tmp"
    archive.write_bytes(leftover, b"half")
    report = check_archive(archive)
    assert sorted(kinds(report.problems)) == [("extra", leftover), ("extra", extra)]
    assert "in no manifest" in report.problems[0].message


def test_an_extra_file_among_the_manifests(archive: Archive) -> None:
    archive.write_bytes("manifests/.run.json.x.tmp", b"{")
    assert kinds(check_archive(archive).problems) == [("extra", "manifests/.run.json.x.tmp")]


def test_an_altered_file_one_byte(archive: Archive) -> None:
    path = root(archive) / VERDICTS_6
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    report = check_archive(archive)
    assert kinds(report.problems) == [("altered", VERDICTS_6)]
    assert "SHA-256" in report.problems[0].message


def test_an_altered_file_rewritten_as_valid_parquet_with_one_row_less(archive: Archive) -> None:
    rows = rows_for([(3, 6.0), (5, 6.5), (6, 7.0)])["journal"]
    path = "journal/day=2026-12-05/p20261205T0600.parquet"
    archive.write_bytes(path, rows_to_parquet("journal", rows[:-1]))
    assert kinds(check_archive(archive).problems) == [("altered", path)]


def test_a_manifest_edited_to_match_an_altered_file_is_still_caught(archive: Archive) -> None:
    """The file's hash and size are put in the manifest too: its rows no longer match the rows
    digest, the count or the journal ids."""
    import hashlib

    rows = rows_for([(3, 6.0), (5, 6.5), (6, 7.0)])["journal"]
    changed = [rows[0], rows[1], journal_row(6, at(7.0), raw=b"forged")]
    path = "journal/day=2026-12-05/p20261205T0600.parquet"
    data = rows_to_parquet("journal", changed)
    archive.write_bytes(path, data)
    manifest = manifests(archive)[0]
    document = json.loads(manifest.read_text())
    for entry in document["files"]:
        if entry["path"] == path:
            entry["sha256"] = hashlib.sha256(data).hexdigest()
            entry["size"] = len(data)
    manifest.write_text(json.dumps(document))
    report = check_archive(archive)
    assert kinds(report.problems) == [("inconsistent", path)]
    assert "rows digest" in report.problems[0].message


def test_a_segment_in_two_manifests(archive: Archive) -> None:
    first = json.loads(manifests(archive)[0].read_text())
    copy = {"run_id": "20270101T000000Z-again", "files": first["files"][:1]}
    archive.write_bytes("manifests/20270101T000000Z-again.json", json.dumps(copy).encode())
    report = check_archive(archive)
    assert kinds(report.problems) == [("duplicated", JOURNAL_0)]
    assert "journal segment p20261205T0000 is archived 2 times" in str(report)
    assert "20270101T000000Z-again" in str(report)


def test_a_journal_id_in_two_files(tmp_path: Path) -> None:
    archive = open_archive(str(tmp_path))
    build_archive(archive)
    # a later partition holding journal id 8 again (and a new one), in a third run; id 8 has
    # no dead letter (only odd ids have), so every table but dead_letters overlaps
    rows = rows_for([(8, 30.0), (10, 31.0)])
    seg = segment(30)
    entries = [write_segment(archive, name, seg, r) for name, r in rows.items()]
    write_manifest(archive, "20270101T000000Z-p20261206T0600", entries)
    report = check_archive(archive)
    expected = [
        (name, f"{name}/day=2026-12-06/p20261206T0600.parquet")
        for name in ("consumer_positions", "game_versions", "journal", "verdicts")
    ]
    assert sorted((p.message.split(":")[0], p.path) for p in report.problems) == expected
    assert {p.kind for p in report.problems} == {"overlap"}
    assert "journal id 8 archived twice, in journal/day=2026-12-05/p20261205T1200.parquet" in str(
        report
    )


def test_interleaved_id_ranges_without_a_common_id_are_no_overlap(archive: Archive) -> None:
    """The first two partitions' ranges are 1..4 and 3..6 (ids 1, 2, 4 and 3, 5, 6): no overlap."""
    entries = json.loads(manifests(archive)[0].read_text())["files"]
    ranges = {
        (e["first_journal_id"], e["last_journal_id"]) for e in entries if e["table"] == "journal"
    }
    assert ranges == {(1, 4), (3, 6)}
    assert check_archive(archive).ok


def test_an_unreadable_manifest(archive: Archive) -> None:
    path = manifests(archive)[1]
    path.write_text('{"run_id": "x", "files": [], "extra": 1}')
    report = check_archive(archive)
    relative = f"manifests/{path.name}"
    problems = kinds(report.problems)
    assert ("bad-manifest", relative) in problems
    # its files are then in no manifest
    assert {k for k, _ in problems} == {"bad-manifest", "extra"}
    assert len(problems) == 1 + 10
