"""``referee archive`` beside a running ``referee serve``: the partitions the service wrote a
few seconds ago go to the archive and leave PostgreSQL while it goes on judging into newer
ones; nothing is lost or published twice, and ``referee audit --archive`` passes."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path

import pytest

from referee.archive import open_archive, read_manifests
from referee.store.database import migrate, newest_revision
from tests.integration.archive.seasons import referee, segment_tables, short_partitions, wait_until
from tests.integration.conftest import fetch
from tests.integration.kafka.checks import assert_same_verdicts
from tests.integration.kafka.conftest import close_stack, open_stack, replay_in_memory
from tests.integration.kafka.test_service import produce_paced, wait_ready
from tools.testkit.kafkatools import drain, keyed_lines

pytestmark = [pytest.mark.kafka, pytest.mark.postgres]

SERVICE_START_SECONDS = 15.0


async def journaled(url: str, archive_url: str) -> int:
    """Journal rows in PostgreSQL and in the archive's manifests."""
    rows = await fetch(url, "SELECT count(*) AS n FROM journal")
    archived = sum(
        e.rows for m in read_manifests(open_archive(archive_url)) for e in m.files
        if e.table == "journal"
    )  # fmt: skip
    return int(rows[0]["n"]) + archived


async def test_an_archive_run_beside_serve_loses_and_repeats_nothing(
    bootstrap: str, admin_url: str, tmp_path: Path, simulated_log: Path
) -> None:
    stack = await open_stack(bootstrap, admin_url, tmp_path, migrated=False)
    try:
        url = stack.database_url
        # the newest revision by its name: no partitions made yet, the test makes them before
        # the service starts (it makes its own, of a minute, after them at once), the first
        # far enough ahead for the service to be ready by then
        await asyncio.to_thread(migrate, url, newest_revision())
        bounds = await short_partitions(url, 2, lead=SERVICE_START_SECONDS)
        _, port = stack.start(extra_env={"REFEREE_PARTITION_INTERVAL": "1m"})
        await wait_ready(port)
        records = keyed_lines(simulated_log)
        await wait_until(bounds[1][0])
        feeding = asyncio.create_task(
            produce_paced(stack.bootstrap, stack.topics.input, records, seconds=16)
        )
        await wait_until(bounds[-1][1])
        target = str(tmp_path / "archive")
        done = await asyncio.to_thread(
            referee, "archive", "--database", url, "--to", target,
            "--before", bounds[-1][1].isoformat(),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert not feeding.done(), "the archive ran after the feed: move the partitions earlier"
        archived = {f"p{lo:%Y%m%dt%H%M%S}" for lo, _ in bounds} | {"p_legacy"}
        assert not archived & set(await segment_tables(url))
        await feeding

        deadline = time.monotonic() + 120
        while await journaled(url, target) < len(records):
            assert time.monotonic() < deadline, f"not caught up; logs:\n{stack.logs()}"
            await asyncio.sleep(0.5)
        assert await journaled(url, target) == len(records)

        replayed = replay_in_memory(simulated_log, tmp_path)
        out = await drain(
            stack.bootstrap, stack.topics.verdicts, expect=len(replayed.verdicts), quiet_seconds=3
        )
        assert_same_verdicts([v.decode() for *_, v, _ in out], replayed.verdicts, "on the topic")
        dead = await drain(
            stack.bootstrap, stack.topics.dlq, expect=len(replayed.rejections), quiet_seconds=3
        )
        assert Counter(json.loads(v)["raw"] for *_, v, _ in dead) == Counter(
            r["raw"] for r in replayed.rejections
        )
        audit = await asyncio.to_thread(
            referee, "audit", "--database", url, "--archive", target, "--json"
        )
        assert audit.returncode == 0, audit.stdout + audit.stderr
        report = json.loads(audit.stdout)
        assert report["archived_rows"] > 0
        assert report["journal_rows"] == len(records)
    finally:
        await close_stack(stack, admin_url)
