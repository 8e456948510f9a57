"""A string left open, with quotes and escapes laid out to make a scan restart at each of
them, is judged in one pass: the outcome is the ordinary one, and a line at the size limit
takes milliseconds (a pattern needing the closing quote took 17 s on one such line, and the
live service would have missed its heartbeats on a batch of two)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from referee.contracts.limits import flattened, nesting_depth
from referee.contracts.parse import DEFAULT_MAX_EVENT_BYTES, Unparsed, parse_event
from referee.domain.errors import RejectionReason


def filled(head: bytes, unit: bytes, tail: bytes = b"") -> bytes:
    """``head`` + ``unit`` repeated + ``tail``, as long as the size limit allows."""
    room = DEFAULT_MAX_EVENT_BYTES - len(head) - len(tail)
    return head + unit * (room // len(unit)) + tail


OPEN_STRINGS = {
    "escaped quotes after deep brackets": filled(b"[" * 65 + b'"', b'\\"'),
    "escaped quotes in an object": filled(b'{"type":"Passed","game_id":"', b'\\"'),
    "escaped backslashes and quotes": filled(b'{"a":["', b'\\\\\\"'),
    "quotes and brackets": filled(b'{"a":"', b'\\"[{'),
    "a lone backslash at the end": filled(b'["', b'\\"', b"\\"),
}


@pytest.mark.parametrize("name", sorted(OPEN_STRINGS))
def test_an_open_string_is_malformed_json_or_too_deep(name: str) -> None:
    raw = OPEN_STRINGS[name]
    result = parse_event(raw)
    assert isinstance(result, Unparsed)
    too_deep = raw.count(b"[") >= 65 and raw.startswith(b"[" * 65)
    expected = RejectionReason.SCHEMA_VIOLATION if too_deep else RejectionReason.MALFORMED_JSON
    assert result.reason in (expected, RejectionReason.MALFORMED_JSON), result.detail


def test_the_scan_counts_nothing_inside_an_open_string() -> None:
    assert nesting_depth(b'[["abc[[[[') == 2
    assert nesting_depth(b'["a\\"[[[') == 1
    assert nesting_depth(b'[["a\\\\"]]') == 2  # an escaped backslash closes nothing early
    assert flattened(b'{"a":[1],"b":"x[') == b'{"a":null,"b":"x['


def test_every_open_string_at_the_size_limit_is_judged_within_seconds() -> None:
    # Not a speed figure (those are in bench/): a guard against the scan going quadratic
    # again, which takes minutes on these lines; linear, all of them take milliseconds.
    code = (
        "from tests.unit.edge.test_open_strings import OPEN_STRINGS\n"
        "from referee.contracts.parse import parse_event\n"
        "for raw in OPEN_STRINGS.values():\n"
        "    for _ in range(3):\n"
        "        parse_event(raw)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
