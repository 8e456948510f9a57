"""``EventRejected``: input that could not be judged, as published to the dead-letter topic."""

from __future__ import annotations

import base64
from typing import Annotated, Literal

import msgspec

from referee.domain.errors import RejectionReason


def _described(description: str, **schema: object) -> msgspec.Meta:
    # Written by the referee, never decoded on its path: the schema states the ranges, the
    # decoder is left as it was.
    return msgspec.Meta(description=description, extra_json_schema=schema)


class KafkaSource(msgspec.Struct, frozen=True, tag_field="kind", tag="kafka"):
    """Where a record came from on Kafka (``referee serve``)."""

    topic: Annotated[str, msgspec.Meta(description="The input topic it was read from.")]
    partition: Annotated[int, _described("Its partition.", minimum=0)]
    offset: Annotated[int, _described("Its offset in that partition.", minimum=0)]


class FileSource(msgspec.Struct, frozen=True, tag_field="kind", tag="file"):
    """Where a line came from in an event log (``referee replay``)."""

    file: Annotated[
        str, msgspec.Meta(description="The log as it was named to the replay (- for stdin).")
    ]
    line: Annotated[int, _described("The line number, 1 for the first line.", minimum=1)]


Source = KafkaSource | FileSource


class EventRejected(msgspec.Struct, frozen=True, tag_field="type", tag="EventRejected"):
    """An input event that could not be judged, with the original bytes and why."""

    reason: Annotated[
        RejectionReason,
        msgspec.Meta(
            description='Why it could not be judged, a code (EVENTS.md, "Bad input"); new '
            "codes may be added, so a consumer treats an unknown one as a rejection all the same."
        ),
    ]
    detail: Annotated[
        str,
        msgspec.Meta(
            description="What was wrong, for a human: the field and the rule, e.g. "
            "TilePlayed: Invalid enum value 'middle' - at `$.end`. Not a stable interface."
        ),
    ]
    raw: Annotated[
        str,
        msgspec.Meta(
            description="The original bytes of the record, whole: as text when they are UTF-8, "
            "else base64 (raw_encoding says which)."
        ),
    ]
    raw_encoding: Annotated[
        Literal["utf-8", "base64"],
        msgspec.Meta(
            description="How raw holds the bytes: utf-8, the bytes were valid UTF-8 and raw is "
            "that text; base64, they were not and raw is their standard base64 (RFC 4648)."
        ),
    ]
    source: Annotated[
        Source,
        msgspec.Meta(
            description="Where the record came from: kind kafka (topic, partition, offset) in "
            "the live service, kind file (file, line) in a replay of a log. It identifies the "
            "rejection."
        ),
    ]
    game_id: Annotated[
        str | None,
        msgspec.Meta(
            description="The record's game_id, when one could be read (even from input that "
            "failed validation); null otherwise."
        ),
    ] = None
    seq: Annotated[
        int | None,
        msgspec.Meta(
            description="The record's seq, when an integer one could be read; null otherwise. "
            "A rejected event with a readable game_id and exactly the next seq still takes "
            "that place in its game."
        ),
    ] = None
    event_id: Annotated[
        str | None,
        msgspec.Meta(description="The record's event_id, when one could be read; null otherwise."),
    ] = None
    schema_version: Annotated[
        Literal[1], msgspec.Meta(description="The version of the event contract: always 1.")
    ] = 1
    raw_omitted: Annotated[
        bool | msgspec.UnsetType,
        msgspec.Meta(
            description="Present (true) only when the record is too large to carry: its "
            "rejection would be over 512 KiB of JSON, so raw is empty and detail gives the "
            "record's size. The bytes are kept in the referee's journal and at the source."
        ),
    ] = msgspec.UNSET


MAX_DEAD_LETTER_BYTES = 512 * 1024
"""The largest ``EventRejected`` carried whole: half of Kafka's default message limit, so a
dead letter always fits the dead-letter topic (JSON escaping can make a record's copy six
times its size)."""


def rejection_of(
    raw: bytes,
    source: Source,
    reason: RejectionReason,
    detail: str,
    game_id: str | None,
    seq: int | None,
    event_id: str | None,
) -> EventRejected:
    """Returns the rejection of a record, its bytes included unless they are too large to
    carry (``raw_omitted``): a rule of the record alone, so every path gives the same bytes."""
    text, encoding = raw_text(raw)
    rejection = EventRejected(reason, detail, text, encoding, source, game_id, seq, event_id)
    if len(raw) * 6 < MAX_DEAD_LETTER_BYTES or (
        len(msgspec.json.encode(rejection)) <= MAX_DEAD_LETTER_BYTES
    ):
        return rejection
    return EventRejected(
        reason,
        f"{detail} (the record, {len(raw)} bytes, is too large to carry here: it is kept in "
        "the referee's journal and at its source)",
        "",
        "utf-8",
        source,
        game_id,
        seq,
        event_id,
        raw_omitted=True,
    )


def raw_text(raw: bytes) -> tuple[str, Literal["utf-8", "base64"]]:
    """Returns the bytes as UTF-8 text when they are, else as base64."""
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(raw).decode("ascii"), "base64"
