"""Checked command-line values: numbers in range, rates, logs and output files.

Each check fails with a message that says what is allowed, and the parser prints it on one
line with exit status 2 (``EXIT_USAGE``).
"""

from __future__ import annotations

import argparse
import math
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, BinaryIO, NoReturn

from referee.cli.errors import EXIT_USAGE, UsageError

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
        if "default" in text or action.default in (None, False, argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


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


def open_output(path: Path | None, flag: str, *, log: Path | BinaryIO | None = None) -> BinaryIO:
    """Opens an output file for writing (stdout for None or ``-``), with a clear refusal."""
    if path is None or str(path) == STDIN:
        return sys.stdout.buffer
    if path.is_dir():
        raise UsageError(f"{flag} {path} is a directory; give a file name")
    if isinstance(log, Path) and path.exists() and path.samefile(log):
        raise UsageError(f"{flag} {path} is the log itself; writing it would destroy the log")
    try:
        return path.open("wb")
    except FileNotFoundError:
        raise UsageError(f"{flag} {path}: no such directory {path.parent}") from None
    except PermissionError:
        raise UsageError(f"{flag} {path}: permission denied") from None
    except OSError as failed:
        raise UsageError(f"{flag} {path}: {failed.strerror or failed}") from None


def close_output(out: IO[bytes]) -> None:
    """Flushes an output and closes it unless it is standard output."""
    try:
        out.flush()
    finally:
        if out is not sys.stdout.buffer:
            out.close()
