"""A record too large to copy onto the dead-letter topic does not stall it (real broker).

A 900 kB record of escaped quotes is rejected as ``too_large``; a copy of it in the dead
letter would be 1.8 MB of JSON, over Kafka's default message limit, and the relay used to
retry that send forever, holding back every dead letter and verdict behind it. Its dead
letter now carries no bytes (``raw_omitted``) and everything behind it is published.
"""

from __future__ import annotations

import json

import pytest

from tests.integration.kafka.conftest import Stack
from tests.integration.kafka.test_service import wait_ready
from tools.testkit.kafkatools import drain, produce

pytestmark = pytest.mark.kafka


async def test_a_huge_rejected_record_is_dead_lettered_without_its_bytes_and_blocks_nothing(
    stack: Stack,
) -> None:
    pad = '\\"' * 450_000
    huge = (
        '{"event_id":"big","type":"Passed","game_id":"g-big","seq":1,'
        f'"occurred_at":"2026-11-30T12:00:00Z","schema_version":1,"pad":"{pad}"}}'
    ).encode()
    behind = b'{"event_id": "broken", "type": "TilePlayed", '
    await produce(stack.bootstrap, stack.topics.input, [(b"g-big", huge), (b"g-big", behind)])
    _, port = stack.start()
    await wait_ready(port)
    dead = await drain(stack.bootstrap, stack.topics.dlq, expect=2, quiet_seconds=5)
    bodies = [json.loads(v) for *_, v, _ in dead]
    assert [b["reason"] for b in bodies] == ["too_large", "malformed_json"], stack.logs()
    first, second = bodies
    assert first["raw_omitted"] is True
    assert first["raw"] == ""
    assert f"the record, {len(huge)} bytes" in first["detail"]
    assert len(dead[0][-2]) < 512 * 1024
    assert second["raw"] == behind.decode(), "the dead letter behind it was published"
    assert "raw_omitted" not in second
