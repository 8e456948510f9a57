"""How long each migration takes on a large store, and which locks it takes on the tables
the service writes (docs/store.md, "Migrations on a large store").

    uv run --frozen python -m bench.migrations --database URL [--rows 1000000]

URL: a PostgreSQL server and a role that may create databases and roles (the test server's
superuser). Three databases are made on it and dropped at the end (``--keep`` keeps them):

1. a source of realistic rows: migrated to the newest revision, this release replays a
   simulated log into it (``referee simulate --games 200 --seed 3 --bad-rate 0.05``: records,
   verdicts, dead letters and game states of every family);
2. a baseline: an empty store taken from revision 0002 to the newest revision one migration
   at a time, timed as below (what a migration costs whatever the store holds: Alembic's start,
   the connection, the catalogue);
3. the large store: migrated to 0002 (edition 1's store, before 0003 rewrote it) with this
   release's migrations, filled with ``--rows`` journal rows, verdicts, dead letters and game
   versions and a tenth as many consumer positions (copies of the source's rows under new
   ids and game ids: the rows have the sizes real ones have), ``VACUUM ANALYZE``d, then
   taken to the newest revision one migration at a time.

Each migration runs alone (``alembic upgrade`` to it, as ``referee migrate`` runs them), timed
while another connection samples, every 20 ms, the locks other client sessions (the
migration's) hold on the tables the service writes (and their partitions): a lock held for
less than that may be missed. A lock that conflicts with the service's INSERT
(``ROW EXCLUSIVE``: a ``SHARE`` lock or stronger) blocks the service for as long as it is
held. One JSON line per migration on stdout, then a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

from referee.store.database import known_revisions, migrate

FILLED = "0002"
"""The revision the large store is filled at: every later migration is measured."""

TABLES = ("journal", "game_versions", "verdicts", "dead_letters", "consumer_positions")
"""The tables the service writes a row into with every batch."""

BLOCKING = frozenset({"ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock"})
"""The lock modes that conflict with ``ROW EXCLUSIVE``, the lock of an INSERT."""

LOCKS = """
SELECT c.relname, l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'relation' AND l.granted AND l.pid <> pg_backend_pid()
  AND a.backend_type = 'client backend'  -- not autovacuum's SHARE UPDATE EXCLUSIVE
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND c.relkind IN ('r', 'p')
"""

# The rows of the source store, as the columns of revision 0002 hold them.
SOURCE = {
    "journal": "SELECT row_number() OVER (ORDER BY id) AS ord, source_partition, "
    "source_offset, game_id, seq, event_id, event_type, outcome, reason, took_place, "
    "fingerprint, raw FROM journal",
    "game_versions": "SELECT row_number() OVER (ORDER BY journal_id) AS ord, game_id, "
    "version, state, journal_id FROM game_versions",
    "verdicts": "SELECT row_number() OVER (ORDER BY position) AS ord, verdict_id, game_id, "
    "type, cause_seq, journal_id, body FROM verdicts",
    "dead_letters": "SELECT row_number() OVER (ORDER BY position) AS ord, journal_id, "
    "convert_from(key, 'UTF8') AS key, reason, body FROM dead_letters",
    "consumer_positions": "SELECT row_number() OVER (ORDER BY journal_id) AS ord, group_id, "
    'topic, partition, "offset", journal_id FROM consumer_positions',
}

TEMPLATES = {
    "journal": "ord bigint, source_partition int, source_offset bigint, game_id text, seq "
    "bigint, event_id text, event_type text, outcome text, reason text, took_place boolean, "
    "fingerprint bytea, raw bytea",
    "game_versions": "ord bigint, game_id text, version bigint, state text, journal_id bigint",
    "verdicts": "ord bigint, verdict_id text, game_id text, type text, cause_seq bigint, "
    "journal_id bigint, body text",
    "dead_letters": "ord bigint, journal_id bigint, key text, reason text, body text",
    "consumer_positions": "ord bigint, group_id text, topic text, partition int, "
    '"offset" bigint, journal_id bigint',
}

# Copy number c of template row t; ids, game ids and offsets made unique per copy.
FILL = {
    "journal": """
INSERT INTO journal (source_topic, source_partition, source_offset, game_id, seq, event_id,
    event_type, outcome, reason, took_place, fingerprint, raw)
SELECT 'file:bench', t.source_partition, c::bigint * 100000000 + t.source_offset,
    t.game_id || '~' || c, t.seq, t.event_id, t.event_type, t.outcome, t.reason,
    t.took_place, t.fingerprint, t.raw
FROM generate_series(0, $2) AS c, tpl_journal t ORDER BY c, t.ord LIMIT $1""",
    "game_versions": """
INSERT INTO game_versions (game_id, version, state, journal_id)
SELECT t.game_id || '~' || c, t.version, t.state::jsonb, c::bigint * 100000000 + t.journal_id
FROM generate_series(0, $2) AS c, tpl_game_versions t ORDER BY c, t.ord LIMIT $1""",
    "verdicts": """
INSERT INTO verdicts (verdict_id, game_id, type, cause_seq, journal_id, body)
SELECT t.verdict_id || '~' || c, t.game_id || '~' || c, t.type, t.cause_seq,
    c::bigint * 100000000 + t.journal_id, t.body
FROM generate_series(0, $2) AS c, tpl_verdicts t ORDER BY c, t.ord LIMIT $1""",
    "dead_letters": """
INSERT INTO dead_letters (journal_id, key, reason, body)
SELECT c::bigint * 100000000 + t.journal_id, t.key, t.reason, t.body
FROM generate_series(0, $2) AS c, tpl_dead_letters t ORDER BY c, t.ord LIMIT $1""",
    "consumer_positions": """
INSERT INTO consumer_positions (group_id, topic, partition, "offset", journal_id)
SELECT t.group_id, t.topic, t.partition, c::bigint * 100000000 + t."offset",
    c::bigint * 100000000 + t.journal_id
FROM generate_series(0, $2) AS c, tpl_consumer_positions t ORDER BY c, t.ord LIMIT $1""",
}


def plain(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def with_database(url: str, name: str) -> str:
    return make_url(url).set(database=name).render_as_string(hide_password=False)


@dataclass
class Step:
    """One migration's run: its time and the locks other sessions saw it hold."""

    revision: str
    seconds: float = 0.0
    modes: dict[str, set[str]] = field(default_factory=dict)
    blocked: float = 0.0
    """Seconds during which some lock blocking an INSERT on a written table was held."""

    def row(self) -> dict[str, Any]:
        return {
            "revision": self.revision,
            "seconds": round(self.seconds, 2),
            "blocking_inserts_seconds": round(self.blocked, 2),
            "locks": {t: sorted(m) for t, m in sorted(self.modes.items())},
        }


def table_of(relname: str) -> str | None:
    """The written table a relation is, or a partition of (``journal_p_legacy``...)."""
    for table in TABLES:
        if relname == table or relname.startswith(f"{table}_p"):
            return table
    return None


async def timed(url: str, revision: str) -> Step:
    """Runs the migration to ``revision`` alone, sampling the locks while it runs."""
    step = Step(revision)
    watcher = await asyncpg.connect(plain(url))
    try:
        started = time.monotonic()
        task = asyncio.create_task(asyncio.to_thread(migrate, url, revision))
        last = started
        while not task.done():
            rows = await watcher.fetch(LOCKS)
            now = time.monotonic()
            blocking = False
            for r in rows:
                table = table_of(r["relname"])
                if table is None:
                    continue
                step.modes.setdefault(table, set()).add(r["mode"])
                blocking = blocking or r["mode"] in BLOCKING
            if blocking:
                step.blocked += now - last
            last = now
            await asyncio.sleep(0.02)
        await task
        step.seconds = time.monotonic() - started
    finally:
        await watcher.close()
    return step


async def run_steps(url: str, revisions: list[str]) -> list[Step]:
    steps = []
    for revision in revisions:
        step = await timed(url, revision)
        print(json.dumps({"database": make_url(url).database, **step.row()}), flush=True)
        steps.append(step)
    return steps


async def source_rows(url: str, work: Path) -> dict[str, list[asyncpg.Record]]:
    """Replays a simulated log into ``url`` with this release; returns its rows."""
    log = work / "source.jsonl"
    for args in (
        ["simulate", "--games", "200", "--seed", "3", "--bad-rate", "0.05", "--output", str(log)],
        ["replay", str(log), "--database", url, "--output", "/dev/null"],
    ):
        await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "referee", *args], check=True
        )
    conn = await asyncpg.connect(plain(url))
    try:
        return {table: list(await conn.fetch(query)) for table, query in SOURCE.items()}
    finally:
        await conn.close()


async def fill(url: str, rows: int, source: dict[str, list[asyncpg.Record]]) -> dict[str, Any]:
    """Fills a store at revision 0002 with copies of the source rows."""
    conn = await asyncpg.connect(plain(url))
    made: dict[str, Any] = {}
    try:
        for table in TABLES:
            count = rows // 10 if table == "consumer_positions" else rows
            template = source[table]
            await conn.execute(f"CREATE TEMPORARY TABLE tpl_{table} ({TEMPLATES[table]})")
            await conn.copy_records_to_table(f"tpl_{table}", records=[tuple(r) for r in template])
            copies = -(-count // len(template))
            started = time.monotonic()
            await conn.execute(FILL[table], count, copies - 1)
            made[table] = {"rows": count, "fill_seconds": round(time.monotonic() - started, 1)}
            print(json.dumps({"filled": table, **made[table]}), file=sys.stderr, flush=True)
        await conn.execute("VACUUM ANALYZE")
        size = await conn.fetchval(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
            "WHERE c.relkind = 'r' AND c.relname = ANY($1::text[])",
            list(TABLES),
        )
        made["megabytes"] = round(int(size) / 1e6)
    finally:
        await conn.close()
    return made


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--database", required=True, help="a server URL and a superuser")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keep", action="store_true", help="keep the databases")
    args = parser.parse_args(argv)
    revisions = sorted(known_revisions())
    later = [r for r in revisions if r > FILLED]
    tag = uuid.uuid4().hex[:8]
    names = {k: f"referee_migbench_{k}_{tag}" for k in ("source", "empty", "large")}
    urls = {k: with_database(args.database, name) for k, name in names.items()}
    admin = await asyncpg.connect(plain(args.database))
    try:
        for name in names.values():
            await admin.execute(f'CREATE DATABASE "{name}"')
        server = await admin.fetchval("SHOW server_version")
        with tempfile.TemporaryDirectory() as work:
            source = await source_rows(urls["source"], Path(work))
        await asyncio.to_thread(migrate, urls["empty"], FILLED)
        empty = await run_steps(urls["empty"], later)
        await asyncio.to_thread(migrate, urls["large"], FILLED)
        made = await fill(urls["large"], args.rows, source)
        print(json.dumps({"store": made, "postgresql": server}), flush=True)
        large = await run_steps(urls["large"], later)
    finally:
        if not args.keep:
            for name in names.values():
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
    print(f"\nPostgreSQL {server}; {args.rows:,} rows a table filled at {FILLED}\n")
    print("| migration | empty store | large store | per million rows | blocks INSERTs | locks |")
    print("|---|---|---|---|---|---|")
    for e, g in zip(empty, large, strict=True):
        per_million = (g.seconds - e.seconds) * 1_000_000 / args.rows
        locks = "; ".join(f"{t}: {', '.join(sorted(m))}" for t, m in sorted(g.modes.items()))
        print(
            f"| {g.revision} | {e.seconds:.2f} s | {g.seconds:.2f} s | {per_million:.2f} s | "
            f"{g.blocked:.2f} s | {locks or 'none'} |"
        )


if __name__ == "__main__":
    asyncio.run(main())
