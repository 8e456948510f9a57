"""Real services for integration tests: a PostgreSQL server (and, later, Apache Kafka).

The services are started by the project's scripts (scripts/test does it); their addresses
arrive in REFEREE_TEST_DATABASE_URL and REFEREE_TEST_KAFKA. Without them the tests are
skipped on a developer's machine and fail under CI, so a missing service never passes
silently.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from sqlalchemy.engine import make_url


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
