"""Telling a PostgreSQL outage from a defect: what to retry, and what to quarantine.

An outage (the server unreachable, restarting, out of resources, a serialization failure, a
lock or statement timeout, a broken role or schema) is retried: nothing is wrong with the
records, and they are processed once the database is back. Anything else that fails while a
batch is written (a value the database refuses, a constraint the referee's own state should
have kept) is a defect that one record can trigger, and the step isolates that record.
"""

from __future__ import annotations

import os
import socket

import asyncpg
from sqlalchemy import exc as sa_exc

OUTAGE_CLASSES = frozenset(
    {
        "08",  # connection exception
        "25",  # invalid transaction state (a read-only replica after a failover, say)
        "28",  # invalid authorization
        "3D",  # invalid catalog name (the database is missing)
        "40",  # transaction rollback: serialization failure, deadlock
        "42",  # syntax error or access rule violation: a missing migration, a missing grant
        "53",  # insufficient resources: disk full, out of memory, too many connections
        "55",  # object not in prerequisite state: lock not available
        "57",  # operator intervention: shutdown, cancelled statement (a timeout)
        "58",  # system error (I/O)
        "F0",  # configuration file error
        "XX",  # internal error of the server
    }
)
"""SQLSTATE classes that say the database, not the record, is the problem."""


def sqlstate(exc: BaseException) -> str | None:
    """Returns the SQLSTATE the server gave for a failure, if it gave one."""
    for cause in _chain(exc):
        code = getattr(cause, "sqlstate", None)
        if isinstance(code, str) and len(code) == 5:
            return code
    return None


def is_missing_partition(exc: BaseException) -> bool:
    """Checks if a write failed because a row had no time partition to go to (migration
    0010): the partitions were not made ahead, an outage of the store, never the record's."""
    return sqlstate(exc) == "23514" and any(
        "no partition of relation" in str(cause) for cause in _chain(exc)
    )


def is_outage(exc: BaseException) -> bool:
    """Checks if a failure came from the database being unavailable (retry, never quarantine)."""
    code = sqlstate(exc)
    if code is not None:
        return code[:2] in OUTAGE_CLASSES or is_missing_partition(exc)
    for cause in _chain(exc):
        if isinstance(cause, asyncpg.DataError):
            return False  # the client refused a value: the record's doing
        if isinstance(
            cause,
            OSError  # the socket (ConnectionError and TimeoutError included)
            | asyncpg.InterfaceError  # the connection closed or in a bad state
            | asyncpg.exceptions.InternalClientError
            | sa_exc.TimeoutError,  # no connection free in the pool
        ):
            return True
        if isinstance(cause, sa_exc.DBAPIError) and cause.connection_invalidated:
            return True
    return False


def _chain(exc: BaseException) -> list[BaseException]:
    """The failure and what it wraps (``orig``, ``raise ... from``), outermost first.

    A failure raised while another was being handled (``__context__``) is not followed: the
    newest failure says what the state of the connection is now.
    """
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and not any(current is s for s in seen):
        seen.append(current)
        current = getattr(current, "orig", None) or current.__cause__
    return seen


def describe_failure(exc: BaseException) -> str:
    """Returns what went wrong with the database in a few words, for an operator.

    The server's own message when it gave one (a refused password, a missing database),
    else the socket's (connection refused, an unknown host, a timeout).
    """
    for cause in _chain(exc):
        if isinstance(cause, asyncpg.PostgresError):
            return str(cause.args[0] if cause.args else cause).splitlines()[0]
    for cause in _chain(exc):
        if isinstance(cause, TimeoutError | sa_exc.TimeoutError):
            return "timed out"
        if isinstance(cause, socket.gaierror):
            return f"unknown host ({cause.strerror})"
        if isinstance(cause, OSError):
            if cause.errno:  # asyncio's text repeats the address; the URL says it already
                return os.strerror(cause.errno).lower()
            return str(cause).splitlines()[0] or type(cause).__name__
    last = _chain(exc)[-1]
    text = str(last).splitlines()[0] if str(last) else ""
    return f"{type(last).__name__}: {text}" if text else type(last).__name__
