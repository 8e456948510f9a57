"""The replay's progress bar: drawn by time, never by count; percent, rate, time left, 100%."""

from __future__ import annotations

import io

from referee.cli.progress import ProgressBar

MIB = 1024 * 1024


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def frames(out: io.StringIO) -> list[str]:
    return [f.rstrip("\n").removesuffix("\x1b[K") for f in out.getvalue().split("\r") if f.strip()]


def test_it_redraws_by_time_not_by_count() -> None:
    clock, out = Clock(), io.StringIO()
    bar = ProgressBar(100 * MIB, out, clock=clock)
    bar(1 * MIB, 1024)  # the first report is drawn at once
    for n in range(2, 50):
        bar(n * MIB, n * 1024)  # the same instant: nothing more drawn
    assert len(frames(out)) == 1
    clock.now = 0.1
    bar(50 * MIB, 51_200)
    assert len(frames(out)) == 1
    clock.now = 0.2
    bar(51 * MIB, 52_224)
    assert len(frames(out)) == 2


def test_it_shows_percent_rate_and_time_left() -> None:
    clock, out = Clock(), io.StringIO()
    bar = ProgressBar(100 * MIB, out, clock=clock)
    clock.now = 10.0
    bar(25 * MIB, 50_000)
    (frame,) = frames(out)
    assert frame.startswith("[" + "#" * 6 + "-" * 18 + "]  25%")
    assert "25.0/100.0 MiB" in frame
    assert "5,000 lines/s" in frame
    assert frame.endswith("ETA 0:30")  # 75 MiB more at 2.5 MiB/s


def test_close_reaches_100_percent_and_ends_the_line() -> None:
    clock, out = Clock(), io.StringIO()
    bar = ProgressBar(3 * MIB, out, clock=clock)
    bar(1 * MIB, 10)
    clock.now = 3725.0
    bar.bytes, bar.lines = 3 * MIB, 30  # as the replay's last report leaves it
    bar.close()
    last = frames(out)[-1]
    assert last.startswith("[" + "#" * 24 + "] 100%")
    assert last.endswith("in 1:02:05")
    assert out.getvalue().endswith("\n")


def test_without_a_size_it_shows_what_was_read() -> None:
    clock, out = Clock(), io.StringIO()
    bar = ProgressBar(None, out, clock=clock)
    clock.now = 2.0
    bar(3 * MIB, 4000)
    (frame,) = frames(out)
    assert frame == "3.0 MiB  4,000 lines  2,000 lines/s"
    assert "%" not in frame


def test_an_empty_file_has_no_percent_to_show() -> None:
    out = io.StringIO()
    ProgressBar(0, out, clock=Clock()).close()
    assert "%" not in out.getvalue()
