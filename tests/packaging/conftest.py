"""The real PostgreSQL's fixtures, for the wheel's test."""

from tests.integration.conftest import admin_url, empty_database

__all__ = ["admin_url", "empty_database"]
