"""Checked command-line values: numbers in range, rates, logs and output files.

Each check fails with a message that says what is allowed, and the parser prints it on one
line with exit status 2 (``EXIT_USAGE``).
"""

from __future__ import annotations

import argparse
import io
import math
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, BinaryIO, NoReturn

from referee.cli.errors import EXIT_USAGE, UsageError

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

WORKERS_CAP = 64
"""The most ``replay --workers``: each is a process; past the cores it only costs memory."""

STDIN = "-"


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        """Prints the error on one line, with where to look, and exits 2."""
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows every flag's default in ``--help`` (unless its help says it, or there is none)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        # by identity: a default of 0 or 0.0 equals False, and is shown like any other
        if "default:" in text or any(
            action.default is no for no in (None, False, argparse.SUPPRESS)
        ):
            return text
        return super()._get_help_string(action)


Handler = Callable[[argparse.Namespace], int]
"""What a command does with its parsed arguments; returns the exit status."""


class Commands:
    """The subcommands of ``referee``: each command module adds its own (``add(commands)``)."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self._sub = parser.add_subparsers(required=True, metavar="COMMAND", dest="command")
        self._common = Parser(add_help=False)
        self._common.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help="show the traceback of a failure",
        )

    def add(self, name: str, help_text: str, handler: Handler) -> argparse.ArgumentParser:
        """Returns a new subcommand's parser (``--debug`` and ``--help`` in it), which runs
        ``handler``."""
        made: argparse.ArgumentParser = self._sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            parents=[self._common],
            formatter_class=HelpFormatter,
        )
        made.set_defaults(handler=handler)
        return made


def integer(low: int | None = None, high: int | None = None, why: str = "") -> Callable[[str], int]:
    """Returns an argument type: an integer in ``low..high`` (either end open if None)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{value} is out of range: {_range(low, high, why)}")
        return value

    parse.__name__ = "integer"  # argparse names the type in some messages
    return parse


def rules_revision(text: str) -> int:
    """An argument type: a rules revision this referee has (docs/rules.md)."""
    from referee.domain.revisions import UnknownRevisionError, revision

    number = integer(1)(text)
    try:
        revision(number)
    except UnknownRevisionError as unknown:
        raise argparse.ArgumentTypeError(str(unknown)) from None
    return number


rules_revision.__name__ = "rules revision"


def _range(low: int | None, high: int | None, why: str) -> str:
    if high is None:
        text = f"at least {low}"
    elif low is None:
        text = f"at most {high}"
    else:
        text = f"{low} to {high}"
    return f"{text} ({why})" if why else text


def rate(text: str) -> float:
    """An argument type: a probability from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is out of range: a rate is from 0 to 1")
    return value


def open_log(text: str) -> Path | BinaryIO:
    """Returns the log to read: a file (checked), or standard input for ``-``."""
    if text == STDIN:
        return sys.stdin.buffer
    path = Path(text)
    if not path.exists():
        raise UsageError(f"no such log: {path}")
    if path.is_dir():
        raise UsageError(f"{path} is a directory, not a log (a JSON Lines file, or - for stdin)")
    if not os.access(path, os.R_OK):
        raise UsageError(f"cannot read the log {path}: permission denied")
    return path


def log_size(log: Path | BinaryIO) -> int | None:
    """Returns a log's size in bytes if it has one (a file, or stdin redirected from a file)."""
    try:
        info = log.stat() if isinstance(log, Path) else os.fstat(log.fileno())
    except (OSError, ValueError):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def utf8_name(text: str, what: str, advice: str) -> str:
    """Returns a name that goes into JSON or the store, refusing one that is not UTF-8 (a
    file name or argument of other bytes arrives with surrogates that cannot be encoded)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        shown = os.fsencode(text).decode(errors="backslashreplace")
        raise UsageError(f"{what} {shown} is not UTF-8 text; {advice}") from None
    return text


def distinct_outputs(output: Path | None, rejected: Path | None) -> None:
    """Refuses ``--output`` and ``--rejected`` on one file: their lines would interleave."""
    if rejected is None:
        return
    if str(rejected) == STDIN and (output is None or str(output) == STDIN):
        raise UsageError("--rejected - and --output both go to standard output; give a file")
    if output is None or str(output) == STDIN or str(rejected) == STDIN:
        return
    same = output.resolve() == rejected.resolve() or (
        output.exists() and rejected.exists() and output.samefile(rejected)
    )
    if same and rejected.resolve() != Path(os.devnull):
        raise UsageError(f"--output and --rejected are the same file, {rejected}: give two")


class _Output(io.FileIO):
    """An output file that names itself when a write fails (a full disk, an I/O error): a
    usage error, as a file that cannot be opened. Buffered above it, so this is one call a
    buffer, not one a line; a reader gone away (``| head``) stays a BrokenPipeError."""

    def __init__(self, file: Path | int, shown: str) -> None:
        super().__init__(file, "wb", closefd=not isinstance(file, int))
        self.shown = shown

    def write(self, data: ReadableBuffer, /) -> int:
        try:
            return super().write(data)
        except BrokenPipeError:
            raise
        except OSError as failed:
            raise UsageError(f"cannot write {self.shown}: {failed.strerror or failed}") from None


def _stdout() -> BinaryIO:
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # not a file (a test's capture): as it is
        return sys.stdout.buffer
    sys.stdout.flush()
    return io.BufferedWriter(_Output(fd, "standard output"))


def open_output(path: Path | None, flag: str, *, log: Path | BinaryIO | None = None) -> BinaryIO:
    """Opens an output file for writing (stdout for None or ``-``), with a clear refusal."""
    if path is None or str(path) == STDIN:
        return _stdout()
    if path.is_dir():
        raise UsageError(f"{flag} {path} is a directory; give a file name")
    if isinstance(log, Path) and path.exists() and path.samefile(log):
        raise UsageError(f"{flag} {path} is the log itself; writing it would destroy the log")
    try:
        return io.BufferedWriter(_Output(path, f"{flag} {path}"))
    except FileNotFoundError:
        raise UsageError(f"{flag} {path}: no such directory {path.parent}") from None
    except PermissionError:
        raise UsageError(f"{flag} {path}: permission denied") from None
    except OSError as failed:
        raise UsageError(f"{flag} {path}: {failed.strerror or failed}") from None


def close_output(out: IO[bytes]) -> None:
    """Flushes an output and closes it unless it is standard output itself (the writer
    :func:`open_output` puts on its file descriptor closes, and leaves it open)."""
    try:
        out.flush()
    finally:
        if out is not sys.stdout.buffer:
            out.close()
