"""How the ``referee`` command fails, run as a real process: one line, the right exit status.

Each reproducer that used to print a traceback (or to accept nonsense) is here: the status is
2 for bad usage or configuration, 3 for an unavailable dependency, and the message is one
line that names what failed; ``--debug`` adds the traceback. None of these needs a server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tournament.jsonl"
CLOSED = "postgresql://someone:hunter2secret@127.0.0.1:1/nothing"
"""A PostgreSQL URL nothing listens on (port 1), with a password that must never show."""

USAGE, UNAVAILABLE = 2, 3


def referee(
    *args: str | Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    stdin: bytes | None = None,
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("REFEREE_")}
    return subprocess.run(
        [sys.executable, "-m", "referee", *map(str, args)],
        capture_output=True,
        check=False,
        timeout=120,
        env={**base, "PYTHONPATH": str(ROOT), **(env or {})},
        cwd=cwd,
        input=stdin.decode() if stdin is not None else None,
        text=True,
    )


def one_line(result: subprocess.CompletedProcess[str], status: int) -> str:
    """The failure's single line on stderr, after checking the status and no traceback."""
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_version() -> None:
    from importlib.metadata import version

    from referee.domain.revisions import NEWEST, REVISIONS

    result = referee("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("referee ")
    assert result.stdout.split()[1] == version("referee")
    known = ", ".join(str(n) for n in sorted(REVISIONS))
    assert result.stdout.strip().endswith(f"(rules revision {NEWEST}; judges revisions {known})")


def test_help_shows_the_defaults() -> None:
    text = referee("replay", "--help").stdout
    assert "(default: 2000)" in text  # --batch-size
    assert "(default: 65536)" in text  # --max-event-bytes
    assert "at most 64" in text  # --workers says its cap
    simulate = referee("simulate", "--help").stdout
    assert "(default: 100)" in simulate  # --games
    assert "(default: 0.02)" in simulate  # --foul-rate
    assert "exit status" in referee("--help").stdout


@pytest.mark.parametrize(
    ("args", "flag", "says"),
    [
        (("replay", EXAMPLE, "--workers", "1000"), "--workers", "1 to 64"),
        (("replay", EXAMPLE, "--workers", "0"), "--workers", "1 to 64"),
        (("replay", EXAMPLE, "--workers", "-1"), "--workers", "1 to 64"),
        (("replay", EXAMPLE, "--max-event-bytes", "0"), "--max-event-bytes", "1 to 67108864"),
        (("replay", EXAMPLE, "--max-event-bytes", "67108865"), "--max-event-bytes", "64 MiB"),
        (("replay", EXAMPLE, "--batch-size", "0"), "--batch-size", "1 to 100000"),
        (("replay", EXAMPLE, "--batch-size", "100001"), "--batch-size", "1 to 100000"),
        (("replay", EXAMPLE, "--workers", "two"), "--workers", "not a whole number"),
        (("simulate", "--games", "-5"), "--games", "at least 1"),
        (("simulate", "--games", "0"), "--games", "at least 1"),
        (("simulate", "--concurrency", "0"), "--concurrency", "at least 1"),
        (("simulate", "--max-rounds", "0"), "--max-rounds", "at least 1"),
        (("simulate", "--foul-rate", "2"), "--foul-rate", "from 0 to 1"),
        (("simulate", "--bad-rate", "-0.1"), "--bad-rate", "from 0 to 1"),
        (("simulate", "--duplicate-rate", "nan"), "--duplicate-rate", "from 0 to 1"),
        (("simulate", "--foul-rate", "lots"), "--foul-rate", "not a number"),
        (("simulate", "--seed", "1.5"), "--seed", "not a whole number"),
    ],
)
def test_a_number_out_of_range_is_refused_in_one_line(
    args: tuple[str | Path, ...], flag: str, says: str, tmp_path: Path
) -> None:
    line = one_line(referee(*args, "--output", tmp_path / "out"), USAGE)
    assert flag in line
    assert says in line
    assert not (tmp_path / "out").exists(), "nothing is written before the check"


def test_the_edges_of_the_ranges_are_accepted(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    done = referee(
        "simulate", "--games", "1", "--seed", "-7", "--foul-rate", "1", "--bad-rate", "1",
        "--duplicate-rate", "0", "--concurrency", "1", "--max-rounds", "1", "--output", log,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert log.read_bytes()
    done = referee("replay", log, "--workers", "1", "--max-event-bytes", "1", "--output", "-")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("replay", ROOT / "absent.jsonl"), "no such log"),
        (("replay", "/tmp"), "is a directory, not a log"),
        (("replay", EXAMPLE, "--output", "/tmp"), "--output /tmp is a directory"),
        (("replay", EXAMPLE, "--rejected", "/tmp"), "--rejected /tmp is a directory"),
        (("replay", EXAMPLE, "--output", "/nonexistent/dir/out"), "no such directory"),
        (("replay",), "the log is missing"),
        (("demo", "/nonexistent.jsonl"), "no such log: /nonexistent.jsonl"),
        (("migrate", "--database", "mysql://x@h/x"), "mysql:// is not PostgreSQL"),
        (("audit", "--database", "not a url"), "not a database URL"),
        (("migrate", "--database", "postgresql://u@h/d?sslmode=sometimes"), "sslmode="),
        (("migrate", "--database", "postgresql://u@h/d?pool=9"), "unknown URL parameter 'pool'"),
        (("migrate", "--database", "postgresql://u@h/d?sslcert=/c"), "need sslmode=require"),
    ],
)
def test_a_bad_argument_is_one_line_and_exit_2(args: tuple[str | Path, ...], says: str) -> None:
    line = one_line(referee(*args), USAGE)
    assert line.startswith(f"referee {args[0]}: ")
    assert says in line


def test_replay_refuses_to_overwrite_its_own_log(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(EXAMPLE.read_bytes())
    line = one_line(referee("replay", log, "--output", log), USAGE)
    assert "the log itself" in line
    assert log.read_bytes() == EXAMPLE.read_bytes()


def test_schemas_refuses_a_file_as_its_output_directory(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("mine\n")
    line = one_line(referee("schemas", "--output", readme), USAGE)
    assert "is a file" in line
    assert readme.read_text() == "mine\n"


def test_a_log_given_as_the_database_url_is_explained() -> None:
    line = one_line(referee("replay", "--database", EXAMPLE), USAGE)
    assert "is a log, not a URL" in line
    assert f"referee replay {EXAMPLE} --database" in line


@pytest.mark.parametrize("command", ["migrate", "audit", "serve"])
def test_no_database_is_a_usage_error_never_the_embedded_one(command: str, tmp_path: Path) -> None:
    """In a fresh directory, ``migrate && audit`` used to 'pass' on an empty embedded store."""
    line = one_line(referee(command, cwd=tmp_path), USAGE)
    if command == "serve":  # the service says everything as a JSON log line
        line = json.loads(line)["message"]
    assert "no database" in line
    assert "--database" in line
    assert "REFEREE_DATABASE_URL" in line
    assert "--embedded" in line
    assert not (tmp_path / ".referee").exists(), "no embedded PostgreSQL was started"


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("REFEREE_HTTP_PORT", "99999", "REFEREE_HTTP_PORT='99999': must be at most 65535"),
        ("REFEREE_HTTP_PORT", "0", "REFEREE_HTTP_PORT='0': must be at least 1"),
        ("REFEREE_LOG_LEVEL", "verbose", "REFEREE_LOG_LEVEL='verbose': must be 'DEBUG'"),
        ("REFEREE_KAFKA_SECURITY_PROTOCOL", "TLS", "Kafka calls TLS 'SSL'"),
        ("REFEREE_KAFKA_SECURITY_PROTOCOL", "SASL", "must be 'PLAINTEXT', 'SSL'"),
        ("REFEREE_KAFKA_SASL_MECHANISM", "GSSAPI", "REFEREE_KAFKA_SASL_MECHANISM='GSSAPI'"),
        ("REFEREE_KAFKA_SECURITY_PROTOCOL", "SASL_SSL", "REFEREE_KAFKA_SASL_MECHANISM is needed"),
        ("REFEREE_KAFKA_SSL_CERTFILE", "/nonexistent.crt", "no readable file"),
        ("REFEREE_BATCH_SIZE", "0", "REFEREE_BATCH_SIZE='0': must be at least 1"),
        ("REFEREE_READY_REQUIRES_PARTITION", "maybe", "REFEREE_READY_REQUIRES_PARTITION"),
        ("REFEREE_DATABASE_URL", "mysql://u:hunter2secret@h/x", "REFEREE_DATABASE_URL: mysql://"),
        (
            "REFEREE_DATABASE_URL",
            "postgresql://u:hunter2secret@h/x?sslmode=on",
            "REFEREE_DATABASE_URL: sslmode='on'",
        ),
    ],
)
def test_a_bad_setting_names_its_variable_and_exits_2(
    variable: str, value: str, says: str, tmp_path: Path
) -> None:
    line = one_line(referee("migrate", "--database", CLOSED, env={variable: value}), USAGE)
    assert line.startswith("referee migrate: bad configuration: ")
    assert says in line
    assert "hunter2secret" not in line
    # serve reports it as its one JSON log line, before connecting to anything
    served = json.loads(one_line(referee("serve", env={variable: value}, cwd=tmp_path), USAGE))
    assert served["level"] == "ERROR"
    assert served["exit_code"] == USAGE
    assert says in served["message"]
    assert "hunter2secret" not in served["message"]


def test_unreachable_postgresql_is_exit_3_without_the_password() -> None:
    for command in ("migrate", "audit"):
        line = one_line(referee(command, "--database", CLOSED), UNAVAILABLE)
        assert line.startswith(f"referee {command}: PostgreSQL at ")
        assert "postgresql://someone:***@127.0.0.1:1/nothing" in line
        assert "connection refused" in line
        assert "hunter2secret" not in line


def test_unreachable_postgresql_at_serve_start_is_one_json_line() -> None:
    result = referee("serve", env={"REFEREE_DATABASE_URL": CLOSED})
    served = json.loads(one_line(result, UNAVAILABLE))
    assert served["level"] == "ERROR"
    assert served["logger"] == "referee.serve"
    assert "connection refused" in served["message"]
    assert "hunter2secret" not in result.stderr


def test_a_replay_of_stdin_into_a_store_needs_a_source_name() -> None:
    line = one_line(referee("replay", "-", "--database", CLOSED, stdin=b""), USAGE)
    assert "--source-name" in line


def test_debug_adds_the_traceback() -> None:
    result = referee("--debug", "migrate", "--database", CLOSED)
    assert result.returncode == UNAVAILABLE
    assert "Traceback" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("referee migrate: PostgreSQL at ")
    after = referee("migrate", "--debug", "--database", "mysql://x@h/x")
    assert after.returncode == USAGE
    assert "Traceback" in after.stderr


def test_the_embedded_extra_missing_is_exit_3(tmp_path: Path) -> None:
    """``pgserver`` hidden from the child: ``import pgserver`` fails as it does without it."""
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "pgserver.py").write_text("raise ImportError('not installed')\n")
    result = referee(
        "migrate", "--embedded", env={"PYTHONPATH": f"{hide}{os.pathsep}{ROOT}"}, cwd=tmp_path
    )
    assert result.returncode == UNAVAILABLE
    assert "Traceback" not in result.stderr
    assert "the embedded PostgreSQL needs the 'embedded' extra" in result.stderr.splitlines()[-1]
