"""Input the judge cannot judge: it is rejected, not fouled."""

from __future__ import annotations

from enum import StrEnum


class RejectionReason(StrEnum):
    """Why an input event was rejected (EVENTS.md, "Bad input")."""

    MALFORMED_JSON = "malformed_json"
    """The bytes are not one JSON object."""
    SCHEMA_VIOLATION = "schema_violation"
    """A field is missing, of the wrong type, out of range, or unknown."""
    UNKNOWN_TYPE = "unknown_type"
    """The ``type`` names no input event."""
    TOO_LARGE = "too_large"
    """The event is larger than the configured limit."""
    UNKNOWN_GAME = "unknown_game"
    """The event is for a game that never started."""
    GAME_ALREADY_STARTED = "game_already_started"
    """A second ``GameStarted`` for a game."""
    UNKNOWN_PLAYER = "unknown_player"
    """The player does not sit at this game."""
    BAD_DEAL = "bad_deal"
    """A ``RoundStarted`` whose deal cannot be: players, leader, or tiles are wrong."""
    ROUND_NOT_STARTED = "round_not_started"
    """An action before the game's first ``RoundStarted``."""
    WRONG_ROUND = "wrong_round"
    """An action for a round other than the current one, or a misplaced ``RoundStarted``."""
    ROUND_OVER = "round_over"
    """An action after its round ended, before the next ``RoundStarted``."""
    GAME_OVER = "game_over"
    """Anything after ``GameWon``."""
    SEQ_GAP = "seq_gap"
    """The ``seq`` skips ahead of the next expected one."""
    SEQ_CONFLICT = "seq_conflict"
    """The ``seq`` (or ``event_id``) was already used by a different event."""
    INTERNAL_ERROR = "internal_error"
    """The referee itself failed on this record: a defect, never a verdict on the input."""


class InvalidInput(Exception):  # noqa: N818 - the name says what it is: the input is invalid
    """An input event that cannot be judged, with its reason code and a readable detail."""

    def __init__(self, reason: RejectionReason, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
