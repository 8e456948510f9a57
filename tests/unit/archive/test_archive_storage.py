"""Where an archive lives: URLs, the S3 settings from the environment, atomic local writes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

import pytest

from referee.archive import ArchiveError, open_archive
from referee.archive import storage as storage_module
from referee.archive.storage import LocalArchive, S3Archive, S3Options, s3_options


def test_a_plain_path_and_a_file_url_are_local_directories(tmp_path: Path) -> None:
    plain = open_archive(str(tmp_path / "a"))
    url = open_archive((tmp_path / "a").as_uri())
    assert isinstance(plain, LocalArchive)
    assert isinstance(url, LocalArchive)
    assert plain.root == url.root == tmp_path / "a"
    plain.write_bytes("x/y.bin", b"1")
    assert url.read_bytes("x/y.bin") == b"1"


@pytest.mark.parametrize(
    "url",
    [
        "",
        "   ",
        " /tmp/archive",
        "/tmp/archive\n",
        "/tmp/a\x01b",
        "s3://b/p\x7f",
        "ftp://host/x",
        "s3://",
        "s3:///prefix",
        "file://otherhost/x",
        "s3://b/../x",
    ],
)
def test_what_is_no_archive_url_is_refused(url: str) -> None:
    with pytest.raises(ArchiveError):
        open_archive(url, environ={})


def test_an_s3_url_is_a_bucket_and_a_prefix() -> None:
    archive = open_archive("s3://bucket/some/prefix/", environ={"AWS_REGION": "eu-west-3"})
    assert isinstance(archive, S3Archive)
    assert archive.base == "bucket/some/prefix"
    assert archive.filesystem.region == "eu-west-3"
    assert archive.url == "s3://bucket/some/prefix/"
    bare = open_archive("s3://bucket", environ={})
    assert isinstance(bare, S3Archive)
    assert bare.base == "bucket"


def test_the_s3_settings_come_from_the_usual_variables() -> None:
    assert s3_options({}) == S3Options()
    env = {
        "AWS_ACCESS_KEY_ID": "AKID",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_SESSION_TOKEN": "token",
        "AWS_DEFAULT_REGION": "eu-central-1",
        "AWS_ENDPOINT_URL": "https://s3.example:443",
    }
    assert s3_options(env) == S3Options(
        access_key="AKID",
        secret_key="secret",
        session_token="token",
        region="eu-central-1",
        scheme="https",
        endpoint_override="s3.example:443",
    )
    # the specific ones win over the general ones
    env |= {
        "AWS_REGION": "us-west-2",
        "AWS_ENDPOINT_URL_S3": "http://minio.local:9000",
    }
    options = s3_options(env)
    assert (options.region, options.scheme, options.endpoint_override) == (
        "us-west-2",
        "http",
        "minio.local:9000",
    )


@pytest.mark.parametrize(
    "env",
    [
        {"AWS_ACCESS_KEY_ID": "AKID"},
        {"AWS_SECRET_ACCESS_KEY": "secret"},
        {"AWS_ENDPOINT_URL": "minio.local:9000"},
        {"AWS_ENDPOINT_URL": "ftp://minio.local"},
        {"AWS_ENDPOINT_URL": "http://minio.local:9000/path"},
        {"AWS_ENDPOINT_URL_S3": "http://user:pw@minio.local"},
    ],
)
def test_incomplete_or_odd_s3_settings_are_refused(env: dict[str, str]) -> None:
    with pytest.raises(ArchiveError):
        s3_options(env)


def test_local_write_read_list_exists(tmp_path: Path) -> None:
    archive = open_archive(str(tmp_path))
    assert archive.list_files("journal") == []
    assert not archive.exists("journal/day=2026-12-05/a.parquet")
    archive.write_bytes("journal/day=2026-12-05/b.parquet", b"b")
    archive.write_bytes("journal/day=2026-12-05/a.parquet", b"a")
    archive.write_bytes("journal/day=2026-12-06/c.parquet", b"")
    archive.write_bytes("verdicts/day=2026-12-05/a.parquet", b"v")
    assert archive.list_files("journal") == [
        "journal/day=2026-12-05/a.parquet",
        "journal/day=2026-12-05/b.parquet",
        "journal/day=2026-12-06/c.parquet",
    ]
    assert archive.exists("journal/day=2026-12-05/a.parquet")
    assert archive.read_bytes("journal/day=2026-12-06/c.parquet") == b""
    archive.write_bytes("journal/day=2026-12-05/a.parquet", b"again")
    assert archive.read_bytes("journal/day=2026-12-05/a.parquet") == b"again"
    with pytest.raises(ArchiveError, match="cannot read"):
        archive.read_bytes("journal/none.parquet")


@pytest.mark.parametrize("path", ["/etc/passwd", "../x", "a/../../x", "a//b", "", "a/./b", "a\\b"])
def test_a_path_outside_the_archive_is_refused(tmp_path: Path, path: str) -> None:
    archive = open_archive(str(tmp_path / "archive"))
    with pytest.raises(ArchiveError, match="not a path inside an archive"):
        archive.write_bytes(path, b"x")
    assert not (tmp_path / "x").exists()


def test_a_write_that_fails_midway_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = open_archive(str(tmp_path))
    path = "journal/day=2026-12-05/p.parquet"

    directory = tmp_path / "journal" / "day=2026-12-05"
    mid_write: list[Path] = []

    def half_then_fail(stream: BinaryIO, data: bytes) -> None:
        stream.write(data[: len(data) // 2])
        stream.flush()
        # what a reader (or a crash) would find now: the half is not at the target
        mid_write.extend(p for p in directory.iterdir() if not p.name.startswith("."))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(storage_module, "_write_fully", half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        archive.write_bytes(path, b"0123456789" * 1000)
    assert mid_write == []
    assert list(directory.iterdir()) == []  # no target, no temporary file
    assert archive.list_files("journal") == []


def test_a_failed_write_keeps_the_file_it_would_have_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = open_archive(str(tmp_path))
    path = "manifests/run.json"
    archive.write_bytes(path, b"the old manifest")

    def fail_at_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", fail_at_fsync)
    with pytest.raises(OSError, match="Input/output error"):
        archive.write_bytes(path, b"the new one")
    assert archive.read_bytes(path) == b"the old manifest"
    assert archive.list_files("manifests") == [path]
