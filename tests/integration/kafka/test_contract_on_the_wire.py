"""What schemas/asyncapi.json promises holds for the records of a real ``referee serve``, run
as a login with only the privileges the README gives the service.

The scenario table-42 of the schemas' examples goes in keyed by game id; what comes out is
its verdicts, byte for byte, each keyed by the game id, on the partition number of its input,
with an ``outbox-position`` header, and its two rejections keyed by the input key.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from aiokafka.partitioner import murmur2
from sqlalchemy.engine import make_url

from referee.contracts.examples import TABLE_42
from referee.service.asyncapi import asyncapi_document
from tests.integration.conftest import execute
from tests.integration.kafka.conftest import Stack, close_stack, open_stack
from tools.testkit.kafkatools import drain, produce

pytestmark = [pytest.mark.kafka, pytest.mark.postgres]

PARTITIONS = TABLE_42.partitions


def validator(doc: dict[str, Any], ref: str) -> jsonschema.Draft7Validator:
    schemas = doc["components"]["schemas"]
    return jsonschema.Draft7Validator({"$ref": ref, "components": {"schemas": schemas}})


def message_of(doc: dict[str, Any], name: str) -> dict[str, Any]:
    message: dict[str, Any] = doc["components"]["messages"][name]
    return message


async def service_login(stack: Stack) -> str:
    """Creates a login with the README's service privileges; returns its database URL."""
    user = f"svc_{uuid.uuid4().hex[:8]}"
    url = stack.database_url
    await execute(url, f"CREATE ROLE {user} LOGIN PASSWORD 'pw' IN ROLE referee_app")
    return make_url(url).set(username=user, password="pw").render_as_string(hide_password=False)


@pytest.fixture
async def stack8(bootstrap: str, admin_url: str, tmp_path: Path) -> Any:
    s = await open_stack(bootstrap, admin_url, tmp_path, partitions=PARTITIONS)
    yield s
    await close_stack(s, admin_url)


async def test_serve_keeps_the_asyncapi_contract_as_the_least_privileged_login(
    stack8: Stack,
) -> None:
    stack = stack8
    doc = asyncapi_document()
    login = await service_login(stack)
    key = TABLE_42.game_id.encode()
    await produce(stack.bootstrap, stack.topics.input, [(key, raw) for raw in TABLE_42.records])
    stack.database_url = login
    process, _ = stack.start()

    verdicts = await drain(
        stack.bootstrap, stack.topics.verdicts, expect=len(TABLE_42.verdicts), quiet_seconds=3
    )
    dead = await drain(stack.bootstrap, stack.topics.dlq, expect=2, quiet_seconds=1)
    assert process.poll() is None, stack.logs()

    assert [value for _, _, _, value, _ in verdicts] == list(TABLE_42.verdicts), stack.logs()
    input_partition = (murmur2(key) & 0x7FFFFFFF) % PARTITIONS
    positions = []
    for partition, _, record_key, value, headers in verdicts:
        message = message_of(doc, json.loads(value)["type"])
        validator(doc, message["payload"]["$ref"]).validate(json.loads(value))
        assert record_key == key
        validator(doc, message["bindings"]["kafka"]["key"]["$ref"]).validate(record_key.decode())
        shown = {k: v.decode("ascii") for k, v in headers.items()}
        validator(doc, message["headers"]["$ref"]).validate(shown)
        assert partition == input_partition  # co-partitioned with the input
        positions.append(int(shown["outbox-position"]))
    assert positions == sorted(positions)
    assert len(set(positions)) == len(positions)

    expected = TABLE_42.rejections()
    assert len(dead) == len(expected)
    message = message_of(doc, "EventRejected")
    for (partition, _, record_key, value, headers), want in zip(dead, expected, strict=True):
        got = json.loads(value)
        validator(doc, message["payload"]["$ref"]).validate(got)
        assert record_key == key  # the input key, as received
        validator(doc, message["bindings"]["kafka"]["key"]["$ref"]).validate(record_key.decode())
        validator(doc, message["headers"]["$ref"]).validate(
            {k: v.decode("ascii") for k, v in headers.items()}
        )
        assert partition == input_partition
        assert got["source"]["topic"] == stack.topics.input
        assert got["source"]["partition"] == input_partition
        got["source"] = want["source"]  # the scenario's offsets are those of a busier topic
        assert got == want
