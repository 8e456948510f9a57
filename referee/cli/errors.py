"""How the ``referee`` command fails: one line that says what failed and what to do.

Every command raises :class:`CommandError` (or lets an exception through to
:func:`referee.cli.main.main`, which names it); the exit status tells a script what kind of
failure it was.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_DIFFERENCE = 1
"""``audit`` (and ``demo``'s audit) found a stored verdict that the journal does not give."""
EXIT_USAGE = 2
"""A bad argument, setting or file: fix the command line or the configuration."""
EXIT_UNAVAILABLE = 3
"""PostgreSQL or Kafka could not be reached (or refused us), a port was taken, the embedded
extra is not installed, or the schema is not migrated: fix the dependency, then run again."""
EXIT_INTERNAL = 4
"""A defect of the referee itself (``--debug`` shows the traceback); please report it."""
EXIT_INTERRUPTED = 130
"""Stopped by Ctrl-C (128 + SIGINT, as a shell reports it)."""
EXIT_BROKEN_PIPE = 141
"""The reader of standard output went away (``| head``): 128 + SIGPIPE, as a shell reports."""


class CommandError(Exception):
    """A failure the operator can act on: its message is the whole report."""

    code = EXIT_INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(CommandError):
    """A bad argument, setting or file."""

    code = EXIT_USAGE


class UnavailableError(CommandError):
    """A dependency (PostgreSQL, Kafka, a port, the embedded extra) is not there."""

    code = EXIT_UNAVAILABLE
