"""The depth count (brackets and strings cut out in C, then one running sum) says what a
plain token scan says, on any bytes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from referee.contracts import limits
from referee.contracts.limits import MAX_DEPTH, is_too_deep, nesting_depth


def token_depth(raw: bytes) -> int:
    """The reference: tokens (a string, to its closing quote or the end, or one bracket)
    read left to right, an opening bracket one level deeper, a closing one less."""
    depth = deepest = 0
    for token in limits._TOKEN.findall(raw):
        if token in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token in (b"]", b"}"):
            depth -= 1
    return deepest


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
def test_the_depth_count_agrees_with_the_token_scan(raw: bytes) -> None:
    assert nesting_depth(raw) == token_depth(raw), raw
    assert is_too_deep(raw) == (token_depth(raw) > MAX_DEPTH), raw


@given(st.lists(PIECES, min_size=MAX_DEPTH, max_size=600).map(b"".join))
def test_the_depth_count_agrees_on_records_past_the_bracket_count(raw: bytes) -> None:
    deep = b"[" * MAX_DEPTH + raw  # past the bracket count, so the exact count decides
    assert nesting_depth(deep) == token_depth(deep), deep
    assert is_too_deep(deep) == (token_depth(deep) > MAX_DEPTH), deep


@given(st.integers(min_value=0, max_value=3 * MAX_DEPTH), st.sampled_from([b"1", b'"]]]"', b"{}"]))
def test_deep_records_around_the_limit(depth: int, inner: bytes) -> None:
    raw = nested(depth, inner)
    expected = token_depth(raw)
    assert expected == depth + (inner == b"{}")
    assert nesting_depth(raw) == expected
    assert is_too_deep(raw) == (expected > MAX_DEPTH)


def test_an_ordinary_large_deal_is_counted_exactly() -> None:
    hands = ",".join(f'"p{i}":[' + ",".join("[3,4]" for _ in range(14)) + "]" for i in range(8))
    raw = ('{"type":"RoundStarted","hands":{' + hands + '},"boneyard":[]}').encode()
    assert raw.count(b"[") > MAX_DEPTH  # the bracket count alone does not decide it
    assert nesting_depth(raw) == 4
    assert not is_too_deep(raw)
