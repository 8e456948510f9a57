"""The S3 server of the test suite is a real one (SeaweedFS from scripts/s3.sh), not a stub.

What the Parquet archive (`referee archive --to s3://bucket/prefix`) will need of it, through
the client it will use (pyarrow's own S3 filesystem, no boto3): objects written, listed and
read back byte for byte, a multipart upload, a Parquet file with zstd written and read through
an ``s3://`` URL with nothing but the standard AWS environment, and SigV4 signatures checked:
a wrong secret is refused.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import fs as pafs

from tests.integration.conftest import S3Server

pytestmark = pytest.mark.s3


def _path(url: str) -> str:
    """``bucket/key`` of an ``s3://bucket/key`` URL (pyarrow's path form)."""
    parts = urlsplit(url)
    assert parts.scheme == "s3"
    return f"{parts.netloc}{parts.path}"


def test_objects_are_written_listed_and_read_back(s3_server: S3Server, s3_archive_url: str) -> None:
    s3 = s3_server.filesystem()
    root = _path(s3_archive_url)
    objects = {
        f"{root}/a.bin": bytes(range(256)) * 4,
        f"{root}/day=2026-12-05/b.jsonl": b'{"game_id":"g1"}\n{"game_id":"g2"}\n',
        f"{root}/day=2026-12-05/empty": b"",
        # over the filer's 4 MiB chunk size and pyarrow's 5 MiB part size: a multipart upload
        f"{root}/big.bin": os.urandom(12 * 1024 * 1024 + 7),
    }
    for path, data in objects.items():
        with s3.open_output_stream(path) as out:
            out.write(data)

    listed = s3.get_file_info(pafs.FileSelector(root, recursive=True))
    files = {info.path: info.size for info in listed if info.type == pafs.FileType.File}
    assert files == {path: len(data) for path, data in objects.items()}
    for path, data in objects.items():
        with s3.open_input_stream(path) as stream:
            assert stream.read() == data
    with s3.open_input_file(f"{root}/big.bin") as handle:  # ranged reads
        handle.seek(5 * 1024 * 1024 - 3)
        assert handle.read(10) == objects[f"{root}/big.bin"][5 * 1024 * 1024 - 3 :][:10]
    assert s3.get_file_info(f"{root}/missing").type == pafs.FileType.NotFound

    s3.delete_file(f"{root}/a.bin")
    assert s3.get_file_info(f"{root}/a.bin").type == pafs.FileType.NotFound


def test_parquet_with_zstd_through_an_s3_url(s3_server: S3Server, s3_archive_url: str) -> None:
    table = pa.table(
        {
            "game_id": pa.array([f"g{i % 7}" for i in range(1000)], pa.string()),
            "seq": pa.array(range(1000), pa.int64()),
            "verdict": pa.array(
                ["FoulCommitted" if i % 13 == 0 else "Scored" for i in range(1000)]
            ),
        }
    )
    url = f"{s3_archive_url}/verdicts/part-0.parquet"
    # No filesystem object: pyarrow resolves the s3:// URL from the environment the fixture
    # set (AWS_ENDPOINT_URL, the keys, AWS_REGION), as `referee archive --to` will.
    pq.write_table(table, url, compression="zstd")

    assert pq.read_table(url).equals(table)
    metadata = pq.read_metadata(url)
    assert metadata.num_rows == 1000
    compressions = {
        metadata.row_group(g).column(c).compression
        for g in range(metadata.num_row_groups)
        for c in range(metadata.num_columns)
    }
    assert compressions == {"ZSTD"}
    # and the object is really on the server, seen by a client of its own
    info = s3_server.filesystem().get_file_info(_path(url))
    assert info.type == pafs.FileType.File
    assert info.size > 0


def test_a_wrong_secret_is_refused(s3_server: S3Server, s3_archive_url: str) -> None:
    root = _path(s3_archive_url)
    good = s3_server.filesystem()
    with good.open_output_stream(f"{root}/kept") as out:
        out.write(b"kept")

    bad = s3_server.filesystem(secret_key=s3_server.secret_key + "-wrong")
    # the gateway recomputes the SigV4 signature with the stored secret and refuses ours
    signature = r"SIGNATURE_DOES_NOT_MATCH .*signature we calculated does not match"
    with pytest.raises(OSError, match=signature):
        bad.get_file_info(pafs.FileSelector(root, recursive=True))
    with pytest.raises(OSError, match=signature), bad.open_output_stream(f"{root}/intruder") as out:
        out.write(b"nope")
    # a HEAD has no body to carry the reason: plain access denied
    with pytest.raises(OSError, match="ACCESS_DENIED"), bad.open_input_stream(f"{root}/kept") as s:
        s.read()
    assert good.get_file_info(f"{root}/intruder").type == pafs.FileType.NotFound
    with good.open_input_stream(f"{root}/kept") as stream:
        assert stream.read() == b"kept"
