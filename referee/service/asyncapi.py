"""The AsyncAPI 3.0 document of the referee's three topics, generated from the app.

FastStream derives the channels, operations, servers and channel bindings from the app's
subscriber and publishers (AsyncAPI 3.0.0, Kafka bindings 0.4.0). What it cannot know is
added here, following the same spec: each message's payload (the referee's own JSON Schemas,
``schemas/``, so the document and the schema files cannot disagree), its key
(``bindings.kafka.key``), its headers, and what producers and consumers of each topic must
do. AsyncAPI's Schema Object is JSON Schema draft 07 with a few words of its own, so the
payloads are carried over from 2020-12: their ``$defs`` become component schemas,
``prefixItems`` become ``items``, and msgspec's OpenAPI-style ``discriminator`` (AsyncAPI's is
a bare property name with another meaning) is left out; ``anyOf`` over the ``kind`` tag
still tells the variants apart.
"""

from __future__ import annotations

import json
from typing import Any

from faststream.specification import AsyncAPI

from referee.contracts.schemas import all_schemas
from referee.contracts.verdicts import VERDICT_TYPES
from referee.contracts.wire import EVENT_TYPES, GAME_ID_PATTERN
from referee.service.publisher import KEY_CUT_HEADER
from referee.service.settings import Settings
from referee.service.tails import CAUSE_HEADER, POSITION_HEADER

INPUT = list(EVENT_TYPES)
VERDICTS = list(VERDICT_TYPES)
DEAD = ["EventRejected"]

KAFKA_BINDING = "0.4.0"
"""The Kafka bindings version FastStream writes for channels; messages and operations match."""

GAME_KEY: dict[str, Any] = {
    "type": "string",
    "description": "The game id (the value's game_id), UTF-8 encoded. Every record of a game "
    "has the same key, so Kafka's default partitioner (murmur2 of the key, modulo the "
    "partition count) keeps a game on one partition, in order.",
    "minLength": 1,
    "maxLength": 128,
    "pattern": GAME_ID_PATTERN,
    "examples": ["table-42"],
}
INPUT_KEY: dict[str, Any] = {
    "description": "The key of the rejected input record, byte for byte as received "
    "(normally its game id in UTF-8, but any bytes are passed on); when that record had no "
    "key and its game_id could be read, that game id (UTF-8); otherwise absent (a null "
    "key; the record is on the partition number of its input, as every dead letter).",
    "anyOf": [{"type": "string"}, {"type": "null"}],
    "examples": ["table-42", None],
}
OUTPUT_HEADERS: dict[str, Any] = {
    "type": "object",
    "description": "The headers of every record the referee publishes.",
    "properties": {
        POSITION_HEADER: {
            "type": "string",
            "pattern": "^[0-9]+$",
            "description": "The record's position in its input partition's outbox, in ASCII "
            "decimal digits: verdicts.position for a verdict, dead_letters.position for a dead "
            "letter (PostgreSQL). Within a partition positions grow, but for one case: after "
            "the store was put back in time (a restore, a failover to a replica that lagged) "
            "the input it lost is judged again and numbered anew, so a consumer must not take "
            "a smaller position for a repeat: verdict_id says that.",
            "examples": ["1041"],
        },
        CAUSE_HEADER: {
            "type": "string",
            "pattern": "^[0-9]+$",
            "description": "The offset, in its input partition, of the input record that gave "
            "this record, in ASCII decimal digits. It only grows within a partition; a "
            "partition's publisher resumes after the input record of the last record it finds "
            "on its partition. Absent from records published by releases before 0.5.",
            "examples": ["52210"],
        },
        KEY_CUT_HEADER: {
            "type": "string",
            "pattern": "^[0-9]+$",
            "description": "Dead letters only, and only when the input key was longer than "
            "16 KiB: the key's whole length in bytes; the record's key is then its first "
            "16 KiB (the whole key is in the referee's store).",
            "examples": ["900000"],
        },
    },
    "required": [POSITION_HEADER],
}
INPUT_HEADERS: dict[str, Any] = {
    "type": "object",
    "description": "No header is required or read: any the producer sets are ignored.",
}

READ_COMMITTED = (
    "Published by the owner of each input partition in Kafka transactions (one producer an "
    "instance, transactional.id <REFEREE_RELAY_TRANSACTIONAL_ID>.i-<instance>, the prefix by "
    "default referee-relay.<group id>): consumers must read "
    "with isolation.level=read_committed, else they also see the records of aborted "
    "transactions (drop repeats by verdict_id, or by source for a dead letter)."
)


def _channels(settings: Settings) -> dict[str, dict[str, Any]]:
    """Returns, per topic, its messages and what the channel and its operation promise."""
    return {
        settings.input_topic: {
            "messages": INPUT,
            "key": "GameKey",
            "headers": "InputHeaders",
            "channel": "Input events from the game backends, one JSON object per record "
            "(GameStarted, RoundStarted, TilePlayed, TileDrawn, Passed; docs/events.md), "
            "topic REFEREE_INPUT_TOPIC. Producers key every record by its game id: a game's "
            "events must reach one partition in seq order. Partitions are the unit of "
            "parallelism: any number of referee instances share them as one consumer group.",
            "operation": "The referee consumes the topic as the consumer group "
            "REFEREE_GROUP_ID, in batches; its positions are kept in PostgreSQL with what it "
            "decided, and a new owner of a partition seeks to the stored position + 1.",
        },
        settings.verdict_topic: {
            "messages": VERDICTS,
            "key": "GameKey",
            "headers": "OutputHeaders",
            "channel": "Verdicts (FoulRecorded, PointsScored, BlockDeclared, RoundScored, "
            "GameWon), canonical JSON (keys sorted, no spaces, UTF-8), topic "
            "REFEREE_VERDICT_TOPIC; docs/consumers.md. Each record goes to the partition number "
            "of the input partition its game's events came from: the topic must have exactly "
            f"as many partitions as {settings.input_topic} (the referee refuses to start "
            "otherwise), and a game's verdicts land on the partition number of its input "
            "events (co-partitioned, as Kafka Streams or Flink joins need). Per game, verdicts "
            "come in the order they were produced; across games, no order.",
            "operation": f"{READ_COMMITTED} Never compact the topic: its key is the game id.",
        },
        settings.dlq_topic: {
            "messages": DEAD,
            "key": "InputKey",
            "headers": "OutputHeaders",
            "channel": "EventRejected for every input record that could not be judged, "
            "canonical JSON, topic REFEREE_DLQ_TOPIC, with exactly as many partitions as the "
            "input topic: each record goes to the partition number of its input record.",
            "operation": READ_COMMITTED,
        },
    }


def _topic_configuration(settings: Settings, topic: str) -> dict[str, Any]:
    if topic == settings.input_topic:
        return {}
    # A publisher reads its output partition's tail to resume: compaction would keep only the
    # last record of each game (or of each input key) and lose the history.
    return {"topicConfiguration": {"cleanup.policy": ["delete"]}}


def asyncapi_document() -> dict[str, Any]:
    """Returns the AsyncAPI 3.0 document of ``referee serve`` with the default topics."""
    from referee.service.app import build
    from referee.store.database import create_engine

    settings = Settings(database_url="postgresql://docs@localhost/docs")
    engine = create_engine(settings.database_url.get_secret_value())
    built = build(settings, engine)
    spec = AsyncAPI(
        built.broker,
        title="referee",
        version="1",
        description="An event-sourced referee for dominoes: game events in; fouls, scores, "
        "blocked games and game wins out; bad input to a dead-letter topic. Every message is "
        "JSON; every record of the two output topics carries the headers outbox-position and "
        "input-offset.",
        schema_version="3.0.0",
    )
    doc: dict[str, Any] = json.loads(spec.to_specification().to_json())
    return _completed(doc, settings)


def _completed(doc: dict[str, Any], settings: Settings) -> dict[str, Any]:
    schemas = all_schemas()
    components = doc.setdefault("components", {})
    shared: dict[str, Any] = {}
    payloads = {name: _draft07(schemas[name], shared) for name in (*INPUT, *VERDICTS, *DEAD)}
    components["schemas"] = {
        **payloads,
        **shared,
        "GameKey": GAME_KEY,
        "InputKey": INPUT_KEY,
        "OutputHeaders": OUTPUT_HEADERS,
        "InputHeaders": INPUT_HEADERS,
    }
    messages: dict[str, Any] = {}
    for topic, plan in _channels(settings).items():
        name = _channel_for(doc, topic)
        channel = doc["channels"][name]
        channel["description"] = plan["channel"]
        channel["bindings"]["kafka"].update(_topic_configuration(settings, topic))
        refs = {}
        for message in plan["messages"]:
            messages[message] = {
                "name": message,
                "title": message,
                "summary": schemas[message]["description"],
                "contentType": "application/json",
                "payload": {"$ref": f"#/components/schemas/{message}"},
                "headers": {"$ref": f"#/components/schemas/{plan['headers']}"},
                "bindings": {
                    "kafka": {
                        "key": {"$ref": f"#/components/schemas/{plan['key']}"},
                        "bindingVersion": KAFKA_BINDING,
                    }
                },
            }
            refs[message] = {"$ref": f"#/components/messages/{message}"}
        channel["messages"] = refs
        for operation in doc.get("operations", {}).values():
            if operation["channel"]["$ref"] == f"#/channels/{name}":
                operation["description"] = plan["operation"]
                operation["messages"] = [
                    {"$ref": f"#/channels/{name}/messages/{m}"} for m in plan["messages"]
                ]
                if operation["action"] == "receive":
                    operation["bindings"] = {
                        "kafka": {
                            "groupId": {"type": "string", "enum": [settings.group_id]},
                            "bindingVersion": KAFKA_BINDING,
                        }
                    }
    components["messages"] = messages
    return doc


def _channel_for(doc: dict[str, Any], topic: str) -> str:
    for name, channel in doc["channels"].items():
        if channel.get("address") == topic:
            return str(name)
    raise KeyError(f"no channel for topic {topic!r}")


def _draft07(schema: dict[str, Any], shared: dict[str, Any]) -> dict[str, Any]:
    """Returns a 2020-12 schema document as an AsyncAPI Schema Object (JSON Schema draft 07).

    Its ``$defs`` go into ``shared`` (component schemas, one per name: the same model gives
    the same definition in every message).
    """
    for name, definition in schema.get("$defs", {}).items():
        converted = _convert(definition)
        if shared.setdefault(name, converted) != converted:
            raise ValueError(f"two different schemas are both called {name}")
    body: dict[str, Any] = _convert(
        {k: v for k, v in schema.items() if k not in ("$schema", "$id", "$defs")}
    )
    return body


def _convert(node: Any) -> Any:
    if isinstance(node, list):
        return [_convert(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
            out[key] = "#/components/schemas/" + value.removeprefix("#/$defs/")
        elif key == "discriminator" and isinstance(value, dict):
            continue
        elif key == "prefixItems":
            out["items"] = _convert(value)
            if node.get("items") is False:
                out["additionalItems"] = False
        elif key == "items" and "prefixItems" in node:
            continue
        elif key in ("examples", "default", "enum", "const"):
            out[key] = value  # data, not schemas
        else:
            out[key] = _convert(value)
    return out


def render_asyncapi() -> str:
    """Returns the document as committed in ``schemas/asyncapi.json``."""
    return json.dumps(asyncapi_document(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"
