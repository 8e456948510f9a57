"""Connecting to PostgreSQL: the configured server, or the embedded one (pgserver).

Operators paste libpq URLs (``postgresql://user:pw@host/db?sslmode=verify-full``); asyncpg
takes its TLS settings as one ``ssl`` connect argument instead, and SQLAlchemy would hand it
``sslmode=`` as an unknown keyword. :func:`parse_database_url` maps the libpq parameters to
asyncpg's arguments, refuses what it does not understand with a message that names it (and
never the password), and is the only place a URL is read.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import warnings
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from referee.store.partitions import PartitionPolicy, create_partitions

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

SCHEMES = frozenset({"postgresql", "postgres", "postgresql+asyncpg", "postgresql+psycopg"})
SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
SSL_FILES = ("sslrootcert", "sslcert", "sslkey")
SERVER_SETTINGS = {"jit": "off"}
"""Set on every connection. The referee's statements are short lookups and writes: the JIT
compiles a statement when its estimated cost is high, which an unanalyzed partition's
estimates make it (a fresh journal partition before autovacuum's first ANALYZE), and then
compiles for far longer than the lookup runs (docs/store.md, "Lookups that do not depend on
statistics")."""


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """How long a session may run one statement, wait for one lock, and sit idle inside a
    transaction, in seconds (PostgreSQL's ``statement_timeout``, ``lock_timeout`` and
    ``idle_in_transaction_session_timeout``; 0: no limit). ``referee serve`` sets them on
    every connection it opens; the commands that read for minutes set none (docs/deploy.md,
    "The database sessions: time limits"). What each raises is an outage
    (``store/errors.py``)."""

    statement: float = 60.0
    lock: float = 30.0
    idle_in_transaction: float = 30.0

    def server_settings(self) -> dict[str, str]:
        """The limits as connection parameters (milliseconds)."""
        return {
            "statement_timeout": _milliseconds(self.statement),
            "lock_timeout": _milliseconds(self.lock),
            "idle_in_transaction_session_timeout": _milliseconds(self.idle_in_transaction),
        }


def _milliseconds(seconds: float) -> str:
    return str(round(seconds * 1000))


PASSED_THROUGH = frozenset({"host", "port", "ssl", "prepared_statement_cache_size"})
"""Query parameters SQLAlchemy's asyncpg dialect reads itself."""
LIBPQ = frozenset({*SSL_FILES, "sslmode", "sslpassword", "connect_timeout", "application_name"})
URL_SHAPE = "postgresql://user:password@host:5432/database"
MAX_PORT = 65535


class EmbeddedPostgresMissingError(RuntimeError):
    """The embedded PostgreSQL was asked for, but the optional ``pgserver`` is not installed."""


class DatabaseUrlError(ValueError):
    """A database URL that is not PostgreSQL's, or a parameter that cannot be honoured."""


@dataclass(frozen=True, slots=True)
class DatabaseTarget:
    """A parsed database URL: the asyncpg URL and the connect arguments libpq's became."""

    url: URL
    connect_args: dict[str, Any]
    shown: str
    """The URL as written but for the password (``***``): what may be printed or logged."""


def parse_database_url(url: str) -> DatabaseTarget:
    """Parses a PostgreSQL URL (libpq style accepted); raises :class:`DatabaseUrlError`."""
    try:
        parsed = make_url(url.strip())
    except ArgumentError:  # its message repeats the URL, password and all
        raise DatabaseUrlError(f"not a database URL; expected {URL_SHAPE}") from None
    except ValueError:  # int() of the port: not repeated either, the URL holds the password
        if "," in url.partition("://")[2].partition("/")[0].rpartition("@")[2]:
            raise DatabaseUrlError(
                "more than one host:port in the URL is not supported; give them as "
                "?host=h1,h2&port=p1,p2"
            ) from None
        raise DatabaseUrlError(
            f"the URL's port is not a number from 1 to {MAX_PORT}; expected {URL_SHAPE}"
        ) from None
    if parsed.drivername not in SCHEMES:
        raise DatabaseUrlError(
            f"{parsed.drivername}:// is not PostgreSQL; expected {URL_SHAPE} "
            "(postgres:// and postgresql+asyncpg:// work too)"
        )
    if parsed.port is not None and not 1 <= parsed.port <= MAX_PORT:
        raise DatabaseUrlError(f"port {parsed.port} is out of range: 1 to {MAX_PORT}")
    query = {key: _single(key, value) for key, value in parsed.query.items()}
    unknown = sorted(set(query) - LIBPQ - PASSED_THROUGH)
    if unknown:
        raise DatabaseUrlError(
            f"unknown URL parameter {unknown[0]!r}; understood: "
            + ", ".join(sorted(LIBPQ | PASSED_THROUGH))
        )
    connect_args: dict[str, Any] = {}
    tls = _ssl_argument(query)
    if tls is not None:
        if "ssl" in query:
            raise DatabaseUrlError("give sslmode= or asyncpg's ssl=, not both")
        connect_args["ssl"] = tls
    if "connect_timeout" in query:
        connect_args["timeout"] = _seconds(query["connect_timeout"])
    connect_args["server_settings"] = dict(SERVER_SETTINGS)
    if "application_name" in query:
        connect_args["server_settings"]["application_name"] = query["application_name"]
    _check_passed_through(query)
    kept = {k: v for k, v in query.items() if k in PASSED_THROUGH}
    target = parsed.set(drivername="postgresql+asyncpg", query=kept)
    dialect: Any = PGDialect_asyncpg()  # type: ignore[no-untyped-call]
    try:  # what is left to the dialect (host= and port= lists that do not pair up) fails here
        dialect.create_connect_args(target)
    except (ArgumentError, ValueError) as bad:  # their messages never hold the password
        raise DatabaseUrlError(f"host=/port= of the URL: {bad}") from None
    return DatabaseTarget(target, connect_args, _shown(parsed))


def _shown(parsed: URL) -> str:
    """The URL as written, its password and a key's password (``sslpassword``) hidden."""
    if "sslpassword" in parsed.query:
        parsed = parsed.update_query_dict({"sslpassword": "***"})
    return parsed.render_as_string(hide_password=True)


def _single(key: str, value: str | tuple[str, ...]) -> str:
    if isinstance(value, tuple):
        raise DatabaseUrlError(f"URL parameter {key!r} is given more than once")
    return value


def is_port(text: str) -> bool:
    """Checks that ``text`` is a TCP port: a number from 1 to ``MAX_PORT``."""
    return text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_PORT


def _check_passed_through(query: dict[str, str]) -> None:
    """Checks the parameters SQLAlchemy and asyncpg read themselves, which would otherwise
    fail only when connecting (and as a defect: a ``ValueError``, an ``OverflowError``)."""
    for port in query["port"].split(",") if "port" in query else ():
        if not is_port(port):
            raise DatabaseUrlError(
                f"port={query['port']!r}: each port is a number from 1 to {MAX_PORT}"
            )
    size = query.get("prepared_statement_cache_size")
    if size is not None and not (size.isascii() and size.isdigit()):
        raise DatabaseUrlError(
            f"prepared_statement_cache_size={size!r} is not a whole number (0: no cache)"
        )
    if "ssl" in query and query["ssl"] not in SSL_MODES:
        raise DatabaseUrlError(f"ssl={query['ssl']!r}; expected one of {', '.join(SSL_MODES)}")


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise DatabaseUrlError(f"connect_timeout={value!r} is not a number of seconds") from None
    if seconds <= 0:
        raise DatabaseUrlError("connect_timeout must be positive")
    return seconds


def _ssl_argument(query: dict[str, str]) -> ssl.SSLContext | str | None:
    """Returns asyncpg's ``ssl`` argument for libpq's sslmode and certificate files.

    ``disable``, ``allow``, ``prefer`` and ``require`` without files are asyncpg's own modes
    (the same semantics as libpq's). A certificate makes TLS mandatory, so it needs
    ``require`` or ``verify-*``: ``verify-ca`` checks the server's chain against
    ``sslrootcert`` (the system CAs when it is absent or ``system``), ``verify-full`` the
    host name too; ``require`` with ``sslrootcert`` verifies the chain, as libpq does.
    """
    mode = query.get("sslmode")
    if mode is not None and mode not in SSL_MODES:
        raise DatabaseUrlError(f"sslmode={mode!r}; expected one of {', '.join(SSL_MODES)}")
    files = {name: query[name] for name in SSL_FILES if query.get(name)}
    if "sslkey" in files and "sslcert" not in files:
        raise DatabaseUrlError("sslkey= needs sslcert= (the client certificate)")
    if "sslpassword" in query and "sslkey" not in files:
        raise DatabaseUrlError("sslpassword= needs sslkey=")
    if not files and mode not in ("verify-ca", "verify-full"):
        return mode  # asyncpg's own (and None: its default, prefer, like libpq's)
    if mode in (None, "disable", "allow", "prefer"):
        raise DatabaseUrlError(
            f"{', '.join(f'{k}=' for k in files)} need sslmode=require, verify-ca or "
            f"verify-full (got {'no sslmode' if mode is None else 'sslmode=' + mode})"
        )
    rootcert = files.get("sslrootcert")
    if mode == "require" and rootcert is not None:
        mode = "verify-ca"
    for name, path in files.items():
        if not (name == "sslrootcert" and path == "system") and not Path(path).is_file():
            raise DatabaseUrlError(f"{name}={path!r}: no such file")
    try:
        if mode == "require":
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        else:
            cafile = None if rootcert in (None, "system") else rootcert
            context = ssl.create_default_context(cafile=cafile)
            context.check_hostname = mode == "verify-full"
        if "sslcert" in files:
            context.load_cert_chain(
                files["sslcert"], files.get("sslkey"), query.get("sslpassword") or None
            )
    except (ssl.SSLError, OSError) as bad:
        raise DatabaseUrlError(f"cannot load the TLS files of the URL: {bad}") from None
    return context


def create_engine(
    url: str, pool_size: int = 5, max_overflow: int = 5, limits: SessionLimits | None = None
) -> AsyncEngine:
    """Returns an async engine on the asyncpg driver; its connections carry ``limits`` when
    given (``referee serve``'s).

    A pooled connection whose server went away (a PostgreSQL restart, a failover) is
    replaced at checkout, without the round trip of a ping (SQLAlchemy's ``pool_pre_ping``
    would cost one a checkout, two a live batch): asyncpg marks a connection closed as soon
    as its socket does, and a connection that breaks in use fails that batch, which is
    retried as an outage (``referee/store/errors.py``) on a connection of its own.
    """
    target = parse_database_url(url)
    connect_args = target.connect_args
    if limits is not None:
        connect_args["server_settings"].update(limits.server_settings())
    engine = create_async_engine(
        target.url,
        connect_args=connect_args,
        pool_size=pool_size,
        max_overflow=max_overflow,
    )
    event.listen(engine.sync_engine.pool, "checkout", _replace_closed)
    return engine


def _replace_closed(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """Makes the pool replace a connection its driver knows closed (SQLAlchemy retries the
    checkout on ``DisconnectionError``)."""
    driver = getattr(dbapi_connection, "driver_connection", None)
    if driver is None or driver.is_closed():
        raise DisconnectionError("the pooled connection was closed")


async def check_reachable(engine: AsyncEngine, seconds: float = 10.0) -> None:
    """Connects once and runs ``SELECT 1``; raises what the connection raised."""
    async with asyncio.timeout(seconds), engine.connect() as conn:
        await conn.execute(text("SELECT 1"))


async def schema_revision(engine: AsyncEngine) -> str | None:
    """Returns the Alembic revision the database is at (None: never migrated)."""
    async with engine.connect() as conn:
        if await conn.scalar(text("SELECT to_regclass('alembic_version')")) is None:
            return None
        revision: str | None = await conn.scalar(text("SELECT version_num FROM alembic_version"))
        return revision


def newest_revision() -> str:
    """Returns the head revision of the migrations this code ships."""
    revisions = _revisions()
    (head,) = set(revisions) - {down for down in revisions.values() if down is not None}
    return head


def known_revisions() -> frozenset[str]:
    """Returns every revision of the migrations this code ships (an older one can migrate
    up from any of them; a revision outside them is a newer referee's)."""
    return frozenset(_revisions())


_REVISION = re.compile(r'^revision = "(\w+)"$', re.MULTILINE)
_DOWN_REVISION = re.compile(r'^down_revision = (?:None|"(\w+)")$', re.MULTILINE)


@cache
def _revisions() -> dict[str, str | None]:
    """Each migration's revision and the one it follows, read from the files' assignments.

    ``serve`` and ``audit`` check the schema's revision at every start; Alembic's own scan
    imports Alembic and every migration module (a sixth of a start: docs/design.md,
    "Performance choices") for two identifiers per file. A test holds this to Alembic's
    ``ScriptDirectory``.
    """
    found: dict[str, str | None] = {}
    for path in sorted((MIGRATIONS / "versions").glob("*.py")):
        source = path.read_text(encoding="utf-8")
        revision, down = _REVISION.search(source), _DOWN_REVISION.search(source)
        if revision is None or down is None:
            raise RuntimeError(f"{path.name}: no revision = ... and down_revision = ... lines")
        found[revision.group(1)] = down.group(1)
    return found


async def ping(engine: AsyncEngine) -> None:
    """Asks the server for nothing: raises if it cannot be reached."""
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))


def embedded_url(data_dir: Path) -> str:
    """Starts (or reuses) the embedded PostgreSQL under ``data_dir``; returns its URL.

    The server is PyPI's ``pgserver``: real PostgreSQL binaries shipped in a wheel, listening
    on a Unix socket in the data directory. It stops when this process exits. It is the
    optional extra ``referee[embedded]`` (binaries the service image does without,
    docs/dependencies.md):
    without it this raises :class:`EmbeddedPostgresMissingError` with one line that says so.
    """
    with warnings.catch_warnings():
        # platformdirs (under pgserver) warns on every run where no XDG_RUNTIME_DIR is set
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        try:
            import pgserver  # type: ignore[import-untyped,unused-ignore]
        except ImportError:
            raise EmbeddedPostgresMissingError(EMBEDDED_MISSING) from None
        pgdata = (data_dir / "pgdata").resolve()
        pgdata.mkdir(parents=True, exist_ok=True)
        server = pgserver.get_server(pgdata)  # type: ignore[attr-defined,unused-ignore]
    uri: str = server.get_uri()
    return uri


def migrate(url: str, revision: str = "head", partitions: PartitionPolicy | None = None) -> None:
    """Upgrades the database to ``revision`` with Alembic; at the newest revision, makes the
    time partitions of ``partitions`` (default: a day, three ahead) from now on."""
    _alembic("upgrade", url, revision)
    if revision == "head":
        asyncio.run(make_partitions(url, partitions or PartitionPolicy()))


async def make_partitions(url: str, policy: PartitionPolicy) -> datetime:
    """Makes the time partitions missing up to now + the policy's horizon; returns how far
    they all reach (``referee maintain``)."""
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            raw = await conn.get_raw_connection()
            return await create_partitions(raw.driver_connection, policy)
    finally:
        await engine.dispose()


def downgrade(url: str, revision: str = "base") -> None:
    """Downgrades the database to ``revision`` with Alembic."""
    _alembic("downgrade", url, revision)


def _alembic(action: str, url: str, revision: str) -> None:
    from alembic import command
    from alembic.config import Config

    parse_database_url(url)  # a bad URL is reported before Alembic starts
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    # migrations/env.py opens it with create_engine above: libpq parameters work there too
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    getattr(command, action)(config, revision)
