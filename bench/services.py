"""The services a run uses: PostgreSQL and Kafka, fresh databases and topics, their cleanup.

PostgreSQL and Kafka are started through scripts/postgres.sh and scripts/kafka.sh on the
benchmark's own ports and state directory unless the environment names others.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import uuid
from pathlib import Path

import asyncpg
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from bench.context import PY, ROOT, Context, say
from tools.testkit.kafkatools import Topics


def service_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("REFEREE_STATE_DIR", "/tmp/bench-services")
    env.setdefault("KAFKA_PORT", "29092")
    env.setdefault("PG_PORT", "25432")
    return env


def script(name: str, action: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / name), action],
        env=service_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def start_service(ctx: Context, name: str, var: str) -> str:
    status = script(name, "status")
    if status.returncode != 0:
        say(f"starting {name}")
        Path(service_env()["REFEREE_STATE_DIR"]).mkdir(mode=0o755, parents=True, exist_ok=True)
        status = script(name, "start")
        if status.returncode != 0:
            raise SystemExit(f"{name} start failed:\n{status.stdout}\n{status.stderr}")
        ctx.started_services.append(name)
    for line in status.stdout.splitlines():
        if line.startswith(var + "="):
            return line.split("=", 1)[1].strip()
    raise SystemExit(f"{name} printed no {var}: {status.stdout!r}")


def stop_services(ctx: Context) -> None:
    for name in reversed(ctx.started_services):
        say(f"stopping {name}")
        script(name, "stop")


def plain_url(url: str, database: str | None = None) -> str:
    from sqlalchemy.engine import make_url

    parsed = make_url(url).set(drivername="postgresql")
    if database is not None:
        parsed = parsed.set(database=database)
    return parsed.render_as_string(hide_password=False)


async def fresh_database(
    ctx: Context, label: str, *, migrate: bool, env: dict[str, str] | None = None
) -> str:
    """A new database, migrated by the referee that ``env`` imports (this checkout's by
    default: another tree's in an A/B, whose schema may be older)."""
    name = f"bench_{label}_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(plain_url(ctx.admin_url))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    ctx.databases.append(name)
    url = plain_url(ctx.admin_url, name)
    if migrate:
        await asyncio.to_thread(
            subprocess.run,
            [PY, "-m", "referee", "migrate", "--database", url],
            check=True,
            capture_output=True,
            timeout=300,
            env={**os.environ, **(env or {})},
        )
    return url


async def clone_database(ctx: Context, template_url: str, label: str) -> str:
    """A new database copied from ``template_url``'s (``CREATE DATABASE ... TEMPLATE``: its
    files copied, its time partitions' bounds and rows kept); the template must have no
    connection, so a backend still closing is waited for."""
    from sqlalchemy.engine import make_url

    name = f"bench_{label}_{uuid.uuid4().hex[:8]}"
    template = make_url(template_url).database
    conn = await asyncpg.connect(plain_url(ctx.admin_url))
    try:
        for attempt in range(100):
            try:
                await conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
                break
            except asyncpg.ObjectInUseError:
                if attempt == 99:
                    raise
                await asyncio.sleep(0.1)
    finally:
        await conn.close()
    ctx.databases.append(name)
    return plain_url(ctx.admin_url, name)


async def drop_databases(ctx: Context) -> None:
    conn = await asyncpg.connect(plain_url(ctx.admin_url))
    try:
        for name in ctx.databases:
            with contextlib.suppress(Exception):
                await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def make_topics(ctx: Context, names: list[str], partitions: int = 4) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=ctx.bootstrap)
    await admin.start()
    try:
        await admin.create_topics(
            [NewTopic(n, num_partitions=partitions, replication_factor=1) for n in names]
        )
    finally:
        await admin.close()
    ctx.topics.extend(names)


async def delete_topics(ctx: Context) -> None:
    if not ctx.topics:
        return
    admin = AIOKafkaAdminClient(bootstrap_servers=ctx.bootstrap)
    await admin.start()
    try:
        with contextlib.suppress(Exception):
            await admin.delete_topics(ctx.topics)
    finally:
        await admin.close()


def fresh_topics(input_topic: str | None = None) -> Topics:
    tag = uuid.uuid4().hex[:8]
    return Topics(
        input_topic or f"bench{tag}.game-events",
        f"bench{tag}.referee-verdicts",
        f"bench{tag}.game-events.dlq",
    )
