"""``referee schemas``: ``schemas/`` written again (the JSON Schemas of every message, and
the AsyncAPI document)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from referee.cli.args import Commands
from referee.cli.errors import EXIT_OK, UsageError


def add(commands: Commands) -> None:
    """Adds ``referee schemas``."""
    schemas = commands.add("schemas", "write the JSON Schemas of every message", run)
    schemas.add_argument("--output", type=Path, default=Path("schemas"), help="directory")


def run(args: argparse.Namespace) -> int:
    """Writes every schema into the ``--output`` directory."""
    from referee.contracts.schemas import write_schemas
    from referee.service.asyncapi import render_asyncapi

    output: Path = args.output
    if output.exists() and not output.is_dir():
        raise UsageError(f"--output {output} is a file; schemas writes a directory of them")
    try:
        for path in write_schemas(output):
            print(path, file=sys.stderr)
        asyncapi = output / "asyncapi.json"
        asyncapi.write_text(render_asyncapi(), encoding="utf-8")
    except OSError as failed:
        raise UsageError(f"cannot write --output {output}: {failed.strerror or failed}") from None
    print(asyncapi, file=sys.stderr)
    return EXIT_OK
