"""The store commands against the real PostgreSQL, as an operator runs them: libpq URLs,
``audit``'s report of what it checked (``--json`` too), standard input into the store, and
failures as one line with exit status 3."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy.engine import make_url

from referee.store.database import newest_revision
from referee.usecases.audit import AuditReport

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "tournament.jsonl"


def referee(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")}
    return subprocess.run(
        [sys.executable, "-m", "referee", *map(str, args)],
        capture_output=True,
        check=False,
        timeout=300,
        input=None if stdin is None else stdin.decode(),
        text=True,
        env=env,
    )


async def run(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(referee, *args, stdin=stdin)


def shown(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


async def test_libpq_parameters_are_understood(empty_database: str) -> None:
    url = f"{empty_database}?sslmode=disable&connect_timeout=5&application_name=referee-test"
    migrated = await run("migrate", "--database", url)
    assert migrated.returncode == 0, migrated.stderr
    assert f"the newest revision, {newest_revision()}" in migrated.stderr
    postgres = empty_database.replace("postgresql://", "postgres://")
    prefer = await run("audit", "--database", f"{postgres}?sslmode=prefer")
    assert prefer.returncode == 0, prefer.stderr


async def test_sslmode_require_against_a_server_without_tls_is_exit_3(empty_database: str) -> None:
    done = await run("migrate", "--database", f"{empty_database}?sslmode=require")
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert "rejected SSL upgrade" in done.stderr


async def test_a_wrong_password_is_exit_3_and_never_printed(empty_database: str) -> None:
    wrong = make_url(empty_database).set(password="not-the-password-42")
    done = await run("migrate", "--database", wrong.render_as_string(hide_password=False))
    assert done.returncode == 3, done.stderr
    assert "password authentication failed" in done.stderr
    assert "not-the-password-42" not in done.stderr
    assert len(done.stderr.splitlines()) == 1


async def test_audit_says_which_database_and_schema_it_checked(migrated_database: str) -> None:
    stored = await run("replay", EXAMPLE, "--database", migrated_database, "--output", os.devnull)
    assert stored.returncode == 0, stored.stderr
    text = await run("audit", "--database", migrated_database)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == f"database: {shown(migrated_database)}"
    assert ":***@" in lines[0]
    assert lines[1] == f"schema revision: {newest_revision()}"
    assert "audit passed" in text.stdout

    as_json = await run("audit", "--database", migrated_database, "--json")
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    fields = set(AuditReport.__dataclass_fields__)
    assert set(report) == fields | {"database", "schema_revision", "passed"}
    assert report["database"] == shown(migrated_database)
    assert report["schema_revision"] == newest_revision()
    assert report["passed"] is True
    assert report["verdicts_stored"] == report["verdicts_derived"] == 71
    assert report["differences"] == []


async def test_audit_json_reports_a_difference_with_exit_1(migrated_database: str) -> None:
    from tests.integration.conftest import execute

    stored = await run("replay", EXAMPLE, "--database", migrated_database, "--output", os.devnull)
    assert stored.returncode == 0, stored.stderr
    await execute(
        migrated_database,
        "ALTER TABLE verdicts DISABLE TRIGGER verdicts_append_only;"
        "DELETE FROM verdicts WHERE position = (SELECT max(position) FROM verdicts);"
        "ALTER TABLE verdicts ENABLE TRIGGER verdicts_append_only",
    )
    done = await run("audit", "--database", migrated_database, "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["passed"] is False
    assert report["verdicts_stored"] == 70
    assert report["differences"]


async def test_audit_of_a_database_never_migrated_says_to_migrate(empty_database: str) -> None:
    done = await run("audit", "--database", empty_database)
    assert done.returncode == 3, done.stderr
    assert "has no referee schema: run referee migrate first" in done.stderr
    assert "Traceback" not in done.stderr


async def test_stdin_into_the_store_resumes_under_its_source_name(
    migrated_database: str, tmp_path: Path
) -> None:
    log = EXAMPLE.read_bytes()
    memory = await run("replay", EXAMPLE, "--source-name", "tournament")
    first = await run(
        "replay", "-", "--database", migrated_database, "--source-name", "tournament",
        stdin=log,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert first.stdout == memory.stdout, "the same verdicts as the in-memory replay"
    again = await run(
        "replay", "-", "--database", migrated_database, "--source-name", "tournament",
        stdin=log,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert again.stdout == ""
    records = sum(1 for line in log.splitlines() if line.strip())
    assert f"resumed: {records} lines were already in the store" in again.stderr
    audited = await run("audit", "--database", migrated_database)
    assert audited.returncode == 0, audited.stdout + audited.stderr


async def test_bare_database_flag_reads_the_environment(migrated_database: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")}
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "referee", "replay", str(EXAMPLE), "--database"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**env, "REFEREE_DATABASE_URL": migrated_database},
    )
    assert done.returncode == 0, done.stderr
    assert "using the embedded PostgreSQL" not in done.stderr
    audited = await run("audit", "--database", migrated_database, "--json")
    assert json.loads(audited.stdout)["verdicts_stored"] == 71
