"""The edge: raw bytes in, a validated input event or a precise rejection out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypeGuard

import msgspec

from referee.contracts.game_checks import game_started_problem
from referee.contracts.wire import (
    EVENT_TYPES,
    GAME_ID_PATTERN,
    EnvelopeProbe,
    GameStartedWire,
    InputEvent,
)
from referee.domain.errors import RejectionReason

DEFAULT_MAX_EVENT_BYTES = 64 * 1024

_DECODER = msgspec.json.Decoder(InputEvent)
_PROBE = msgspec.json.Decoder(EnvelopeProbe)
_ANY = msgspec.json.Decoder()


@dataclass(frozen=True, slots=True)
class Unparsed:
    """Input that failed at the edge, with whatever place in a game could still be read."""

    reason: RejectionReason
    detail: str
    game_id: str | None
    seq: int | None
    event_id: str | None


def parse_event(raw: bytes, max_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> InputEvent | Unparsed:
    """Decodes and validates one input event."""
    if len(raw) > max_bytes:
        return _unparsed(
            raw,
            RejectionReason.TOO_LARGE,
            f"the event is {len(raw)} bytes; the limit is {max_bytes}",
        )
    try:
        event = _DECODER.decode(raw)
    except msgspec.ValidationError as exc:
        return _explain(raw, str(exc))
    except msgspec.DecodeError as exc:
        return Unparsed(RejectionReason.MALFORMED_JSON, f"not valid JSON: {exc}", None, None, None)
    if not _known_game_id(event.game_id):
        return _unparsed(
            raw,
            RejectionReason.SCHEMA_VIOLATION,
            f"{event.__struct_config__.tag}: Expected `str` matching regex"
            f" {GAME_ID_PATTERN!r} - at `$.game_id`",
        )
    if not _real_time(event.occurred_at):
        return _unparsed(
            raw,
            RejectionReason.SCHEMA_VIOLATION,
            f"{event.__struct_config__.tag}: {event.occurred_at!r} is not a real RFC 3339 time"
            " - at `$.occurred_at`",
        )
    if isinstance(event, GameStartedWire) and len(set(event.players)) != len(event.players):
        return _unparsed(
            raw,
            RejectionReason.SCHEMA_VIOLATION,
            "GameStarted: players must be distinct - at `$.players`",
        )
    if isinstance(event, GameStartedWire) and (problem := game_started_problem(event)):
        return _unparsed(raw, RejectionReason.SCHEMA_VIOLATION, problem)
    return event


_VALID_GAME_IDS: set[str] = set()
_REMEMBERED_GAME_IDS = 100_000


def _known_game_id(game_id: str) -> bool:
    """Checks a decoded game id against ``GAME_ID_PATTERN``, remembering the ids that pass."""
    if game_id in _VALID_GAME_IDS:
        return True
    if not _valid_game_id(game_id):
        return False
    if len(_VALID_GAME_IDS) >= _REMEMBERED_GAME_IDS:
        _VALID_GAME_IDS.clear()
    _VALID_GAME_IDS.add(game_id)
    return True


def _real_time(value: str) -> bool:
    """Checks that a timestamp already shaped like RFC 3339 names a real instant."""
    if value[17:19] == "60":  # a leap second: RFC 3339 allows it, datetime does not
        value = value[:17] + "59" + value[19:]
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _explain(raw: bytes, message: str) -> Unparsed:
    try:
        value = _ANY.decode(raw)
    except msgspec.DecodeError as exc:  # valid for the typed decoder means valid JSON; defensive
        return Unparsed(RejectionReason.MALFORMED_JSON, f"not valid JSON: {exc}", None, None, None)
    if not isinstance(value, dict):
        return Unparsed(
            RejectionReason.SCHEMA_VIOLATION,
            f"an event must be a JSON object, got {type(value).__name__}",
            None,
            None,
            None,
        )
    kind = value.get("type")
    if "type" not in value:
        return _unparsed(raw, RejectionReason.SCHEMA_VIOLATION, "the field 'type' is missing")
    if not isinstance(kind, str) or kind not in EVENT_TYPES:
        known = ", ".join(sorted(EVENT_TYPES))
        return _unparsed(raw, RejectionReason.UNKNOWN_TYPE, f"type {kind!r} is not one of {known}")
    return _unparsed(raw, RejectionReason.SCHEMA_VIOLATION, f"{kind}: {message}")


def _unparsed(raw: bytes, reason: RejectionReason, detail: str) -> Unparsed:
    """A rejection that keeps the game id, seq and event id when they can be read."""
    try:
        probe = _PROBE.decode(raw)
    except msgspec.DecodeError:
        return Unparsed(reason, detail, None, None, None)
    game_id = probe.game_id if _valid_game_id(probe.game_id) else None
    seq = probe.seq if isinstance(probe.seq, int) and not isinstance(probe.seq, bool) else None
    if seq is not None and seq < 1:
        seq = None
    event_id = (
        probe.event_id
        if isinstance(probe.event_id, str) and 1 <= len(probe.event_id) <= 64
        else None
    )
    return Unparsed(reason, detail, game_id, seq, event_id)


_GAME_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-")


def _valid_game_id(value: object) -> TypeGuard[str]:
    return (
        isinstance(value, str)
        and 1 <= len(value) <= 128
        and all(c in _GAME_ID_CHARS for c in value)
    )
