"""The command line is one module a command: each adds its subcommand, and building the
parser imports none of what the commands do (every command's start-up pays for the parser)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from referee.cli import main

CLI = Path(main.__file__).parent

HEAVY = (
    "asyncio",
    "logging",
    "sqlalchemy",
    "asyncpg",
    "pydantic",
    "aiokafka",
    "faststream",
    "pyarrow",
    "referee.processing",
    "referee.usecases",
    "referee.store",
    "referee.archive",
    "referee.simulate",
)
"""What the commands do: loaded when one runs, never to build the parser."""


def test_building_the_parser_imports_nothing_a_command_does() -> None:
    script = (
        "import sys\n"
        "from referee.cli.main import parser\n"
        "parser()\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.split()
    heavy = [m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert heavy == []
    service = [m for m in loaded if m.startswith("referee.service.")]
    assert service == ["referee.service.limits"]


def _adds_a_command(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef) and node.name == "add" for node in tree.body)


def test_every_command_module_is_on_the_command_line() -> None:
    modules = {p.stem for p in CLI.glob("*.py") if _adds_a_command(p)}
    listed = {add.__module__.rsplit(".", 1)[-1] for add in main.COMMANDS}
    assert modules == listed
    assert len(modules) >= 11


def test_the_help_lists_the_commands_in_their_order() -> None:
    # each module adds the command of its name
    help_text = main.parser().format_help()
    names = [add.__module__.rsplit(".", 1)[-1] for add in main.COMMANDS]
    listed = re.findall(r"^    ([a-z]+)\b", help_text, flags=re.MULTILINE)
    assert listed == names
