"""The depth check's fast path (brackets peeled in C) says what the exact token scan says."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from referee.contracts import limits
from referee.contracts.limits import MAX_DEPTH, is_too_deep, nesting_depth


def nested(depth: int, inner: bytes = b"1") -> bytes:
    """Arrays and objects in turn, ``depth`` deep, with a string of brackets at each level."""
    opening = b"".join(b'[" ]]] {{ ",' if i % 2 else b'{"k[":' for i in range(depth))
    closing = b"".join(b"]" if i % 2 else b"}" for i in reversed(range(depth)))
    return opening + inner + closing


# Bytes of JSON's structure, strings with brackets and escapes inside, and noise.
PIECES = st.sampled_from(
    [b"[", b"]", b"{", b"}", b'"', b"\\", b'"]["', b'"\\""', b"1", b",", b":", b" ", b"\n"]
)
RECORDS = st.lists(PIECES, max_size=300).map(b"".join)


@given(RECORDS)
def test_the_fast_path_agrees_with_the_token_scan(raw: bytes) -> None:
    shallow = limits._shallow_depth(raw)
    assert shallow is None or shallow == nesting_depth(raw), raw
    assert is_too_deep(raw) == (nesting_depth(raw) > MAX_DEPTH), raw


@given(st.integers(min_value=0, max_value=3 * MAX_DEPTH), st.sampled_from([b"1", b'"]]]"', b"{}"]))
def test_deep_records_around_the_limit(depth: int, inner: bytes) -> None:
    raw = nested(depth, inner)
    expected = nesting_depth(raw)
    assert expected == depth + (inner == b"{}")
    assert is_too_deep(raw) == (expected > MAX_DEPTH)
    assert limits._shallow_depth(raw) in (None, expected)


def test_an_ordinary_deal_takes_the_fast_path() -> None:
    hands = ",".join(f'"p{i}":[' + ",".join("[3,4]" for _ in range(14)) + "]" for i in range(8))
    raw = ('{"type":"RoundStarted","hands":{' + hands + '},"boneyard":[]}').encode()
    assert raw.count(b"[") > MAX_DEPTH  # the bracket count alone does not decide it
    assert limits._shallow_depth(raw) == 4
    assert not is_too_deep(raw)
