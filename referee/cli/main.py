"""The ``referee`` command: thin entry points that parse arguments and call one handler.

Each command is a module of ``referee.cli`` with ``add(commands)``, which adds its
subcommand, its flags and its handler (``Commands.add``), and the handler itself, which
imports what the command does when it runs: building the parser imports no store, no Kafka
and no use case (a test holds it). A new command is a new module, named as the command,
and its line in ``COMMANDS``. Every failure is one line on standard error (``--debug`` adds
the traceback) and an exit status that says what kind of failure it was
(``referee/cli/errors.py``, the README).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence

from referee.cli import (
    archive,
    audit,
    demo,
    desk,
    explain,
    maintain,
    migrate,
    partitions,
    replay,
    schemas,
    serve,
    simulate,
)
from referee.cli.args import Commands, HelpFormatter, Parser
from referee.cli.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    CommandError,
)

COMMANDS: tuple[Callable[[Commands], None], ...] = (
    replay.add,
    migrate.add,
    audit.add,
    maintain.add,
    archive.add,
    partitions.add,
    explain.add,
    desk.add,
    demo.add,
    simulate.add,
    serve.add,
    schemas.add,
)
"""Every command, in the order ``referee --help`` lists them."""


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status."""
    args = parser().parse_args(argv)
    debug: bool = args.debug
    try:
        result: int = args.handler(args)
    except BrokenPipeError:
        # the reader of our output left (`| head`): quiet, as a program killed by SIGPIPE;
        # stdout goes to /dev/null so that the interpreter's final flush cannot fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        _report(args, "interrupted")
        return EXIT_INTERRUPTED
    except CommandError as failed:
        if debug:
            traceback.print_exception(failed)
        if failed.message:
            _report(args, failed.message, failed.code)
        return failed.code
    except Exception as bug:  # noqa: BLE001 - the last resort: one line, not a traceback
        if debug:
            traceback.print_exception(bug)
        text = str(bug).splitlines()[0] if str(bug) else ""
        _report(
            args,
            f"internal error: {type(bug).__name__}{': ' + text if text else ''} "
            "(a defect of the referee; --debug shows the traceback)",
            EXIT_INTERNAL,
        )
        return EXIT_INTERNAL
    return result


def parser() -> argparse.ArgumentParser:
    """Returns the parser of the whole command line, every command added."""
    made = Parser(
        prog="referee",
        description="An event-sourced referee for dominoes.",
        epilog="exit status: 0 done, 1 the audit found a difference, 2 bad usage or "
        "configuration, 3 PostgreSQL/Kafka/a port/the embedded extra unavailable, "
        "4 a defect of the referee",
        formatter_class=HelpFormatter,
    )
    made.add_argument("--version", action=_VersionAction)
    made.add_argument("--debug", action="store_true", help="show the traceback of a failure")
    commands = Commands(made)
    for add in COMMANDS:
        add(commands)
    return made


def _report(args: argparse.Namespace, message: str, code: int | None = None) -> None:
    """Prints a failure: one plain line, or for ``serve`` one JSON log line like its logs."""
    if getattr(args, "json_errors", False):
        from referee.service.logs import failure_line

        print(failure_line("referee.serve", message, code), file=sys.stderr)
    else:
        print(f"referee {args.command}: {message}", file=sys.stderr)


def _version() -> str:
    # imported here: importlib.metadata (and the email package it imports) costs every
    # command's start-up, and only --version needs it
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("referee")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


class _VersionAction(argparse.Action):
    """``--version``: the installed version and the rules revisions it judges under, looked up
    only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="show the version and the rules revision, and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,  # noqa: ARG002 - argparse's signature
        values: object,  # noqa: ARG002
        option_string: str | None = None,  # noqa: ARG002
    ) -> None:
        from referee.domain.revisions import NEWEST, REVISIONS

        known = ", ".join(str(n) for n in sorted(REVISIONS))
        print(f"referee {_version()} (rules revision {NEWEST}; judges revisions {known})")
        parser.exit()
