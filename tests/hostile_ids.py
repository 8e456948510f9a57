"""Player ids that try to be markup, for the page tests: the golden false pass of
``tests/golden/false_pass_in_confirmation.jsonl`` with its players renamed.

A log's player ids may hold anything but a control character (quotes, markup, a right-to-left
override); its game ids only ``A-Z a-z 0-9 . _ : -``, so ``HOSTILE_GAME`` (markup and control
characters) is put into a page by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden" / "false_pass_in_confirmation.jsonl"

HOSTILE = {
    "ann": '<script>alert("ann")</script>',
    "bob": 'bob" onmouseover="alert(2)\'',
    "cid": "c\u202eid</svg><img src=x onerror=alert(3)>",
}
HOSTILE_GAME = "g</title><script>alert(1)</script>\x1b[31m\x07'\"&amp;"


def hostile_log(tmp_path: Path) -> Path:
    """The golden false pass with a hostile game id and hostile player ids."""

    def swap(value: object) -> object:
        if isinstance(value, str):
            return HOSTILE.get(value, value)
        if isinstance(value, list):
            return [swap(v) for v in value]
        if isinstance(value, dict):
            return {HOSTILE.get(k, k): swap(v) for k, v in value.items()}
        return value

    lines = [json.dumps(swap(json.loads(line))) for line in GOLDEN.read_text().splitlines()]
    log = tmp_path / "hostile.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return log
