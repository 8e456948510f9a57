"""A rejected record too large to carry: its dead letter omits the bytes, never stalls."""

from __future__ import annotations

import json

import msgspec

from referee.contracts.rejection import MAX_DEAD_LETTER_BYTES, FileSource, rejection_of
from referee.contracts.verdicts import encode_canonical
from referee.domain.errors import RejectionReason
from referee.processing.referee import Referee

SOURCE = FileSource("big.jsonl", 1)


def huge(quotes: int) -> bytes:
    return b'{"event_id":"e1","type":"Passed","pad":"' + b'\\"' * quotes + b'"}'


def test_a_record_whose_rejection_fits_is_carried_whole() -> None:
    raw = huge(1000)
    rejection = rejection_of(raw, SOURCE, RejectionReason.TOO_LARGE, "big", None, None, "e1")
    assert rejection.raw == raw.decode()
    assert b"raw_omitted" not in encode_canonical(rejection), "absent unless it applies"


def test_a_record_whose_rejection_would_not_fit_is_carried_without_its_bytes() -> None:
    raw = huge(300_000)  # 600 kB of escaped quotes: its copy would be 1.2 MB of JSON
    rejection = Referee().process(raw, SOURCE).rejection
    assert rejection is not None
    assert rejection.reason is RejectionReason.TOO_LARGE
    body = encode_canonical(rejection)
    assert len(body) < MAX_DEAD_LETTER_BYTES
    decoded = json.loads(body)
    assert decoded["raw_omitted"] is True
    assert decoded["raw"] == ""
    assert f"the record, {len(raw)} bytes, is too large to carry here" in decoded["detail"]
    assert decoded["event_id"] == "e1", "what could be read is still read"


def test_the_threshold_is_the_encoded_size_not_the_record_size() -> None:
    # A record of plain letters just under the limit is carried: escaping does not grow it.
    raw = b'{"event_id":"e1","pad":"' + b"x" * (MAX_DEAD_LETTER_BYTES - 1000) + b'"}'
    rejection = rejection_of(raw, SOURCE, RejectionReason.TOO_LARGE, "big", None, None, None)
    assert rejection.raw_omitted is msgspec.UNSET
    assert len(encode_canonical(rejection)) <= MAX_DEAD_LETTER_BYTES
