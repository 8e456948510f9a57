"""JSON Schemas (draft 2020-12) of every input event, verdict and ``EventRejected``.

They are generated from the msgspec models the referee validates with, so the committed files
in ``schemas/`` cannot drift from the code: a test regenerates them and compares.
"""

from __future__ import annotations

import ast
import enum
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi

from referee.contracts.examples import examples
from referee.contracts.explanation import ExplanationWire, explanation_examples
from referee.contracts.rejection import EventRejected
from referee.contracts.verdicts import VERDICTS
from referee.contracts.wire import INPUT_EVENTS

DRAFT = "https://json-schema.org/draft/2020-12/schema"
BASE_ID = "https://referee.dominoes.example/schemas/"


def _public(name: str) -> str:
    return name.removesuffix("Wire")


def _rename_refs(node: Any) -> Any:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                out[key] = "#/$defs/" + _public(value.rsplit("/", 1)[1])
            elif key == "mapping" and isinstance(value, dict):  # a discriminator's
                out[key] = {k: "#/$defs/" + _public(v.rsplit("/", 1)[1]) for k, v in value.items()}
            elif key == "title" and isinstance(value, str):
                out[key] = _public(value)
            else:
                out[key] = _rename_refs(value)
        return out
    if isinstance(node, list):
        return [_rename_refs(v) for v in node]
    return node


def _types_in(model: type[msgspec.Struct]) -> tuple[list[mi.StructType], list[type[enum.Enum]]]:
    """Returns every struct and enum type a model's schema holds, the model's first."""
    structs: list[mi.StructType] = []
    enums: list[type[enum.Enum]] = []

    def walk(node: object) -> None:
        if isinstance(node, mi.StructType):
            if all(s.cls is not node.cls for s in structs):
                structs.append(node)
                for f in node.fields:
                    walk(f.type)
        elif isinstance(node, mi.EnumType):
            if node.cls not in enums:
                enums.append(node.cls)
        elif isinstance(node, mi.Metadata):
            walk(node.type)
        elif isinstance(node, mi.UnionType):
            for t in node.types:
                walk(t)
        elif isinstance(node, mi.DictType):
            walk(node.key_type)
            walk(node.value_type)
        elif isinstance(node, mi.TupleType):
            for t in node.item_types:
                walk(t)
        elif isinstance(node, (mi.ListType, mi.VarTupleType)):
            walk(node.item_type)

    walk(mi.type_info(model))
    return structs, enums


def _class_def(cls: type) -> ast.ClassDef:
    """The statements of a module-level class, parsed from its module's ``.py``: read from
    the file rather than by ``inspect.getsource``, which finds no source for a class of a
    compiled module (tools/native.py; the ``.py`` stays beside its ``.so``)."""
    # from the top package's file: a compiled module imported by another one of its build
    # reports a wrong ``__file__`` (docs/design.md, "The compiled build")
    top, *inner = cls.__module__.split(".")
    package = sys.modules[top].__file__
    assert package is not None
    source = Path(package).parent.joinpath(*inner).with_suffix(".py")
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef) and node.name == cls.__qualname__:
            return node
    raise LookupError(f"class {cls.__qualname__} not found in {source}")


def member_docs(cls: type[enum.Enum]) -> dict[str, str]:
    """Returns each member's docstring (the string under it in the class body) by value."""
    body = _class_def(cls).body
    docs: dict[str, str] = {}
    for assign, doc in itertools.pairwise(body):
        if (
            isinstance(assign, ast.Assign)
            and isinstance(assign.targets[0], ast.Name)
            and isinstance(doc, ast.Expr)
            and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)
        ):
            value = cls[assign.targets[0].id].value
            docs[str(value)] = " ".join(doc.value.value.split()).replace("``", "")
    return docs


def _summary(docstring: str) -> str:
    """Returns the first paragraph of a class's docstring, as plain text: the rest of a
    docstring is for the code's readers, not the contract's."""
    return " ".join(docstring.split("\n\n", maxsplit=1)[0].split()).replace("``", "")


def _describe_tags(defs: dict[str, Any], structs: list[mi.StructType]) -> None:
    """Describes each tag field (``type``, ``kind``), which msgspec writes without words."""
    for struct in structs:
        if struct.tag_field is None:
            continue
        prop = defs[_public(struct.cls.__name__)]["properties"][struct.tag_field]
        if struct.tag_field == "type":
            prop["description"] = (
                f"The message type, always {struct.tag}: what a consumer dispatches on "
                "(skip a type you do not know)."
            )
        else:
            kind = _public(struct.cls.__name__)
            prop["description"] = f"The {struct.tag_field}: always {struct.tag} for a {kind}."


def _describe_members(defs: dict[str, Any], enums: list[type[enum.Enum]]) -> None:
    """Adds what each member of an enumeration means to its description."""
    for cls in enums:
        node = defs[cls.__name__]
        # the class's docstring from its source: a compiled enumeration's ``__doc__`` (which
        # msgspec describes it by) is mypyc's filler
        docstring = ast.get_docstring(_class_def(cls))
        if docstring:
            node["description"] = _summary(docstring)
        else:
            node.pop("description", None)
        docs = member_docs(cls)
        lines = [f"- {value}: {docs[str(value)]}" for value in node["enum"] if str(value) in docs]
        if lines:
            node["description"] = node.get("description", "") + "\n\n" + "\n".join(lines)


def schema_for(
    model: type[msgspec.Struct], given: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Returns the standalone JSON Schema document of one message type (its examples from
    the scenarios, unless ``given``)."""
    raw = msgspec.json.schema(model)
    defs = {_public(k): _rename_refs(v) for k, v in raw["$defs"].items()}
    structs, enums = _types_in(model)
    for node in defs.values():
        if "description" in node:
            node["description"] = _summary(node["description"])
    _describe_tags(defs, structs)
    _describe_members(defs, enums)
    name = _public(model.__name__)
    body = defs.pop(name)
    doc: dict[str, Any] = {
        "$schema": DRAFT,
        "$id": f"{BASE_ID}{name}.schema.json",
        **body,
        "examples": examples()[name] if given is None else given,
    }
    if defs:
        doc["$defs"] = defs
    return doc


def all_schemas() -> dict[str, dict[str, Any]]:
    """Returns every schema document by message name."""
    models: list[type[msgspec.Struct]] = [*INPUT_EVENTS, *VERDICTS, EventRejected]
    schemas = {_public(m.__name__): schema_for(m) for m in models}
    # not a message on a topic: what `referee explain --json` writes, a line a verdict
    schemas["Explanation"] = schema_for(ExplanationWire, explanation_examples())
    return schemas


def render(doc: dict[str, Any]) -> str:
    """Returns a schema document as committed: indented, keys in a stable order."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def write_schemas(directory: Path) -> list[Path]:
    """Writes every schema into ``directory``; returns the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, doc in all_schemas().items():
        path = directory / f"{name}.schema.json"
        path.write_text(render(doc), encoding="utf-8")
        written.append(path)
    return written
