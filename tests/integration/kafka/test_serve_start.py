"""``referee serve`` that cannot start says so in one JSON log line and exits 3: Kafka
unreachable (PostgreSQL up), or the HTTP port taken (both up)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from referee.store.database import newest_revision
from tools.testkit.kafkatools import free_port

UNAVAILABLE = 3


def serve(database: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")}
    return subprocess.run(
        [sys.executable, "-m", "referee", "serve"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**base, "REFEREE_DATABASE_URL": database, "REFEREE_HTTP_HOST": "127.0.0.1", **env},
    )


def json_lines(stderr: str) -> list[dict[str, object]]:
    assert "Traceback" not in stderr
    return [json.loads(line) for line in stderr.splitlines()]


async def test_unreachable_kafka_is_one_json_line_and_exit_3(migrated_database: str) -> None:
    with socket.socket() as closed:  # a port that was free: nothing listens there
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    done = await asyncio.to_thread(
        serve,
        migrated_database,
        REFEREE_KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.1:{port}",
        REFEREE_HTTP_PORT=str(free_port()),
    )
    assert done.returncode == UNAVAILABLE, done.stderr
    (line,) = json_lines(done.stderr)
    assert line["level"] == "ERROR"
    assert line["exit_code"] == UNAVAILABLE
    message = str(line["message"])
    assert message.startswith(f"Kafka at 127.0.0.1:{port} (REFEREE_KAFKA_BOOTSTRAP_SERVERS)")
    assert "no broker could be reached" in message


async def test_a_port_in_use_is_one_json_line_and_exit_3(
    migrated_database: str, bootstrap: str, tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = await asyncio.to_thread(
            serve,
            migrated_database,
            REFEREE_KAFKA_BOOTSTRAP_SERVERS=bootstrap,
            REFEREE_HTTP_PORT=str(port),
            REFEREE_INPUT_TOPIC=f"serve-start-{port}",
        )
    assert done.returncode == UNAVAILABLE, done.stderr
    lines = json_lines(done.stderr)
    last = lines[-1]
    assert last["level"] == "ERROR"
    assert last["exit_code"] == UNAVAILABLE
    assert f"cannot listen on 127.0.0.1:{port} (REFEREE_HTTP_HOST, REFEREE_HTTP_PORT)" in str(
        last["message"]
    )
    assert "address already in use" in str(last["message"])
    assert [x for x in lines if x["level"] == "ERROR"] == [last], "one error line, no more"


async def test_a_database_at_another_schema_revision_is_one_json_line_and_exit_3(
    empty_database: str, bootstrap: str
) -> None:
    from referee.store.database import migrate

    await asyncio.to_thread(migrate, empty_database, "0002")  # an older referee's schema
    done = await asyncio.to_thread(
        serve,
        empty_database,
        REFEREE_KAFKA_BOOTSTRAP_SERVERS=bootstrap,
        REFEREE_HTTP_PORT=str(free_port()),
    )
    assert done.returncode == UNAVAILABLE, done.stderr
    (line,) = json_lines(done.stderr)
    message = str(line["message"])
    assert f"has schema revision 0002, this referee serves {newest_revision()}" in message
    assert "run referee migrate" in message


async def test_a_database_never_migrated_is_refused_the_same_way(
    empty_database: str, bootstrap: str
) -> None:
    done = await asyncio.to_thread(
        serve,
        empty_database,
        REFEREE_KAFKA_BOOTSTRAP_SERVERS=bootstrap,
        REFEREE_HTTP_PORT=str(free_port()),
    )
    assert done.returncode == UNAVAILABLE, done.stderr
    (line,) = json_lines(done.stderr)
    assert "has no referee schema: run referee migrate first" in str(line["message"])
