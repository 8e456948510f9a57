"""Real services for integration tests: a PostgreSQL server, Apache Kafka, an S3 server.

The services are started by the project's scripts (scripts/test does it); their addresses
arrive in REFEREE_TEST_DATABASE_URL, REFEREE_TEST_KAFKA and REFEREE_TEST_S3_ENDPOINT (with
REFEREE_TEST_S3_ACCESS_KEY and REFEREE_TEST_S3_SECRET_KEY). Without them the tests are
skipped on a developer's machine and fail under CI, so a missing service never passes
silently.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import asyncpg
import pytest
from pyarrow import fs as pafs
from sqlalchemy.engine import make_url

from tests.releases import Builds


def _require(var: str) -> str:
    value = os.environ.get(var)
    if value:
        return value
    if os.environ.get("CI"):
        pytest.fail(f"{var} is not set: scripts/test starts the service and sets it")
    pytest.skip(f"{var} is not set (run scripts/test, which starts the real service)")


@pytest.fixture(scope="session")
def admin_url() -> str:
    """The superuser URL of the test PostgreSQL server."""
    return _require("REFEREE_TEST_DATABASE_URL")


def _plain(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _with_database(url: str, name: str) -> str:
    return make_url(url).set(database=name).render_as_string(hide_password=False)


async def create_database(admin: str) -> str:
    """Creates an empty database; returns its URL."""
    name = f"referee_t_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(_plain(admin))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return _with_database(admin, name)


async def drop_database(admin: str, url: str) -> None:
    """Drops a database made by ``create_database``."""
    name = make_url(url).database
    conn = await asyncpg.connect(_plain(admin))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def earlier_release(tmp_path_factory: pytest.TempPathFactory) -> Builds:
    """``earlier_release(commit)``: the tree of an earlier release with its own locked
    environment (tests/releases.py), built once a session whichever test asks first."""
    return Builds(tmp_path_factory.mktemp)


@pytest.fixture
async def empty_database(admin_url: str) -> AsyncIterator[str]:
    """A fresh, empty database (URL), dropped afterwards."""
    url = await create_database(admin_url)
    yield url
    await drop_database(admin_url, url)


@pytest.fixture
def migrated_database(empty_database: str) -> str:
    """A fresh database migrated to head."""
    from referee.store.database import migrate

    migrate(empty_database)
    return empty_database


async def fetch(url: str, query: str, *args: object) -> list[asyncpg.Record]:
    """Runs one query as the URL's user and returns the rows."""
    conn = await asyncpg.connect(_plain(url))
    try:
        return list(await conn.fetch(query, *args))
    finally:
        await conn.close()


async def execute(url: str, query: str, *args: object) -> str:
    """Runs one statement as the URL's user."""
    conn = await asyncpg.connect(_plain(url))
    try:
        return str(await conn.execute(query, *args))
    finally:
        await conn.close()


@dataclass(frozen=True)
class S3Server:
    """The test S3 server (SeaweedFS, started by scripts/s3.sh) and its static credentials."""

    endpoint: str  # http://127.0.0.1:<port>
    access_key: str
    secret_key: str

    def filesystem(self, *, secret_key: str | None = None) -> pafs.S3FileSystem:
        """A pyarrow S3 client on the server (path-style, plain HTTP); ``secret_key``
        overrides the secret (to show a wrong one is refused)."""
        url = urlsplit(self.endpoint)
        return pafs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key if secret_key is None else secret_key,
            region="us-east-1",
            scheme=url.scheme,
            endpoint_override=url.netloc,
            allow_bucket_creation=True,
            allow_bucket_deletion=True,
            connect_timeout=5,
            request_timeout=30,
            retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=2),
        )


@pytest.fixture(scope="session")
def s3_server() -> S3Server:
    """The S3 server of the test suite (started by scripts/test)."""
    return S3Server(
        endpoint=_require("REFEREE_TEST_S3_ENDPOINT"),
        access_key=_require("REFEREE_TEST_S3_ACCESS_KEY"),
        secret_key=_require("REFEREE_TEST_S3_SECRET_KEY"),
    )


@pytest.fixture
def s3_archive_url(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``s3://<bucket>/archive`` in a fresh bucket (deleted afterwards, with what is in it),
    with the environment any S3 client reads set for the test server: the static
    credentials, AWS_ENDPOINT_URL and AWS_REGION (and no instance-metadata lookups)."""
    bucket = f"referee-t-{uuid.uuid4().hex[:12]}"
    s3 = s3_server.filesystem()
    s3.create_dir(bucket)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    yield f"s3://{bucket}/archive"
    s3.delete_dir(bucket)
