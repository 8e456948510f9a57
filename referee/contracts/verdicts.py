"""Verdicts on the wire: envelope, deterministic ids, canonical JSON (EVENTS.md, "Verdicts")."""

from __future__ import annotations

import hashlib
import uuid
from typing import Annotated, Literal

import msgspec

from referee.domain import verdicts as domain
from referee.domain.fouls import FoulKind
from referee.domain.verdicts import RoundEnd

VERDICT_NAMESPACE = uuid.UUID("6f1c1d1e-8a4b-5c2d-9e3f-0a1b2c3d4e5f")
"""The UUIDv5 namespace of verdict ids."""

Points = dict[str, int]


class OpenEnds(msgspec.Struct, frozen=True):
    """The values shown at the two open ends of the line."""

    left: int
    right: int


class VerdictWire(msgspec.Struct, tag_field="type", frozen=True):
    """The fields every verdict carries."""

    verdict_id: Annotated[
        str, msgspec.Meta(description="UUIDv5 of game id, cause seq and index: input-derived.")
    ]
    game_id: str
    round: int
    cause_event_id: str
    cause_seq: int
    occurred_at: Annotated[str, msgspec.Meta(description="Copied from the cause event.")]
    schema_version: Literal[1]


class FoulRecordedWire(VerdictWire, tag="FoulRecorded", frozen=True):
    """A player broke a rule; ``applied`` is false when the action was rejected."""

    player: str
    foul: FoulKind
    applied: bool
    penalty: Annotated[int, msgspec.Meta(ge=0, description="Points deducted (0 if none).")]


class BlockDeclaredWire(VerdictWire, tag="BlockDeclared", frozen=True):
    """The round is blocked: nobody can play and the boneyard is empty."""

    proposer: str
    confirmed_by: Annotated[
        list[str],
        msgspec.Meta(
            description="Players in the order they passed, proposer first; "
            "empty under immediate confirmation."
        ),
    ]
    open_ends: OpenEnds
    pip_counts: Points


class RoundScoredWire(VerdictWire, tag="RoundScored", frozen=True):
    """A round ended and was scored."""

    reason: RoundEnd
    winners: list[str]
    pip_counts: Points
    awards: Points
    cumulative: Points
    tie: bool


class GameWonWire(VerdictWire, tag="GameWon", frozen=True):
    """A player reached the target score and won the game."""

    winner: str
    cumulative: Points


OutputVerdict = FoulRecordedWire | BlockDeclaredWire | RoundScoredWire | GameWonWire
VERDICTS: tuple[type[VerdictWire], ...] = (
    FoulRecordedWire,
    BlockDeclaredWire,
    RoundScoredWire,
    GameWonWire,
)


_NAMESPACE_BYTES = VERDICT_NAMESPACE.bytes


def verdict_id(game_id: str, cause_seq: int, index: int) -> str:
    """Returns the id of the ``index``-th verdict caused by event ``cause_seq`` of a game.

    It is ``str(uuid.uuid5(VERDICT_NAMESPACE, f"{game_id}/{cause_seq}/{index}"))``, spelled
    out: the ``uuid`` module's objects cost more than the hash itself.
    """
    name = f"{game_id}/{cause_seq}/{index}".encode()
    digest = bytearray(hashlib.sha1(_NAMESPACE_BYTES + name, usedforsecurity=False).digest()[:16])
    digest[6] = digest[6] & 0x0F | 0x50  # version 5
    digest[8] = digest[8] & 0x3F | 0x80  # the RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def to_wire(
    verdict: domain.Verdict,
    *,
    game_id: str,
    round_no: int,
    cause_event_id: str,
    cause_seq: int,
    occurred_at: str,
    index: int,
) -> OutputVerdict:
    """Wraps a domain verdict in its envelope."""
    head: tuple[str, str, int, str, int, str, Literal[1]] = (
        verdict_id(game_id, cause_seq, index),
        game_id,
        round_no,
        cause_event_id,
        cause_seq,
        occurred_at,
        1,
    )
    if isinstance(verdict, domain.FoulRecorded):
        return FoulRecordedWire(
            *head, verdict.player, verdict.foul, verdict.applied, verdict.penalty
        )
    if isinstance(verdict, domain.BlockDeclared):
        left, right = verdict.open_ends
        return BlockDeclaredWire(
            *head,
            verdict.proposer,
            list(verdict.confirmed_by),
            OpenEnds(left, right),
            dict(verdict.pip_counts),
        )
    if isinstance(verdict, domain.RoundScored):
        return RoundScoredWire(
            *head,
            verdict.reason,
            list(verdict.winners),
            dict(verdict.pip_counts),
            dict(verdict.awards),
            dict(verdict.cumulative),
            verdict.tie,
        )
    return GameWonWire(*head, verdict.winner, dict(verdict.cumulative))


def encode_canonical(obj: object) -> bytes:
    """Serialises canonically: keys sorted, no spaces, UTF-8."""
    return msgspec.json.encode(obj, order="sorted")


_VERDICT_DECODER = msgspec.json.Decoder(OutputVerdict)


def decode_verdict(data: bytes) -> OutputVerdict:
    """Parses one verdict line (used by audits and tests)."""
    return _VERDICT_DECODER.decode(data)
