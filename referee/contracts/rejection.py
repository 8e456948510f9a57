"""``EventRejected``: input that could not be judged, as published to the dead-letter topic."""

from __future__ import annotations

import base64
from typing import Annotated, Literal

import msgspec

from referee.domain.errors import RejectionReason


class KafkaSource(msgspec.Struct, frozen=True, tag_field="kind", tag="kafka"):
    """Where a record came from on Kafka."""

    topic: str
    partition: int
    offset: int


class FileSource(msgspec.Struct, frozen=True, tag_field="kind", tag="file"):
    """Where a line came from in an event log (1-based line number)."""

    file: str
    line: int


Source = KafkaSource | FileSource


class EventRejected(msgspec.Struct, frozen=True, tag_field="type", tag="EventRejected"):
    """An input event that could not be judged, with the original bytes and why."""

    reason: RejectionReason
    detail: Annotated[str, msgspec.Meta(description="What was wrong, for a human.")]
    raw: Annotated[str, msgspec.Meta(description="The original bytes (UTF-8, or base64).")]
    raw_encoding: Literal["utf-8", "base64"]
    source: Source
    game_id: str | None = None
    seq: int | None = None
    event_id: str | None = None
    schema_version: Literal[1] = 1


def raw_text(raw: bytes) -> tuple[str, Literal["utf-8", "base64"]]:
    """Returns the bytes as UTF-8 text when they are, else as base64."""
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(raw).decode("ascii"), "base64"
