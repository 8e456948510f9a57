"""More of the README's exit statuses, run as a real process: each case used to exit 4 ("a
defect of the referee") or to misbehave.

A bad database URL or Kafka broker list is exit 2 before anything connects; a schema of a
newer referee is exit 3 for every command that migrates, as for ``audit`` and ``serve``; an
output that cannot be written is exit 2 naming it; ``--output`` and ``--rejected`` on one
file are refused; ``--help`` shows a default of 0; a name that is not UTF-8 is exit 2.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from referee.store.database import newest_revision, parse_database_url
from tests.cli.test_failures import CLOSED, EXAMPLE, UNAVAILABLE, USAGE, one_line, referee
from tests.integration.conftest import admin_url, empty_database, execute

__all__ = ["admin_url", "empty_database"]  # the real PostgreSQL's fixtures

FULL = Path("/dev/full")
"""A device every write to fails with ENOSPC, as on a full disk."""

needs_dev_full = pytest.mark.skipif(not FULL.exists(), reason="no /dev/full here")


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgresql://u:hunter2secret@127.0.0.1:abc/db", "the URL's port is not a number"),
        ("postgresql://u:hunter2secret@127.0.0.1:/db", "the URL's port is not a number"),
        ("postgresql://u:hunter2secret@127.0.0.1:99999/db", "port 99999 is out of range"),
        ("postgresql://u:hunter2secret@127.0.0.1/db?port=99999", "port='99999'"),
        ("postgresql://u:hunter2secret@127.0.0.1/db?port=abc", "port='abc'"),
        ("postgresql://u:hunter2secret@h:1,h:2/db", "more than one host:port"),
        ("postgresql://u:hunter2secret@/db?host=a,b&port=1", "number of hosts and ports"),
        (
            "postgresql://u:hunter2secret@127.0.0.1:1/db?prepared_statement_cache_size=abc",
            "prepared_statement_cache_size='abc' is not a whole number",
        ),
        ("postgresql://u:hunter2secret@127.0.0.1:1/db?ssl=maybe", "ssl='maybe'; expected one"),
    ],
)
def test_a_bad_database_url_is_exit_2_before_connecting(url: str, says: str) -> None:
    line = one_line(referee("migrate", "--database", url), USAGE)
    assert line.startswith("referee migrate: --database: ")
    assert says in line
    assert "hunter2secret" not in line
    # the same URL as the setting: a bad configuration, named
    setting = one_line(referee("migrate", env={"REFEREE_DATABASE_URL": url}), USAGE)
    assert setting.startswith("referee migrate: bad configuration: REFEREE_DATABASE_URL: ")
    assert says in setting
    assert "hunter2secret" not in setting


def test_several_hosts_are_understood_as_libpq_query_parameters() -> None:
    """The form the refusal of ``h:1,h:2`` points to is one asyncpg connects with."""
    target = parse_database_url("postgresql://u:p@/db?host=a,b&port=5432,5433")
    assert target.url.query == {"host": "a,b", "port": "5432,5433"}


@pytest.mark.parametrize(
    ("servers", "says"),
    [
        (":::", "broker ':::': the port must be a number from 1 to 65535"),
        ("127.0.0.1:99999", "broker '127.0.0.1:99999': the port must be"),
        ("kafka:abc", "broker 'kafka:abc': the port must be"),
        ("kafka-0:9092,", "an empty broker in the list"),
        (":9092", "broker ':9092' has no host"),
        ("[::1:9092", "broker '[::1:9092' is not [IPv6 address]:port"),
    ],
)
def test_a_bad_kafka_broker_list_is_exit_2_before_anything_connects(
    servers: str, says: str
) -> None:
    """Before: PostgreSQL was reached first (exit 3 here), then aiokafka's int() (exit 4)."""
    env = {"REFEREE_DATABASE_URL": CLOSED, "REFEREE_KAFKA_BOOTSTRAP_SERVERS": servers}
    served = json.loads(one_line(referee("serve", env=env), USAGE))
    assert served["exit_code"] == USAGE
    assert served["message"].startswith(
        f"bad configuration: REFEREE_KAFKA_BOOTSTRAP_SERVERS={servers!r}: "
    )
    assert says in served["message"]


def test_a_good_kafka_broker_list_passes_the_check() -> None:
    """aiokafka's forms: host:port, a bare host (port 9092), [IPv6]:port, a bare IPv6."""
    env = {
        "REFEREE_DATABASE_URL": CLOSED,
        "REFEREE_KAFKA_BOOTSTRAP_SERVERS": "kafka-0:9092, kafka-1,[::1]:9093,::1",
    }
    served = json.loads(one_line(referee("serve", env=env), UNAVAILABLE))
    assert "PostgreSQL at " in served["message"]  # the next check: the database


@pytest.mark.postgres
def test_a_schema_of_a_newer_referee_is_exit_3_for_every_command(
    empty_database: str, tmp_path: Path
) -> None:
    """Alembic's "Can't locate revision" was exit 4 for migrate, serve --migrate, replay."""
    url = empty_database
    assert referee("migrate", "--database", url).returncode == 0
    asyncio.run(execute(url, "UPDATE alembic_version SET version_num = '0099'"))
    says = f"has schema revision 0099, this referee migrates to {newest_revision()}"
    line = one_line(referee("migrate", "--database", url), UNAVAILABLE)
    assert says in line
    assert "a newer referee migrated it" in line
    replayed = referee("replay", EXAMPLE, "--database", url, "--output", tmp_path / "v")
    assert says in one_line(replayed, UNAVAILABLE)
    served = json.loads(
        one_line(referee("serve", "--migrate", env={"REFEREE_DATABASE_URL": url}), UNAVAILABLE)
    )
    assert says in served["message"]
    # audit and plain serve said it already: the same words
    audited = one_line(referee("audit", "--database", url), UNAVAILABLE)
    assert "has schema revision 0099, this referee audits" in audited
    assert "a newer referee migrated it" in audited


@needs_dev_full
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("replay", EXAMPLE, "--output", FULL), "cannot write --output /dev/full: No space"),
        (
            ("replay", EXAMPLE, "--output", "/dev/null", "--rejected", FULL),
            "cannot write --rejected /dev/full: No space",
        ),
        (
            ("replay", EXAMPLE, "--workers", "2", "--output", FULL),
            "cannot write --output /dev/full: No space",
        ),
        (
            ("simulate", "--games", "20", "--output", FULL),
            "cannot write --output /dev/full: No space",
        ),
    ],
)
def test_an_output_that_cannot_be_written_is_exit_2_naming_it(
    args: tuple[str | Path, ...], says: str
) -> None:
    assert says in one_line(referee(*args), USAGE)


@needs_dev_full
def test_standard_output_that_cannot_be_written_is_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.cli.test_failures import ROOT

    with FULL.open("wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "referee", "replay", str(EXAMPLE)],
            stdout=full,
            stderr=subprocess.PIPE,
            check=False,
            timeout=120,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
            cwd=tmp_path,
            text=True,
        )
    assert done.returncode == USAGE, done.stderr
    assert done.stderr.splitlines() == [
        "referee replay: cannot write standard output: No space left on device"
    ]


@pytest.mark.parametrize("rejected", ["same.jsonl", "./sub/../same.jsonl", "link.jsonl"])
def test_output_and_rejected_on_one_file_are_refused(rejected: str, tmp_path: Path) -> None:
    """Both used to write the file through two buffers: exit 0 and interleaved lines."""
    same = tmp_path / "same.jsonl"
    same.write_text("mine\n")
    (tmp_path / "link.jsonl").symlink_to(same)
    (tmp_path / "sub").mkdir()
    done = referee(
        "replay", EXAMPLE, "--output", "same.jsonl", "--rejected", rejected, cwd=tmp_path
    )
    line = one_line(done, USAGE)
    assert "--output and --rejected are the same file" in line
    assert same.read_text() == "mine\n", "refused before either was opened"


def test_rejected_on_standard_output_beside_the_verdicts_is_refused() -> None:
    for args in (("--rejected", "-"), ("--output", "-", "--rejected", "-")):
        line = one_line(referee("replay", EXAMPLE, *args), USAGE)
        assert "both go to standard output" in line


def test_both_outputs_to_dev_null_are_allowed() -> None:
    done = referee("replay", EXAMPLE, "--output", "/dev/null", "--rejected", "/dev/null")
    assert done.returncode == 0, done.stderr


def test_help_shows_a_default_of_zero_and_of_a_help_that_says_defaults() -> None:
    text = referee("simulate", "--help").stdout.split("\noptions:\n")[1]
    bad_rate = text[text.index("--bad-rate BAD_RATE") :]
    assert bad_rate.split("--duplicate-rate")[0].split() == [
        "--bad-rate", "BAD_RATE", "bad", "lines", "per", "event", "(default:", "0.0)",
    ]  # fmt: skip
    assert text.count("(default: 0.0)") == 2  # --bad-rate, --duplicate-rate
    assert "(default: random)" in text  # --rules, whose help says "all defaults"
    assert "(default: False)" not in text  # a switch has none to show
    assert "(default: None)" not in text


def test_a_source_name_that_is_not_utf8_is_exit_2() -> None:
    line = one_line(referee("replay", EXAMPLE, "--source-name", "\udcff"), USAGE)
    assert line == "referee replay: --source-name \\xff is not UTF-8 text; give a name in UTF-8"
    stored = referee("replay", "-", "--source-name", "\udcff", "--database", CLOSED, stdin=b"")
    assert "--source-name \\xff is not UTF-8 text" in one_line(stored, USAGE)


def test_a_log_path_that_is_not_utf8_needs_a_source_name_where_it_is_one(
    tmp_path: Path,
) -> None:
    log = tmp_path / "l\udcff.jsonl"
    log.write_bytes(EXAMPLE.read_bytes())
    rejected = one_line(referee("replay", log, "--rejected", tmp_path / "r"), USAGE)
    assert "the log's path" in rejected
    assert "l\\xff.jsonl is not UTF-8 text" in rejected
    assert "give --source-name NAME" in rejected
    stored = one_line(referee("replay", log, "--database", CLOSED), USAGE)
    assert "it keys the log's stored positions: give --source-name NAME" in stored
    # where the path names nothing, or a name is given, it is refereed as any other
    assert referee("replay", log, "--output", "/dev/null").returncode == 0
    named = referee("replay", log, "--rejected", tmp_path / "r", "--source-name", "games")
    assert named.returncode == 0, named.stderr
    assert b'"file":"games"' in (tmp_path / "r").read_bytes()
