"""The edge: raw bytes in, a validated input event or a precise rejection out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard

import msgspec

from referee.contracts.game_checks import game_started_problem
from referee.contracts.limits import (
    GOOD_TIMESTAMPS,
    MAX_DEPTH,
    MAX_INTEGER,
    flattened,
    has_control_character,
    is_rfc3339,
    is_too_deep,
    nesting_depth,
)
from referee.contracts.wire import (
    EVENT_TYPES,
    GAME_ID_PATTERN,
    EnvelopeProbe,
    GameStartedWire,
    InputEvent,
    PassedWire,
    RoundStartedWire,
    TileDrawnWire,
    TilePlayedWire,
)
from referee.domain.errors import RejectionReason

DEFAULT_MAX_EVENT_BYTES = 64 * 1024

_DECODER = msgspec.json.Decoder(InputEvent)
# The error paths read every number JSON's grammar allows: a float beyond a double's range
# (1e400, -1e400) is read as an infinite float, where msgspec's untyped decoder fails with
# "Number out of range", a DecodeError as for malformed JSON. The grammar is msgspec's own, so
# what these decoders still fail on is malformed JSON.
_PROBE = msgspec.json.Decoder(EnvelopeProbe, float_hook=float)
_ANY = msgspec.json.Decoder(float_hook=float)
probe_envelope = _PROBE.decode
"""Decodes a record's envelope leniently (the sharding of ``replay --workers`` reads the game
id with it): raises ``msgspec.DecodeError`` for malformed JSON."""
_OUT_OF_RANGE = "Number out of range"
"""How the typed decoder's message begins when it met a float beyond a double's range."""


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
    # is_too_deep's own fast test, inlined: fewer brackets than the limit cannot nest deeper.
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and is_too_deep(raw):
        return _too_deep(raw)
    try:
        event: InputEvent = _DECODER.decode(raw)
    except msgspec.ValidationError as exc:
        explained = _explain(raw, str(exc))
        if isinstance(explained, Unparsed):
            return explained
        event = explained
    except msgspec.DecodeError as exc:
        return Unparsed(RejectionReason.MALFORMED_JSON, f"not valid JSON: {exc}", None, None, None)
    problem = _problem(event)
    if problem is not None:
        return _unparsed(raw, RejectionReason.SCHEMA_VIOLATION, problem)
    return event


def _problem(event: InputEvent) -> str | None:
    """Returns what the decoder cannot check about a decoded event, if anything is wrong.

    Written for the common case (an action of a known game, an ordinary timestamp): the
    remembered ids and timestamp prefixes are looked up inline, and only new or unusual
    values go through the full checks.
    """
    if event.game_id not in _VALID_GAME_IDS and not _known_game_id(event.game_id):
        tag = event.__struct_config__.tag
        return f"{tag}: Expected `str` matching regex {GAME_ID_PATTERN!r} - at `$.game_id`"
    occurred_at = event.occurred_at
    if occurred_at not in GOOD_TIMESTAMPS and not is_rfc3339(occurred_at):
        tag = event.__struct_config__.tag
        return (
            f"{tag}: {event.occurred_at!r} is not an RFC 3339 date-time naming a real instant"
            " (section 5.6: a real date, hours 00-23, minutes 00-59, seconds 00-60, an"
            " offset within +-23:59) - at `$.occurred_at`"
        )
    event_id = event.event_id
    if not (event_id.isascii() and event_id.isprintable()) and has_control_character(event_id):
        tag = event.__struct_config__.tag
        return f"{tag}: the event id {event_id!r} holds a control character - at `$.event_id`"
    kind = type(event)
    if kind is TilePlayedWire or kind is TileDrawnWire or kind is PassedWire:
        player: str = event.player  # type: ignore[union-attr]
        if player in _CLEAN_IDS or _clean_id(player):
            return None
        tag = event.__struct_config__.tag
        return f"{tag}: the player id {player!r} holds a control character - at `$.player`"
    tag = event.__struct_config__.tag
    if isinstance(event, RoundStartedWire):
        for player in event.hands:
            if not _clean_id(player):
                return f"{tag}: the player id {player!r} holds a control character - at `$.hands`"
        if not _clean_id(event.leader):
            return (
                f"{tag}: the player id {event.leader!r} holds a control character - at `$.leader`"
            )
        return None
    if isinstance(event, GameStartedWire):
        for i, player in enumerate(event.players):
            if not _clean_id(player):
                return (
                    f"{tag}: the player id {player!r} holds a control character"
                    f" - at `$.players[{i}]`"
                )
        if len(set(event.players)) != len(event.players):
            return f"{tag}: players must be distinct - at `$.players`"
        return game_started_problem(event)  # options, teams and player names (RULES.md)
    return None


_VALID_GAME_IDS: set[str] = set()
_CLEAN_IDS: set[str] = set()
_REMEMBERED_IDS = 100_000
# Game and player ids recur in every event of their game: each distinct id is checked once.


def _known_game_id(game_id: str) -> bool:
    """Checks a decoded game id against ``GAME_ID_PATTERN``, remembering the ids that pass."""
    if game_id in _VALID_GAME_IDS:
        return True
    if not _valid_game_id(game_id):
        return False
    if len(_VALID_GAME_IDS) >= _REMEMBERED_IDS:
        _VALID_GAME_IDS.clear()
    _VALID_GAME_IDS.add(game_id)
    return True


def _clean_id(player: str) -> bool:
    """Checks that a player id holds no control character, remembering the ids that pass."""
    if player in _CLEAN_IDS:
        return True
    if has_control_character(player):
        return False
    if len(_CLEAN_IDS) >= _REMEMBERED_IDS:
        _CLEAN_IDS.clear()
    _CLEAN_IDS.add(player)
    return True


def _too_deep(raw: bytes) -> Unparsed:
    try:
        _ANY.decode(raw)
    except msgspec.DecodeError as exc:
        return Unparsed(RejectionReason.MALFORMED_JSON, f"not valid JSON: {exc}", None, None, None)
    except RecursionError:
        pass  # deeper than the decoder goes: well-formed or not, it is too deep
    return _unparsed(
        raw,
        RejectionReason.SCHEMA_VIOLATION,
        f"the event nests {nesting_depth(raw)} levels deep; the limit is {MAX_DEPTH}",
    )


def _explain(raw: bytes, message: str) -> InputEvent | Unparsed:
    """Explains why a record failed validation, or reads it with repeated keys.

    The typed decoder meets the fields in their order and so fails on a repeated key whose
    first value is wrong (a repeated ``type`` above all); EVENTS.md reads a repeated key as its
    last value, which is what the generic decoder keeps. When the record is valid read that
    way, it is the event.

    The typed decoder stops at its first fault, so the rest of the record (malformed JSON
    included) is met only here. Its ``message`` is the detail, but for a float beyond a
    double's range (1e400: valid JSON, read here as an infinite float): the conversion then
    says what the field takes, as it does for any other float there.
    """
    try:
        value = _ANY.decode(raw)
    except msgspec.DecodeError as exc:  # malformed after the typed decoder's fault
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
    try:
        event: InputEvent = msgspec.convert(value, InputEvent)
    except msgspec.ValidationError as exc:
        detail = str(exc) if message.startswith(_OUT_OF_RANGE) else message
        return _unparsed(raw, RejectionReason.SCHEMA_VIOLATION, f"{kind}: {detail}")
    return event


def _unparsed(raw: bytes, reason: RejectionReason, detail: str) -> Unparsed:
    """A rejection that keeps the game id, seq and event id when they can be read."""
    game_id, seq, event_id = read_envelope(raw)
    return Unparsed(reason, detail, game_id, seq, event_id)


def read_envelope(raw: bytes) -> tuple[str | None, int | None, str | None]:
    """Reads the game id, seq and event id of any record leniently, each valid or ``None``.

    It reads records that failed validation, so it assumes nothing of them: a record nested
    too deeply to decode is read with its nested values set aside.
    """
    try:
        probe = _PROBE.decode(flattened(raw) if is_too_deep(raw) else raw)
    except (msgspec.DecodeError, RecursionError):
        return None, None, None
    game_id = probe.game_id if _valid_game_id(probe.game_id) else None
    seq = probe.seq
    if not isinstance(seq, int) or isinstance(seq, bool) or not 1 <= seq <= MAX_INTEGER:
        seq = None
    event_id = probe.event_id
    if (
        not isinstance(event_id, str)
        or not 1 <= len(event_id) <= 64
        or has_control_character(event_id)
    ):
        event_id = None
    return game_id, seq, event_id


_GAME_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-")


def _valid_game_id(value: object) -> TypeGuard[str]:
    return (
        isinstance(value, str)
        and 1 <= len(value) <= 128
        and all(c in _GAME_ID_CHARS for c in value)
    )
