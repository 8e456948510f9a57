"""The AsyncAPI 3 document of the referee's three topics, generated from the app.

FastStream derives channels, operations and bindings from the app's subscriber and
publishers; the message payloads are the referee's own JSON Schemas (``schemas/``), so the
document and the schema files cannot disagree.
"""

from __future__ import annotations

import json
from typing import Any

from faststream.specification import AsyncAPI

from referee.contracts.schemas import all_schemas
from referee.service.settings import Settings

INPUT = ["GameStarted", "RoundStarted", "TilePlayed", "TileDrawn", "Passed"]
VERDICTS = ["FoulRecorded", "PointsScored", "BlockDeclared", "RoundScored", "GameWon"]
DEAD = ["EventRejected"]


def asyncapi_document() -> dict[str, Any]:
    """Returns the AsyncAPI 3.0 document of ``referee serve`` with the default topics."""
    from referee.service.app import build
    from referee.store.database import create_engine

    settings = Settings(database_url="postgresql://docs@localhost/docs")
    engine = create_engine(settings.database_url.get_secret_value())
    _, service = build(settings, engine)
    spec = AsyncAPI(
        service.broker,
        title="referee",
        version="1",
        description="An event-sourced referee for dominoes: game events in; fouls, blocked "
        "games and scores out; bad input to a dead-letter topic.",
        schema_version="3.0.0",
    )
    doc: dict[str, Any] = json.loads(spec.to_specification().to_json())
    return _with_payloads(doc, settings)


def _with_payloads(doc: dict[str, Any], settings: Settings) -> dict[str, Any]:
    schemas = all_schemas()
    components = doc.setdefault("components", {})
    components["schemas"] = {
        name: _rebase_defs(
            {k: v for k, v in schemas[name].items() if k not in ("$schema", "$id")},
            f"#/components/schemas/{name}/$defs/",
        )
        for name in (*INPUT, *VERDICTS, *DEAD)
    }
    messages: dict[str, Any] = {}
    for topic, names in (
        (settings.input_topic, INPUT),
        (settings.verdict_topic, VERDICTS),
        (settings.dlq_topic, DEAD),
    ):
        channel = _channel_for(doc, topic)
        refs = {}
        for name in names:
            messages[name] = {
                "name": name,
                "title": name,
                "contentType": "application/json",
                "payload": {"$ref": f"#/components/schemas/{name}"},
            }
            refs[name] = {"$ref": f"#/components/messages/{name}"}
        doc["channels"][channel]["messages"] = refs
        for operation in doc.get("operations", {}).values():
            if operation["channel"]["$ref"] == f"#/channels/{channel}":
                operation["messages"] = [
                    {"$ref": f"#/channels/{channel}/messages/{n}"} for n in names
                ]
    components["messages"] = messages
    return doc


def _channel_for(doc: dict[str, Any], topic: str) -> str:
    for name, channel in doc["channels"].items():
        if channel.get("address") == topic:
            return str(name)
    raise KeyError(f"no channel for topic {topic!r}")


def _rebase_defs(node: Any, base: str) -> Any:
    """Points a schema's local ``$defs`` references at its place in the document."""
    if isinstance(node, dict):
        return {
            k: (
                base + v.removeprefix("#/$defs/")
                if k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/")
                else _rebase_defs(v, base)
            )
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_rebase_defs(v, base) for v in node]
    return node


def render_asyncapi() -> str:
    """Returns the document as committed in ``schemas/asyncapi.json``."""
    return json.dumps(asyncapi_document(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"
