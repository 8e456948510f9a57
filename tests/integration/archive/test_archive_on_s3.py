"""The archive library on the real S3-compatible server (scripts/s3.sh): the storage's
operations, a whole archive written, checked and read back."""

from __future__ import annotations

import uuid

import pytest

from referee.archive import check_archive, iter_rows, open_archive
from tests.unit.archive.samples import build_archive


@pytest.mark.s3
def test_an_s3_archive_round_trip(s3_archive_url: str) -> None:
    """The archive library against the real S3-compatible server of scripts/s3.sh."""
    archive = open_archive(f"{s3_archive_url.rstrip('/')}/{uuid.uuid4().hex}")
    assert archive.list_files("journal") == []
    archive.write_bytes("x/day=2026-12-05/a.bin", b"\0\1")
    assert archive.exists("x/day=2026-12-05/a.bin")
    assert not archive.exists("x/day=2026-12-05/b.bin")
    assert archive.read_bytes("x/day=2026-12-05/a.bin") == b"\0\1"
    assert archive.list_files("x") == ["x/day=2026-12-05/a.bin"]
    written = build_archive(archive)
    assert check_archive(archive).problems == ()
    assert list(iter_rows(archive, "journal")) == written["journal"]
