"""Where an archive lives: a local directory, or a bucket and prefix on any S3-compatible server.

``open_archive(url)`` takes a plain path, a ``file://`` URL or ``s3://bucket/prefix``. Paths inside
an archive are relative POSIX paths (``journal/day=2026-12-05/p20261205T0000.parquet``); a path
that is absolute, empty, or climbs with ``..`` is refused.

S3 goes through ``pyarrow.fs.S3FileSystem`` (no boto3), configured from the environment as the
AWS tools are: ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY`` (and ``AWS_SESSION_TOKEN``;
neither key set: the AWS SDK's own chain, such as an instance profile), ``AWS_REGION`` else
``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL_S3`` else ``AWS_ENDPOINT_URL`` (``http://host:port``
for MinIO or Ceph: the scheme is the endpoint's).
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol
from urllib.parse import unquote, urlsplit

from referee.archive.errors import ArchiveError

_PART = re.compile(r"^[A-Za-z0-9_=.+-]+$")


def check_path(path: str) -> str:
    """``path`` if it is a relative POSIX path of plain parts inside the archive."""
    parts = path.split("/")
    if not path or any(p in ("", ".", "..") or not _PART.match(p) for p in parts):
        raise ArchiveError(f"not a path inside an archive: {path!r}")
    return path


class Archive(Protocol):
    """The four operations the archive needs of a store of files."""

    @property
    def url(self) -> str:
        """Where the archive is, as given to ``open_archive`` (never with credentials)."""
        ...

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write the whole file at once: a reader sees the old file or the new one, never part."""
        ...

    def read_bytes(self, path: str) -> bytes:
        """The file's bytes; ``ArchiveError`` if it does not exist or cannot be read."""
        ...

    def list_files(self, prefix: str) -> list[str]:
        """Every file under the directory ``prefix`` (recursively), as sorted archive paths."""
        ...

    def exists(self, path: str) -> bool:
        """Whether the file exists."""
        ...


def _write_fully(stream: BinaryIO, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = stream.write(view)
        view = view[written:]


class LocalArchive:
    """An archive in a local directory (created on the first write)."""

    def __init__(self, root: Path, url: str) -> None:
        self.root = root
        self._url = url

    @property
    def url(self) -> str:
        return self._url

    def _file(self, path: str) -> Path:
        return self.root.joinpath(*check_path(path).split("/"))

    def write_bytes(self, path: str, data: bytes) -> None:
        """Temporary file in the same directory, written and fsynced, renamed over the target,
        then the directory fsynced: after a crash the file is whole or absent. A failure removes
        the temporary file (one left by a killed process is named ``.NAME.*.tmp``)."""
        target = self._file(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
        )
        try:
            with os.fdopen(fd, "wb") as stream:
                _write_fully(stream, data)
                stream.flush()
                os.fsync(stream.fileno())
            Path(temporary).replace(target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                Path(temporary).unlink()
            raise
        directory = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def read_bytes(self, path: str) -> bytes:
        try:
            return self._file(path).read_bytes()
        except OSError as error:
            raise ArchiveError(f"cannot read {path} in {self.url}: {error}") from error

    def list_files(self, prefix: str) -> list[str]:
        base = self._file(prefix)
        if not base.is_dir():
            return []
        return sorted(p.relative_to(self.root).as_posix() for p in base.rglob("*") if p.is_file())

    def exists(self, path: str) -> bool:
        return self._file(path).is_file()


@dataclass(frozen=True, slots=True)
class S3Options:
    """What ``S3FileSystem`` is given, read from the environment by ``s3_options``."""

    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None
    region: str | None = None
    scheme: str | None = None
    endpoint_override: str | None = None


def s3_options(environ: Mapping[str, str]) -> S3Options:
    """The S3 settings of an environment (see the module's docstring); ``ArchiveError`` for a
    key without its secret or an endpoint that is not ``http(s)://host[:port]``."""

    def get(*names: str) -> str | None:
        for name in names:
            value = environ.get(name, "").strip()
            if value:
                return value
        return None

    access_key, secret_key = get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY")
    if (access_key is None) != (secret_key is None):
        raise ArchiveError("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are set together or not")
    scheme = endpoint = None
    endpoint_url = get("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
    if endpoint_url is not None:
        parts = urlsplit(endpoint_url)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
            raise ArchiveError(
                f"the S3 endpoint {endpoint_url!r} is not http://host[:port] or https://host[:port]"
            )
        if parts.query or parts.fragment or "@" in parts.netloc:
            raise ArchiveError(f"the S3 endpoint {endpoint_url!r} has more than a host and port")
        scheme, endpoint = parts.scheme, parts.netloc
    return S3Options(
        access_key=access_key,
        secret_key=secret_key,
        session_token=get("AWS_SESSION_TOKEN") if access_key else None,
        region=get("AWS_REGION", "AWS_DEFAULT_REGION"),
        scheme=scheme,
        endpoint_override=endpoint,
    )


class S3Archive:
    """An archive under ``s3://bucket/prefix`` on any S3-compatible server."""

    def __init__(self, bucket: str, prefix: str, options: S3Options, url: str) -> None:
        from pyarrow import fs

        self._fs = fs
        self.filesystem = fs.S3FileSystem(
            access_key=options.access_key,
            secret_key=options.secret_key,
            session_token=options.session_token,
            region=options.region,
            scheme=options.scheme,
            endpoint_override=options.endpoint_override,
            background_writes=False,
        )
        self.base = f"{bucket}/{prefix}" if prefix else bucket
        self._url = url

    @property
    def url(self) -> str:
        return self._url

    def _key(self, path: str) -> str:
        return f"{self.base}/{check_path(path)}"

    def write_bytes(self, path: str, data: bytes) -> None:
        """One PUT (a multipart upload above pyarrow's part size, which S3 also makes visible
        only whole on completion): an object is never seen in part."""
        try:
            with self.filesystem.open_output_stream(self._key(path)) as stream:
                stream.write(data)
        except OSError as error:
            raise ArchiveError(f"cannot write {path} to {self.url}: {error}") from error

    def read_bytes(self, path: str) -> bytes:
        try:
            with self.filesystem.open_input_stream(self._key(path)) as stream:
                data: bytes = stream.read()
        except OSError as error:
            raise ArchiveError(f"cannot read {path} in {self.url}: {error}") from error
        return data

    def list_files(self, prefix: str) -> list[str]:
        selector = self._fs.FileSelector(self._key(prefix), recursive=True, allow_not_found=True)
        try:
            infos = self.filesystem.get_file_info(selector)
        except OSError as error:
            raise ArchiveError(f"cannot list {prefix} in {self.url}: {error}") from error
        start = len(self.base) + 1
        return sorted(i.path[start:] for i in infos if i.type == self._fs.FileType.File)

    def exists(self, path: str) -> bool:
        try:
            info = self.filesystem.get_file_info(self._key(path))
        except OSError as error:
            raise ArchiveError(f"cannot look for {path} in {self.url}: {error}") from error
        return bool(info.type == self._fs.FileType.File)


def open_archive(url: str, environ: Mapping[str, str] | None = None) -> Archive:
    """The archive at ``url``: a directory path, ``file:///dir``, or ``s3://bucket[/prefix]``.

    ``environ`` (default ``os.environ``) gives S3 its credentials, region and endpoint. Nothing
    is created or contacted here: a local directory is made on the first write. A URL that is
    blank, has spaces at its ends or holds a control character is refused (a directory named
    so is a mistake, never an archive).
    """
    if not url.strip() or url != url.strip():
        raise ArchiveError(f"an archive URL is a path, file:// or s3://, not {url!r}")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        raise ArchiveError(f"an archive URL holds no control character: {url!r}")
    parts = urlsplit(url)
    if parts.scheme == "s3":
        bucket, prefix = parts.netloc, parts.path.strip("/")
        if not bucket or parts.query or parts.fragment:
            raise ArchiveError(f"an S3 archive is s3://bucket[/prefix], not {url!r}")
        if prefix:
            check_path(prefix)
        options = s3_options(os.environ if environ is None else environ)
        return S3Archive(bucket, prefix, options, url)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise ArchiveError(f"a file:// archive is on this machine, not on {parts.netloc!r}")
        return LocalArchive(Path(unquote(parts.path)), url)
    if parts.scheme and len(parts.scheme) > 1:  # "C:" of a Windows path is no scheme
        raise ArchiveError(f"an archive URL is a path, file:// or s3://, not {url!r}")
    if not url:
        raise ArchiveError("an archive URL is a path, file:// or s3://, not empty")
    return LocalArchive(Path(url), url)
