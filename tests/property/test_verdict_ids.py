"""Verdict ids are the UUIDv5 of EVENTS.md, whatever the game id, seq and index."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from referee.contracts.verdicts import VERDICT_NAMESPACE, verdict_id


@given(st.text(min_size=1), st.integers(1, 10**12), st.integers(0, 20))
def test_a_verdict_id_is_the_uuid5_of_its_place(game_id: str, cause_seq: int, index: int) -> None:
    expected = uuid.uuid5(VERDICT_NAMESPACE, f"{game_id}/{cause_seq}/{index}")
    assert verdict_id(game_id, cause_seq, index) == str(expected)
