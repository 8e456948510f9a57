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

Scenario 8b: a rolling upgrade from release 0.3.0, the last landed, built the same way, to
this release run with a rules revision 2 of the tests' own as its newest (the test's
docstring says how): each game is judged under the revision it started under, whichever
instance judges it.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import pytest

from tests.integration.conftest import fetch
from tests.integration.kafka.checks import by_game
from tests.integration.kafka.conftest import Replay, replay_in_memory
from tests.releases import BY_SCHEMA, Builds, newest_schema, python_of, version_of
from tests.reliability.conftest import MakeStack, Simulated
from tests.reliability.harness import Figures, Store, kill, plain, verify
from tools.testkit.kafkatools import keyed_lines, produce

pytestmark = [pytest.mark.reliability, pytest.mark.kafka]

PREVIOUS_RELEASE = BY_SCHEMA["0007"].commit
"""The last commit of release 0.1.0: one relay leader publishing a global outbox."""

RELEASE_030 = BY_SCHEMA["0010"].commit
"""The last commit of release 0.3.0, the last release landed: rules revision 1 only, one
outbox and one transactional publisher per input partition, round robin."""

RELAY_LOCK = 0x5245_4C41_59
"""Release 0.1's relay lock (a session advisory lock): whoever holds it leads its relay."""


@pytest.fixture(scope="session")
def previous_release(earlier_release: Builds) -> Path:
    """Release 0.1's tree, with its locked environment installed in its own ``.venv``
    (built once a session: tests/integration/store/test_upgrade_with_data.py uses it too)."""
    return earlier_release(PREVIOUS_RELEASE)


@pytest.fixture(scope="session")
def release_030(earlier_release: Builds) -> Path:
    """Release 0.3.0's tree, with its locked environment installed in its own ``.venv``."""
    return earlier_release(RELEASE_030)


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
    old: dict[str, object] = {"python": python_of(previous_release), "cwd": previous_release}
    try:
        # given release 0.1 on its own schema, refereeing and publishing the first part
        await referee(stack.database_url, "migrate", tree=previous_release)
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
        await referee(stack.database_url, "migrate")
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
        audit = await referee(stack.database_url, "audit")
        assert "audit passed" in audit.stdout
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
        await referee(stack.database_url, "migrate", tree=tree)
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
        await referee(stack.database_url, "migrate")
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
        audit = await referee(stack.database_url, "audit")
        assert "audit passed" in audit.stdout
        assert new.poll() is None, stack.logs()
    finally:
        await store.close()
        figures.emit()


async def referee(
    url: str, command: str, *, tree: Path | None = None, module: str = "referee"
) -> subprocess.CompletedProcess[str]:
    """Runs ``python -m MODULE COMMAND --database URL``: this release's, or the one built
    in ``tree`` (its own interpreter and source); it must succeed."""
    done = await asyncio.to_thread(
        subprocess.run,
        [python_of(tree) if tree else sys.executable, "-m", module, command, "--database", url],
        cwd=tree,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


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


async def test_rolling_upgrade_from_0_3_judges_each_game_under_the_revision_it_started_under(
    make_stack: MakeStack, simulated: Simulated, release_030: Path, tmp_path: Path
) -> None:
    """Scenario 8b: a rolling upgrade from release 0.3.0, the last landed, to this release
    with a new rules revision, on the real broker.

    This release runs with the tests' rules revision 2 (``tests/revision2.py``: every foul
    costs one point more) as its newest, so the default of the games it starts; 0.3.0 has
    revision 1 only. 0.3.0 referees the games' first part alone (it starts them all: pinned
    to 1); this release's migration runs beside it, an instance of this release joins the
    group (one group: 0.3.0's round robin and this release's assignor share the protocol
    name) and takes half the partitions, games mid-round and all; more events arrive; the
    old instance stops and its partitions move too; then the rest of the games, and new
    games, which this release starts (pinned to 2). Every game's verdicts are those of
    ``referee replay --rules-revision N`` with N its pinned revision, published once
    (read_committed); the audit passes.

    Games of revision 2 start only once the old instance has stopped: 0.3.0 would quarantine
    their records (its ``ProcessingStep._read`` asks ``judge_of(2)`` of a game it loads, the
    ``UnknownRevisionError`` isolates the record as ``internal_error``: docs/rules.md, "an
    unknown revision is refused"), which is a rollback's behaviour, not an upgrade's.
    """
    stack = await make_stack(partitions=4, migrated=False)
    # every game starts in the first third (200 games, 200 at a time)
    old_games = simulated(200, 41, "--foul-rate", "0.05", "--bad-rate", "0.01",
                          "--duplicate-rate", "0.01")  # fmt: skip
    new_games = simulated(60, 43, "--foul-rate", "0.05", "--bad-rate", "0.01")
    records = keyed_lines(old_games)
    first, second, third = (
        records[i * len(records) // 3 : (i + 1) * len(records) // 3] for i in range(3)
    )
    log = tmp_path / "upgrade.jsonl"  # everything produced, in order
    log.write_bytes(b"".join(line + b"\n" for _, line in records + keyed_lines(new_games)))
    figures = Figures("rolling_upgrade_0_3")
    store = Store(stack.database_url)
    conn = await asyncpg.connect(plain(stack.database_url))
    old: dict[str, object] = {"python": python_of(release_030), "cwd": release_030}
    this_version = importlib.metadata.version("referee")
    try:
        # given release 0.3.0 on its schema, alone, starting every game of the first part
        await referee(stack.database_url, "migrate", tree=release_030)
        await produce(stack.bootstrap, stack.topics.input, first)
        older, _ = stack.start("old", **old)
        await store.wait_until(len(first), limit=120)
        # when this release's migration runs beside it (the Helm pre-upgrade hook)
        await referee(stack.database_url, "migrate")
        # and an instance of this release, revision 2 its newest, joins the group: half the
        # partitions move to it mid-game
        new, _ = stack.start("new", module="tests.revision2")
        taken = await wait_for_partitions(stack.workdir / "new.log", 60)
        figures["partitions_taken_at_join"] = taken
        assert 0 < len(taken) < 4, "the old instance keeps some partitions while both run"
        await produce(stack.bootstrap, stack.topics.input, second)
        await store.wait_until(len(first) + len(second), limit=120)
        # and the old instance stops; the new one owns every partition
        older.terminate()
        assert await asyncio.to_thread(older.wait, 60) == 0
        cutoff = int(await conn.fetchval("SELECT max(id) FROM journal"))
        # then the games go on, and new games start (under this release alone)
        await produce(stack.bootstrap, stack.topics.input, third)
        await produce(stack.bootstrap, stack.topics.input, keyed_lines(new_games))

        # what each game must be: its log replayed under the revision it must be pinned to
        # (the old games' under revision 1, by the referee as released; the new games' under
        # revision 2, and under 1 to see that the revisions differ there)
        old_1 = replay_in_memory(old_games, tmp_path, "old-1", "--rules-revision", "1")
        new_2, new_1 = (
            replay_in_memory(
                new_games, tmp_path, f"new-{n}", "--rules-revision", n, module="tests.revision2"
            )
            for n in ("2", "1")
        )
        await store.wait_until(len(keyed_lines(log)), limit=300)
        pins = {
            r["game_id"]: (r["rules_revision"], r["referee_version"])
            for r in await conn.fetch(
                "SELECT game_id, rules_revision, referee_version FROM game_revisions"
            )
        }
        # each game is pinned by the release that started it: 0.3.0 to 1, this one to 2
        started = {(number, version) for number, version in pins.values()}
        assert started == {(1, "0.3.0"), (2, this_version)}, started
        old_ones = {g for g in pins if g in games_in(old_games)}
        new_ones = {g for g in pins if g in games_in(new_games)}
        assert (len(old_ones), len(new_ones)) == (200, 60)
        assert {pins[g] for g in old_ones} == {(1, "0.3.0")}
        assert {pins[g] for g in new_ones} == {(2, this_version)}
        expected = Replay(
            old_1.verdicts + new_2.verdicts,
            old_1.rejections + new_2.rejections,
            old_1.duplicates + new_2.duplicates,
        )
        # the revisions differ where it matters: fouls of games 0.3.0 started, judged by this
        # release once their partitions had moved, while 0.3.0 ran and after it stopped
        # (under revision 2 by mistake, each would cost a point more: migration 0011 names
        # the release that wrote each journal row; 0.3.0 leaves it empty), and games this
        # release started
        fouls = await conn.fetch(
            "SELECT DISTINCT v.game_id, j.id > $2 AS after_stop FROM verdicts v "
            "JOIN journal j ON j.id = v.journal_id "
            "WHERE v.type = 'FoulRecorded' AND j.referee_version = $1",
            this_version,
            cutoff,
        )
        moved_while_both = {r["game_id"] for r in fouls if not r["after_stop"]} & old_ones
        moved_after_stop = {r["game_id"] for r in fouls if r["after_stop"]} & old_ones
        figures["old_games_fouls_judged_by_new_while_both_ran"] = len(moved_while_both)
        figures["old_games_fouls_judged_by_new_after_the_stop"] = len(moved_after_stop)
        assert moved_while_both, "no foul of a moved game while both ran: this proves nothing"
        assert moved_after_stop, "no foul of a moved game after the stop: this proves nothing"
        written = {
            r["w"]: int(r["n"])
            for r in await conn.fetch(
                "SELECT coalesce(referee_version, 'not recorded') AS w, count(*) AS n "
                "FROM journal GROUP BY 1"
            )
        }
        figures["journal_rows_by_writer"] = written
        assert written.get("not recorded", 0) >= len(first)  # 0.3.0's
        assert new_ones & differing_games(new_1.verdicts, new_2.verdicts)
        # every verdict and dead letter is published once, as its game's revision gives it
        await verify(stack, log, tmp_path, figures, expected=expected)
        audit = await referee(stack.database_url, "audit", module="tests.revision2")
        figures["audit"] = [
            line for line in audit.stdout.splitlines() if " by " in line or "passed" in line
        ]
        assert new.poll() is None
    finally:
        await conn.close()
        await store.close()
        figures.emit()


def games_in(log: Path) -> set[str]:
    """The games of a log (those whose lines name one)."""
    return {key.decode() for key, _ in keyed_lines(log) if key is not None}


def differing_games(one: list[str], other: list[str]) -> set[str]:
    """The games whose verdicts differ between two replays of one log."""
    return {g for g, verdicts in by_game(one).items() if by_game(other).get(g) != verdicts}


async def wait_for_partitions(path: Path, limit: float) -> list[int]:
    """Waits until the instance logging to ``path`` is assigned some partitions; returns
    them."""

    def assigned() -> list[int]:
        if not path.exists():
            return []
        for line in reversed(path.read_text(errors="replace").splitlines()):
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if isinstance(doc, dict) and doc.get("message") == "partitions assigned":
                return list(doc.get("partitions") or [])
        return []

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = await asyncio.to_thread(assigned)
        if found:
            return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"no partitions assigned in {path.name} after {limit} s")
