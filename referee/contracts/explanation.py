"""``referee explain --json``: one JSON object a verdict, with the evidence behind it.

The evidence's wire types are made from the domain's facts (``domain/evidence.py``), field for
field, with the words of their docstrings as descriptions: the facts are written once, and the
schema (``schemas/Explanation.schema.json``, by ``referee schemas``) cannot drift from them.
Each kind of facts is tagged by ``kind`` (``turn``, ``hand``, ``place``, ``draw``,
``playable``, ``count``, ``block``, ``round``, ``game``).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import json
import types
import typing
from functools import cache
from pathlib import Path
from typing import Annotated, Any

import msgspec

from referee.contracts.verdicts import OutputVerdict
from referee.domain import evidence as facts_module
from referee.domain.evidence import (
    BlockFacts,
    CountFacts,
    DrawFacts,
    Evidence,
    GameFacts,
    HandFacts,
    PlaceFacts,
    PlayableFacts,
    RoundFacts,
    TurnFacts,
)

FACT_KINDS: dict[type, str] = {
    TurnFacts: "turn",
    HandFacts: "hand",
    PlaceFacts: "place",
    DrawFacts: "draw",
    PlayableFacts: "playable",
    CountFacts: "count",
    BlockFacts: "block",
    RoundFacts: "round",
    GameFacts: "game",
}
"""Each kind of facts and its tag on the wire."""


@cache
def _class_defs() -> dict[str, ast.ClassDef]:
    """Returns the class statements of the facts' module, parsed once from its source."""
    source = Path(inspect.getfile(facts_module)).read_text(encoding="utf-8")
    return {n.name: n for n in ast.parse(source).body if isinstance(n, ast.ClassDef)}


def _field_docs(cls: type) -> dict[str, str]:
    """Returns the docstring under each field of a dataclass, from its module's source."""
    docs = {}
    for field, doc in itertools.pairwise(_class_defs()[cls.__name__].body):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(doc, ast.Expr)
            and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)
        ):
            docs[field.target.id] = " ".join(doc.value.value.split()).replace("``", "")
    return docs


def _summary(cls: type) -> str:
    return " ".join((cls.__doc__ or "").split("\n\n", maxsplit=1)[0].split()).replace("``", "")


def _wire_type(hint: Any) -> Any:
    """Returns the wire type of a field's type: each dataclass becomes its struct."""
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return wire_struct(hint)
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        args = tuple(_wire_type(a) for a in typing.get_args(hint))
        union: Any = args[0]
        for arg in args[1:]:
            union = union | arg
        return union
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple[_wire_type(args[0]), ...]  # type: ignore[misc]
        return hint
    return hint


@cache
def wire_struct(cls: type) -> type[msgspec.Struct]:
    """Returns the wire struct of a domain facts dataclass: its fields, typed for the wire,
    described by their docstrings; tagged by ``kind`` when it is a kind of facts. Its schema
    allows no other field (``additionalProperties: false``): the evidence is written only by
    ``referee explain``, and a field the schema does not know is a field it does not describe."""
    hints = typing.get_type_hints(cls)
    docs = _field_docs(cls)
    fields = []
    for f in dataclasses.fields(cls):
        wire = _wire_type(hints[f.name])
        if f.name in docs:
            wire = Annotated[wire, msgspec.Meta(description=docs[f.name])]
        fields.append((f.name, wire))
    tag = FACT_KINDS.get(cls)
    made = msgspec.defstruct(
        cls.__name__,
        fields,
        frozen=True,
        tag_field="kind" if tag else None,
        tag=tag,
        module=__name__,
        forbid_unknown_fields=True,
    )
    made.__doc__ = _summary(cls)
    return made


FactsWire: Any = None
for _cls in FACT_KINDS:
    FactsWire = wire_struct(_cls) if FactsWire is None else FactsWire | wire_struct(_cls)


class ExplanationWire(msgspec.Struct, frozen=True):
    """A verdict of the referee with the evidence behind it, as one reader may see it."""

    verdict_id: Annotated[
        str,
        msgspec.Meta(
            description="The verdict's id, as announced.", extra_json_schema={"format": "uuid"}
        ),
    ]
    type: Annotated[
        str,
        msgspec.Meta(
            description="The verdict's type: FoulRecorded, PointsScored, BlockDeclared, "
            "RoundScored or GameWon."
        ),
    ]
    game_id: Annotated[str, msgspec.Meta(description="The game.")]
    round: Annotated[int, msgspec.Meta(description="The round of the cause event.")]
    cause_seq: Annotated[int, msgspec.Meta(description="The seq of the event that caused it.")]
    rule: Annotated[
        str,
        msgspec.Meta(
            description="The sections of the rulebook the verdict applies (docs/rulebook.md).",
            examples=["RULES.md §2, §3"],
        ),
    ]
    view: Annotated[
        str,
        msgspec.Meta(
            description="Whose view this is: auditor (every hand), spectator (no hand before "
            "its round ends), or a player id (their own hand, and every hand once the round "
            "is over)."
        ),
    ]
    action: Annotated[
        str, msgspec.Meta(description="What the cause event was, in words fit for the view.")
    ]
    verdict: Annotated[OutputVerdict, msgspec.Meta(description="The verdict, as announced.")]
    evidence: Annotated[
        FactsWire,
        msgspec.Meta(
            description="The facts behind the verdict, read from the state the referee judged "
            "it on; the kind depends on the verdict (and on a foul's kind)."
        ),
    ]
    withheld: Annotated[
        list[str],
        msgspec.Meta(
            description="The evidence's fields left out of this view (null there): secrets of "
            "a hand the viewer may not see yet."
        ),
    ] = msgspec.field(default_factory=list)


EXAMPLES = Path(__file__).with_name("explanation_examples.jsonl")
"""Explanations written by ``referee explain --json`` of the golden log
``tests/golden/false_pass_in_confirmation.jsonl`` (a test holds them to the command's output):
a false pass as the auditor and as another player see it, and a block as a spectator does."""


def explanation_examples() -> list[dict[str, Any]]:
    """Returns the schema's examples."""
    lines = EXAMPLES.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def explanation_wire(
    verdict: OutputVerdict, evidence: Evidence, *, view: str, action: str
) -> ExplanationWire:
    """Returns the wire form of one explained verdict."""
    facts = evidence.facts
    kind: type = type(facts)
    wired = msgspec.convert(facts, wire_struct(kind), from_attributes=True)
    return ExplanationWire(
        verdict.verdict_id,
        str(verdict.__struct_config__.tag),
        verdict.game_id,
        verdict.round,
        verdict.cause_seq,
        evidence.rule,
        view,
        action,
        verdict,
        wired,
        list(evidence.withheld),
    )
