"""Connecting to PostgreSQL: the configured server, or the embedded one (pgserver)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

_PACKAGE = Path(__file__).resolve().parents[1]
MIGRATIONS = (
    _PACKAGE / "_data" / "migrations"  # an installed wheel carries them (pyproject.toml)
    if (_PACKAGE / "_data" / "migrations").is_dir()
    else _PACKAGE.parent / "migrations"  # the source tree
)
"""The Alembic migrations: in the installed package, or in the source tree."""

EMBEDDED_MISSING = (
    "the embedded PostgreSQL needs the 'embedded' extra: pip install 'referee[embedded]' "
    "(or set REFEREE_DATABASE_URL to a PostgreSQL server)"
)


class EmbeddedPostgresMissingError(RuntimeError):
    """The embedded PostgreSQL was asked for, but the optional ``pgserver`` is not installed."""


def async_url(url: str) -> str:
    """Returns the URL with the asyncpg driver (``postgresql://`` is accepted too)."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres", "postgresql+psycopg", "postgresql+asyncpg"):
        parsed = parsed.set(drivername="postgresql+asyncpg")
    else:
        raise ValueError(f"not a PostgreSQL URL: {parsed.drivername}")
    return parsed.render_as_string(hide_password=False)


def create_engine(url: str, pool_size: int = 5, max_overflow: int = 5) -> AsyncEngine:
    """Returns an async engine on the asyncpg driver."""
    return create_async_engine(
        async_url(url), pool_size=pool_size, max_overflow=max_overflow, pool_pre_ping=True
    )


def embedded_url(data_dir: Path) -> str:
    """Starts (or reuses) the embedded PostgreSQL under ``data_dir``; returns its URL.

    The server is PyPI's ``pgserver``: real PostgreSQL binaries shipped in a wheel, listening
    on a Unix socket in the data directory. It stops when this process exits. It is the
    optional extra ``referee[embedded]`` (34 MB of binaries the service image does without):
    without it this raises :class:`EmbeddedPostgresMissingError` with one line that says so.
    """
    try:
        import pgserver  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise EmbeddedPostgresMissingError(EMBEDDED_MISSING) from None

    pgdata = (data_dir / "pgdata").resolve()
    pgdata.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(pgdata)  # type: ignore[attr-defined,unused-ignore]
    uri: str = server.get_uri()
    return uri


def migrate(url: str, revision: str = "head") -> None:
    """Upgrades the database to ``revision`` with Alembic."""
    _alembic("upgrade", url, revision)


def downgrade(url: str, revision: str = "base") -> None:
    """Downgrades the database to ``revision`` with Alembic."""
    _alembic("downgrade", url, revision)


def _alembic(action: str, url: str, revision: str) -> None:
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", async_url(url).replace("%", "%%"))
    getattr(command, action)(config, revision)
