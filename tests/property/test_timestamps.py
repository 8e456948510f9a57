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
