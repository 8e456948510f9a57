"""The timestamp check's fast path (a minute already checked) says what the full check says."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from referee.contracts import limits
from referee.contracts.limits import is_rfc3339

MINUTES = ["2026-11-30T12:04", "2026-11-30t12:04", "2024-02-29T23:59"]
TAILS = st.text(alphabet="0123456789:Zz+-.٢ T", min_size=0, max_size=8)


def full_check(value: str) -> bool:
    limits._CHECKED_MINUTES.clear()
    limits._REAL_DATES.clear()
    return is_rfc3339(value)


@given(minute=st.sampled_from(MINUTES), tail=TAILS)
def test_a_remembered_minute_changes_no_answer(minute: str, tail: str) -> None:
    value = minute + tail
    expected = full_check(value)
    assert is_rfc3339(minute + ":00Z")  # now the minute is remembered
    assert is_rfc3339(value) == expected, value


def test_the_fast_path_takes_the_usual_shape_and_refuses_what_the_full_check_refuses() -> None:
    assert is_rfc3339("2026-11-30T12:04:00Z")
    for second in ("00", "59", "60"):
        assert is_rfc3339(f"2026-11-30T12:04:{second}Z")
        assert is_rfc3339(f"2026-11-30T12:04:{second}z")
    for bad in ("61", "6a", "a0", "٢٠", "99"):
        assert not is_rfc3339(f"2026-11-30T12:04:{bad}Z"), bad
    assert not is_rfc3339("2026-11-30T12:04:00Q")


@given(minute=st.sampled_from(MINUTES), tails=st.lists(TAILS, max_size=6))
def test_only_timestamps_the_full_check_accepts_are_remembered_as_good(
    minute: str, tails: list[str]
) -> None:
    limits.GOOD_TIMESTAMPS.clear()
    is_rfc3339(minute + ":00Z")  # the minute remembered: the fast path answers the rest
    for tail in tails:
        is_rfc3339(minute + tail)
    remembered = set(limits.GOOD_TIMESTAMPS)
    assert minute + ":00Z" in remembered
    # the edge skips is_rfc3339 for these: each must be one the full check accepts
    assert all(full_check(value) for value in remembered), remembered
