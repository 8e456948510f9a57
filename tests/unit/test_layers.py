"""The layers of docs/design.md, checked: no module imports a layer above its own.

Every import of every module of ``referee/`` is read from its syntax tree (lazy imports
inside functions included) and checked against the table below, the one in docs/design.md.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "referee"

MAY_IMPORT: dict[str, set[str]] = {
    "domain": {"domain"},
    "contracts": {"domain", "contracts"},
    "store": {"contracts", "store"},
    "processing": {"domain", "contracts", "processing"},
    "usecases": {"domain", "contracts", "store", "processing", "archive", "usecases"},
    "service": {"domain", "contracts", "store", "processing", "service"},
    "desk": {"domain", "contracts", "store", "processing", "usecases", "desk"},
    "cli": {
        "domain",
        "contracts",
        "store",
        "processing",
        "usecases",
        "service",
        "cli",
        "simulate",
        "archive",
        "desk",
    },
    "simulate": {"domain", "contracts"},
    "archive": {"archive"},
}
"""For each layer, the referee layers its modules may import (docs/design.md, "Layers")."""

PORT = {"referee.processing.ports", "referee.processing.rows"}
"""The engine's port: the store it needs (``ports.py``) and the rows that cross it
(``rows.py``). The store implements the port, so it imports these two modules and nothing
else of the engine (dependency inversion: the engine imports no store)."""

THIRD_PARTY: dict[str, set[str] | None] = {
    "domain": set(),  # the standard library only: the judge is a pure fold
    "contracts": {"msgspec"},
    "simulate": {"msgspec"},
    "desk": {"starlette", "sqlalchemy"},  # the web part; the page itself is the stdlib's
}
"""Layers whose outside imports are limited (None: any)."""


def layer_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0].removesuffix(".py")


def imports_of(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if len(p.relative_to(PACKAGE).parts) > 1)
MODULES += [PACKAGE / "simulate.py"]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_module_imports_only_the_layers_below_its_own(path: Path) -> None:
    layer = layer_of(path)
    allowed = MAY_IMPORT[layer]
    outside = THIRD_PARTY.get(layer)
    for name in imports_of(path):
        top = name.split(".")[0]
        if top == "referee":
            target = name.split(".")[1] if "." in name else "referee"
            implements = layer == "store" and name in PORT
            assert target in allowed or implements, f"{path.name} ({layer}) imports {name}"
        elif top not in sys.stdlib_module_names and top != "__future__" and outside is not None:
            assert top in outside, f"{path.name} ({layer}) imports {name}"


@pytest.mark.parametrize("port", sorted(PORT))
def test_the_engines_port_imports_nothing_of_the_referee_but_itself(port: str) -> None:
    path = PACKAGE.parent / (port.replace(".", "/") + ".py")
    for name in imports_of(path):
        assert not name.startswith("referee") or name in PORT, f"{port} imports {name}"


def test_the_store_takes_its_rows_from_the_engines_port() -> None:
    found = {
        name
        for path in MODULES
        if layer_of(path) == "store"
        for name in imports_of(path)
        if name.startswith("referee.processing")
    }
    assert "referee.processing.rows" in found
    assert found <= PORT


def test_every_layer_is_in_the_table() -> None:
    assert {layer_of(p) for p in MODULES} == set(MAY_IMPORT)


SQL = re.compile(r"\b(SELECT|INSERT INTO|UPDATE|DELETE FROM|COPY|pg_[a-z_]+\()")


@pytest.mark.parametrize(
    "path",
    [p for p in MODULES if layer_of(p) != "store"],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_no_sql_outside_the_store(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found = SQL.search(node.value)
            assert found is None or not node.value.strip().startswith(found.group(1)), (
                f"{path.name}:{node.lineno} holds SQL: {node.value[:60]!r}"
            )


def _module_name(path: Path) -> str:
    name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _referee_imports(path: Path, known: set[str]) -> set[str]:
    """The modules of the referee a module imports, lazily or not (``from referee.x import
    y`` names ``referee.x.y`` when that is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found |= {node.module} & known
            found |= {f"{node.module}.{a.name}" for a in node.names} & known
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names} & known
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: _referee_imports(path, set(paths)) - {name} for name, path in paths.items()}
    for start, imported in graph.items():
        seen: set[str] = set()
        todo = list(imported)
        while todo:
            name = todo.pop()
            assert name != start, f"{start} imports itself back through {sorted(seen)}"
            if name not in seen:
                seen.add(name)
                todo += graph[name]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


OURS = ("referee", "bench")
SOURCES = sorted(p for top in OURS for p in (PACKAGE.parent / top).rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_no_module_imports_another_modules_private_name(path: Path) -> None:
    """A private name (one underscore) is its module's; a private module is its package's."""
    importer = _module_name(path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            module, names = node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            module, names = "", [a.name for a in node.names]
        else:
            continue
        for full in [module, *(f"{module}.{n}".lstrip(".") for n in names)]:
            parts = full.split(".")
            if parts[0] not in OURS:
                continue
            for i, part in enumerate(parts):
                owner = ".".join(parts[:i])
                inside = importer == owner or importer.startswith(owner + ".")
                assert inside or not _private(part), f"{importer} imports {full}, {owner}'s"
