"""docker-compose.yml: schema-valid, pinned images, topics, start order."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.deploy_helpers import COMPOSE

TOPICS = {"domino.game-events", "domino.referee-verdicts", "domino.game-events.dlq"}


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def test_compose_spec_schema() -> None:
    tool = Path(sys.executable).with_name("check-jsonschema")
    proc = subprocess.run(
        [str(tool), "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_third_party_images_are_pinned() -> None:
    for name, service in compose()["services"].items():
        image = service.get("image", "")
        if "build" in service:
            continue
        assert re.fullmatch(r"[\w./-]+:\d+(\.\d+)+(-[\w.]+)?(@sha256:[0-9a-f]{64})?", image), (
            name,
            image,
        )
    images = {s.get("image", "") for s in compose()["services"].values()}
    assert any(re.fullmatch(r"apache/kafka:4\.\d+\.\d+", i) for i in images)
    assert any(i.startswith("postgres:") for i in images)


def test_the_three_topics_get_one_partition_count() -> None:
    """Input partition p publishes to partition p of the verdict and DLQ topics: serve
    refuses topics whose counts differ, so kafka-init creates the three with one count and
    checks the count of a topic that existed already."""
    script = "\n".join(compose()["services"]["kafka-init"]["command"])
    assert "partitions=8\n" in script
    assert script.count("--partitions") == 1
    assert '--partitions "$$partitions"' in script
    (listed,) = re.findall(r'topics="([^"]+)"', script)
    assert set(listed.split()) == TOPICS
    assert script.count("for topic in $$topics; do") == 2  # create, then check each
    assert "PartitionCount" in script
    assert 'if [ "$$count" != "$$partitions" ]' in script
    env = compose()["services"]["referee"]["environment"]
    assert {env["REFEREE_INPUT_TOPIC"], env["REFEREE_VERDICT_TOPIC"], env["REFEREE_DLQ_TOPIC"]} == (
        TOPICS
    )


def test_start_order() -> None:
    services = compose()["services"]
    deps = services["referee"]["depends_on"]
    assert deps["migrate"]["condition"] == "service_completed_successfully"
    assert deps["kafka-init"]["condition"] == "service_completed_successfully"
    assert deps["kafka"]["condition"] == "service_healthy"
    assert deps["postgres"]["condition"] == "service_healthy"
    assert services["migrate"]["command"] == ["migrate"]
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "healthcheck" in services["kafka"]
    assert "healthcheck" in services["postgres"]
    kafka_env = services["kafka"]["environment"]
    assert "broker,controller" in kafka_env["KAFKA_PROCESS_ROLES"]  # KRaft, no ZooKeeper


def test_demo_profile_publishes_keyed_simulation() -> None:
    services = compose()["services"]
    demo = {name for name, s in services.items() if "demo" in s.get("profiles", [])}
    assert {"simulate", "publish"} <= demo
    assert not any(s.get("profiles") for n, s in services.items() if n not in demo)
    simulate = services["simulate"]["command"]
    assert simulate[0] == "simulate"
    assert "--keyed" in simulate
    assert "--output" in simulate
    publish = "\n".join(services["publish"]["command"])
    assert "kafka-console-producer.sh" in publish
    assert "parse.key=true" in publish
    assert "--topic domino.game-events" in publish
