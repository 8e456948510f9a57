"""Raw ``journal`` rows for the ceilings: a record's indexed keys probed, nothing judged."""

from __future__ import annotations

import msgspec

from referee.contracts.wire import EnvelopeProbe
from referee.processing.rows import JournalRow


def probe_keys(
    raw: bytes, probe: msgspec.json.Decoder[EnvelopeProbe]
) -> tuple[str | None, int | None, str | None]:
    try:
        p = probe.decode(raw)
    except msgspec.DecodeError:
        return None, None, None
    game = p.game_id if isinstance(p.game_id, str) else None
    seq = p.seq if isinstance(p.seq, int) and not isinstance(p.seq, bool) else None
    event_id = p.event_id if isinstance(p.event_id, str) else None
    return game, seq, event_id


def ceiling_row(
    n: int,
    topic: str,
    partition: int,
    offset: int,
    raw: bytes,
    probe: msgspec.json.Decoder[EnvelopeProbe],
) -> JournalRow:
    """A journal row for a ceiling: the record's indexed keys probed, nothing judged."""
    game, seq, event_id = probe_keys(raw, probe)
    return JournalRow(
        id=n,
        source_topic=topic,
        source_partition=partition,
        source_offset=offset,
        game_id=game,
        seq=seq,
        event_id=event_id,
        event_type=None,
        outcome="applied",
        reason=None,
        took_place=True,
        fingerprint=b"",
        raw=raw,
        max_event_bytes=None,
        referee_version=None,
    )
