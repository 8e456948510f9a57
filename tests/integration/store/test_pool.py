"""The engine's pool on a real PostgreSQL: a connection the server closed is replaced."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from referee.store.database import create_engine
from tests.integration.conftest import execute

pytestmark = pytest.mark.postgres


async def test_a_pooled_connection_the_server_closed_is_replaced_at_checkout(
    migrated_database: str,
) -> None:
    engine = create_engine(migrated_database, pool_size=1, max_overflow=0)
    try:
        async with engine.connect() as conn:
            first = await conn.scalar(text("SELECT pg_backend_pid()"))
        await execute(migrated_database, "SELECT pg_terminate_backend($1)", first)
        await asyncio.sleep(0.3)  # the driver sees its socket close
        async with engine.connect() as conn:
            second = await conn.scalar(text("SELECT pg_backend_pid()"))
    finally:
        await engine.dispose()
    assert second != first
