"""``referee replay`` on streams and terminals, run as a real process: ``-`` reads standard
input, a reader that leaves (``| head -1``) ends it quietly, and the progress bar shows on a
terminal (a pseudo-terminal here) by time, with rate and time left, up to 100%."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tournament.jsonl"
BROKEN_PIPE = 141


def referee(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "referee", *map(str, args)],
        capture_output=True,
        check=False,
        timeout=300,
        input=stdin,
    )


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log of 300 games with bad lines: its verdicts fill more than a pipe's buffer."""
    log = tmp_path_factory.mktemp("streams") / "games.jsonl"
    done = referee(
        "simulate", "--games", "300", "--seed", "4", "--bad-rate", "0.02", "--output", log
    )
    assert done.returncode == 0, done.stderr
    return log


@pytest.mark.parametrize("workers", ["1", "2"])
def test_stdin_replays_like_the_file(big_log: Path, workers: str, tmp_path: Path) -> None:
    from_file, from_stdin = tmp_path / "file.rejected", tmp_path / "stdin.rejected"
    file = referee("replay", big_log, "--workers", workers, "--rejected", from_file)
    assert file.returncode == 0, file.stderr
    piped = referee(
        "replay", "-", "--workers", workers, "--rejected", from_stdin, "--source-name",
        str(big_log), stdin=big_log.read_bytes(),
    )  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == file.stdout
    assert from_stdin.read_bytes() == from_file.read_bytes()
    assert from_file.read_bytes(), "the log has rejections to compare"


def test_stdin_is_named_dash_in_rejections_by_default(tmp_path: Path) -> None:
    rejected = tmp_path / "rejected"
    done = referee("replay", "-", "--rejected", rejected, stdin=b"not json\n")
    assert done.returncode == 0, done.stderr
    assert b'"file":"-"' in rejected.read_bytes()


def test_a_reader_that_leaves_ends_the_replay_quietly(big_log: Path) -> None:
    """``referee replay LOG | head -1``: no BrokenPipeError, the status a shell gives SIGPIPE."""
    for workers in ("1", "2"):
        child = subprocess.Popen(
            [sys.executable, "-m", "referee", "replay", str(big_log), "--workers", workers],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert child.stdout is not None
        assert child.stderr is not None
        first = child.stdout.readline()
        child.stdout.close()  # as head -1 does
        err = child.stderr.read()
        assert child.wait(timeout=120) == BROKEN_PIPE, err
        assert first.startswith(b"{")
        assert b"Traceback" not in err
        assert b"BrokenPipe" not in err
        assert b"Exception ignored" not in err


def test_head_in_a_shell_pipeline(big_log: Path) -> None:
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {sys.executable} -m referee replay {big_log} | head -1"],
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == BROKEN_PIPE
    assert done.stdout.count(b"\n") == 1
    assert b"Traceback" not in done.stderr


def on_a_terminal(*args: str | Path, stdin: Path | None = None) -> tuple[int, str]:
    """Runs the command with standard error on a pseudo-terminal; returns status and screen."""
    master, slave = pty.openpty()
    with (stdin or Path(os.devnull)).open("rb") as given:
        child = subprocess.Popen(
            [sys.executable, "-m", "referee", *map(str, args)],
            stdin=given,
            stdout=subprocess.DEVNULL,
            stderr=slave,
        )
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        assert ready, "the command went silent"
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    return child.wait(timeout=60), seen.decode()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_bar_shows_rate_and_reaches_100_percent(big_log: Path, workers: str) -> None:
    status, screen = on_a_terminal("replay", big_log, "--workers", workers, "--output", os.devnull)
    assert status == 0, screen
    frames = [f for f in re.split(r"[\r\n]", screen) if f.startswith("[")]
    assert frames, screen
    final = frames[-1]
    assert final.startswith("[" + "#" * 24 + "] 100%"), final
    size = big_log.stat().st_size / 1024 / 1024
    assert f"{size:,.1f}/{size:,.1f} MiB" in final
    assert re.search(r"[\d,]+ lines/s", final)
    assert "events: " in screen, "the summary follows the bar"


def test_a_small_log_gets_a_bar_too(tmp_path: Path) -> None:
    """It used to show nothing below 20,000 lines."""
    status, screen = on_a_terminal("replay", EXAMPLE, "--output", os.devnull)
    assert status == 0, screen
    assert "] 100%" in screen


def test_a_pipe_has_no_size_so_no_percent(big_log: Path) -> None:
    status, screen = on_a_terminal("replay", "-", "--output", os.devnull, stdin=big_log)
    assert status == 0, screen
    # stdin redirected from a file has a size after all: the bar uses it
    assert "] 100%" in screen
    cat = subprocess.Popen(["cat", str(big_log)], stdout=subprocess.PIPE)
    master, slave = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "referee", "replay", "-", "--output", os.devnull],
        stdin=cat.stdout,
        stdout=subprocess.DEVNULL,
        stderr=slave,
    )
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert child.wait(timeout=120) == 0
    cat.wait(timeout=10)
    text = seen.decode()
    assert "%" not in text.split("events:")[0]
    assert re.search(r"MiB  [\d,]+ lines  [\d,]+ lines/s", text), text


def test_the_bar_does_not_change_the_output(big_log: Path, tmp_path: Path) -> None:
    with_bar = tmp_path / "bar.jsonl"
    status, screen = on_a_terminal("replay", big_log, "--output", with_bar)
    assert status == 0, screen
    assert with_bar.read_bytes() == referee("replay", big_log).stdout


def test_no_bar_off_a_terminal(big_log: Path) -> None:
    done = referee("replay", big_log, "--output", os.devnull)
    assert done.returncode == 0
    assert b"\r" not in done.stderr
    assert b"%" not in done.stderr
