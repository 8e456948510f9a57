"""Scenario 8: a rolling upgrade from release 0.1 (the global relay) with a backlog in its
global outbox, on the real broker: nothing lost, nothing published twice.

Release 0.1 is built by the test from its commit, in a virtual environment of its own. Its
instance referees the first part of the log and publishes it through its relay leader; it is
killed in the middle (some committed rows unpublished, maybe a transaction open), and
restarted while the test holds the relay's lock, so that it goes on refereeing with nobody
publishing: a backlog in the global outbox. Then, as a rolling upgrade does, this release's
migration runs beside it, an instance of this release joins the group (partitions move to
it mid-game; it takes the publishing over from the global relay), the lock is let go (an
old relay that leads now must publish nothing), more events arrive, and the old instance is
stopped. A ``read_committed`` reader must see every verdict and dead letter exactly once,
as ``referee replay`` gives them, and the audit of the store must pass.

Then the upgrade as docs/releases.md tells it, from release 0.1.0 (schema 0007) and from
release 0.3.0 (schema 0010): the earlier release's ``referee serve`` consumes the first half of
the topic into its store and is stopped; this release's ``referee migrate`` brings the store to
its newest revision while more events wait on the topic, and this release's ``referee serve``
takes the same group and database: it resumes from the positions the earlier release stored
(the journal holds each record once), publishes what the earlier release left unpublished,
and a ``read_committed`` reader sees every verdict and dead letter exactly once, as ``referee
replay`` of the whole log gives them; ``referee audit`` passes.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import pytest

from tests.integration.conftest import fetch
from tests.releases import BY_SCHEMA, Builds, newest_schema, python_of, version_of
from tests.reliability.conftest import MakeStack, Simulated
from tests.reliability.harness import Figures, Store, kill, plain, verify
from tools.testkit.kafkatools import keyed_lines, produce

pytestmark = [pytest.mark.reliability, pytest.mark.kafka]

PREVIOUS_RELEASE = BY_SCHEMA["0007"].commit
"""The last commit of release 0.1.0: one relay leader publishing a global outbox."""

RELAY_LOCK = 0x5245_4C41_59
"""Release 0.1's relay lock (a session advisory lock): whoever holds it leads its relay."""


@pytest.fixture(scope="session")
def previous_release(earlier_release: Builds) -> Path:
    """Release 0.1's tree, with its locked environment installed in its own ``.venv``
    (built once a session: tests/integration/store/test_upgrade_with_data.py uses it too)."""
    return earlier_release(PREVIOUS_RELEASE)


async def test_rolling_upgrade_from_the_global_relay_loses_and_repeats_nothing(
    make_stack: MakeStack, simulated: Simulated, previous_release: Path, tmp_path: Path
) -> None:
    stack = await make_stack(partitions=4, migrated=False)
    log = simulated(400, 37, "--foul-rate", "0.03", "--bad-rate", "0.01")
    records = keyed_lines(log)
    first, second, third = (
        records[i * len(records) // 3 : (i + 1) * len(records) // 3] for i in range(3)
    )
    figures = Figures("rolling_upgrade")
    store = Store(stack.database_url)
    holder = await asyncpg.connect(plain(stack.database_url))
    python = python_of(previous_release)
    old: dict[str, object] = {"python": python, "cwd": previous_release}
    try:
        # given release 0.1 on its own schema, refereeing and publishing the first part
        await asyncio.to_thread(
            subprocess.run,
            [python, "-m", "referee", "migrate", "--database", stack.database_url],
            cwd=previous_release,
            check=True,
            capture_output=True,
        )
        await produce(stack.bootstrap, stack.topics.input, first)
        life, _ = stack.start("old-1", **old)
        await store.wait_until(len(first) // 2, limit=120)
        await kill(life)  # mid-stream: committed rows unpublished, maybe a transaction open
        # and a backlog in its global outbox: it referees on while nobody can lead its relay
        assert await holder.fetchval("SELECT pg_try_advisory_lock($1)", RELAY_LOCK)
        older, _ = stack.start("old-2", **old)
        await produce(stack.bootstrap, stack.topics.input, second)
        await store.wait_until(len(first) + len(second) // 2, limit=120)
        backlog = await holder.fetchval(
            "SELECT count(*) FROM verdicts WHERE position > "
            "coalesce((SELECT max(position) FROM relay_checkpoints WHERE outbox = 'verdicts'), 0)"
        )
        figures["global_outbox_backlog_at_upgrade"] = int(backlog)
        # when this release's migration runs beside it (the Helm pre-upgrade hook)
        migrated = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "referee", "migrate", "--database", stack.database_url],
            capture_output=True,
            text=True,
        )
        assert migrated.returncode == 0, migrated.stderr
        # and an instance of this release joins the group: partitions move to it mid-game
        new, _ = stack.start("new-1")
        await wait_for_log(stack.workdir / "new-1.log", "took the publishing over", 60)
        # and the lock is let go: an old relay that leads from now on publishes nothing
        await holder.fetchval("SELECT pg_advisory_unlock($1)", RELAY_LOCK)
        await produce(stack.bootstrap, stack.topics.input, third)
        await asyncio.sleep(3)
        # and the old instance stops; the new one owns every partition
        older.terminate()
        assert await asyncio.to_thread(older.wait, 60) == 0
        old_log = await asyncio.to_thread((stack.workdir / "old-2.log").read_text)
        figures["old_relay_led_after_takeover"] = "relay leads" in old_log
        # then every verdict and dead letter is published once, as the replay gives them
        await verify(stack, log, tmp_path, figures)
        audit = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "referee", "audit", "--database", stack.database_url],
            capture_output=True,
            text=True,
        )
        assert audit.returncode == 0, audit.stdout + audit.stderr
        assert new.poll() is None
        figures["legacy_rows_read_through_journal"] = int(
            await holder.fetchval("SELECT count(*) FROM verdicts WHERE source_partition IS NULL")
        )
    finally:
        await holder.close()
        await store.close()
        figures.emit()
    assert figures["global_outbox_backlog_at_upgrade"] > 0, "the upgrade met a backlog"


STOPPED_RELEASES = {"0.1.0": "0007", "0.3.0": "0010"}
"""Releases whose ``serve`` stops for the upgrade, by version: the schema revision each is at."""


@pytest.mark.parametrize("earlier", sorted(STOPPED_RELEASES))
async def test_serve_resumes_from_the_positions_an_earlier_release_stored(
    earlier: str,
    make_stack: MakeStack,
    simulated: Simulated,
    earlier_release: Builds,
    tmp_path: Path,
) -> None:
    schema = STOPPED_RELEASES[earlier]
    tree = await asyncio.to_thread(earlier_release, BY_SCHEMA[schema].commit)
    assert version_of(tree) == earlier
    stack = await make_stack(partitions=4, migrated=False)
    dirty = ("--foul-rate", "0.03", "--bad-rate", "0.01", "--duplicate-rate", "0.01")
    log = simulated(120, 43, *dirty)
    records = keyed_lines(log)
    half = len(records) // 2
    first, rest = records[:half], records[half:]
    waiting, later = rest[: len(rest) // 2], rest[len(rest) // 2 :]
    figures = Figures(f"upgrade_serve_from_{earlier}")
    store = Store(stack.database_url)
    old: dict[str, object] = {"python": python_of(tree), "cwd": tree}
    try:
        # given the earlier release on its own schema, serving the first half of the topic
        await asyncio.to_thread(
            subprocess.run,
            [python_of(tree), "-m", "referee", "migrate", "--database", stack.database_url],
            cwd=tree,
            check=True,
            capture_output=True,
        )
        assert await schema_of(stack.database_url) == schema
        await produce(stack.bootstrap, stack.topics.input, first)
        life, _ = stack.start(f"serve-{earlier}", **old)
        await store.wait_until(half, limit=180)
        # when it is stopped for the upgrade (SIGTERM: the batch in hand is finished)
        life.terminate()
        assert await asyncio.to_thread(life.wait, 60) == 0
        stored = await fetch(
            stack.database_url,
            "SELECT count(*) AS n, max(id) AS last, "
            "(SELECT count(*) FROM verdicts) AS verdicts FROM journal",
        )
        assert stored[0]["n"] == half, "the earlier release journaled the first half, once"
        figures["journaled_by_earlier_release"] = half
        figures["verdicts_by_earlier_release"] = int(stored[0]["verdicts"])
        # and more events arrive while nothing serves
        await produce(stack.bootstrap, stack.topics.input, waiting)
        # and this release migrates the store to its newest revision
        migrated = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "referee", "migrate", "--database", stack.database_url],
            capture_output=True,
            text=True,
        )
        assert migrated.returncode == 0, migrated.stderr
        assert await schema_of(stack.database_url) == newest_schema()
        # and serves on the same group and database, the rest of the log arriving
        new, _ = stack.start("serve-new")
        await produce(stack.bootstrap, stack.topics.input, later)
        # then every record is journaled once and every verdict and dead letter published
        # once, as the replay of the whole log gives them
        await verify(stack, log, tmp_path, figures)
        judged_again = await fetch(
            stack.database_url,
            "SELECT count(*) AS n FROM journal WHERE id > $1 AND source_offset IN "
            "(SELECT source_offset FROM journal j WHERE j.id <= $1 "
            "AND j.source_partition = journal.source_partition)",
            stored[0]["last"],
        )
        assert judged_again[0]["n"] == 0, "this release judged a record the earlier one had"
        audit = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "referee", "audit", "--database", stack.database_url],
            capture_output=True,
            text=True,
        )
        assert audit.returncode == 0, audit.stdout + audit.stderr
        assert "audit passed" in audit.stdout
        assert new.poll() is None, stack.logs()
    finally:
        await store.close()
        figures.emit()


async def schema_of(url: str) -> str:
    rows = await fetch(url, "SELECT version_num FROM alembic_version")
    assert len(rows) == 1
    return str(rows[0]["version_num"])


async def wait_for_log(path: Path, needle: str, limit: float) -> None:
    def found() -> bool:
        return path.exists() and needle in path.read_text(errors="replace")

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if await asyncio.to_thread(found):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{needle!r} not in {path.name} after {limit} s")
