"""Verdicts on the wire: envelope, deterministic ids, canonical JSON (EVENTS.md, "Verdicts")."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, UnsetType

from referee.contracts.limits import MAX_INTEGER, RFC3339_PATTERN
from referee.contracts.wire import GAME_ID_PATTERN, ID_PATTERN
from referee.domain import verdicts as domain
from referee.domain.fouls import FoulKind
from referee.domain.verdicts import RoundEnd

VERDICT_NAMESPACE = uuid.UUID("6f1c1d1e-8a4b-5c2d-9e3f-0a1b2c3d4e5f")
"""The UUIDv5 namespace of verdict ids."""

Points = dict[str, int]


def _about(description: str, example: object) -> msgspec.Meta:
    return msgspec.Meta(description=description, examples=[example])


def _described(description: str, **schema: object) -> msgspec.Meta:
    # Verdicts are written by the referee, not read at the edge: what the schema states about
    # them (formats, patterns, ranges) holds because their causes passed the edge, and is
    # left out of the decoder (``extra_json_schema``) so that decoding stays as it was.
    return msgspec.Meta(description=description, extra_json_schema=schema or None)


TeamPoints = Annotated[
    Points | UnsetType, _about("Team id -> points; only when the game has teams.", {"north": 12})
]
"""A per-team figure, present only in a game with teams (EVENTS.md)."""
Player = Annotated[
    str, _described("A player id of the game.", minLength=1, maxLength=64, pattern=ID_PATTERN)
]
PipCounts = Annotated[
    Points,
    msgspec.Meta(
        description="Player id -> the pips left in their hand (the double-blank counting the "
        "game's double_blank), every player of the game."
    ),
]


class VerdictWire(msgspec.Struct, tag_field="type", frozen=True):
    """The fields every verdict carries."""

    verdict_id: Annotated[
        str,
        _described(
            "The verdict's id, derived from the input only: UUIDv5 in namespace "
            f"{VERDICT_NAMESPACE} of the name "
            '"{game_id}/{cause_seq}/{index}", index counting the verdicts of one input event '
            "from 0. The same input always gives the same id and "
            "the same bytes: a consumer drops repeats by it.",
            format="uuid",
        ),
    ]
    game_id: Annotated[
        str,
        _described(
            "The game, as in the cause event; also the record's Kafka key.",
            minLength=1,
            maxLength=128,
            pattern=GAME_ID_PATTERN,
        ),
    ]
    round: Annotated[
        int,
        _described(
            "The round of the cause event (1 for the first).", minimum=1, maximum=MAX_INTEGER
        ),
    ]
    cause_event_id: Annotated[
        str,
        _described(
            "The event_id of the input event that produced the verdict.",
            minLength=1,
            maxLength=64,
            pattern=ID_PATTERN,
        ),
    ]
    cause_seq: Annotated[
        int,
        _described(
            "The seq of the input event that produced the verdict. The verdicts of a game "
            "come in cause_seq order, those of one event in the order FoulRecorded, "
            "PointsScored, BlockDeclared, RoundScored, GameWon.",
            minimum=1,
            maximum=MAX_INTEGER,
        ),
    ]
    occurred_at: Annotated[
        str,
        _described(
            "The cause event's occurred_at, copied verbatim (never the referee's clock, so a "
            "replay gives the same bytes).",
            format="date-time",
            pattern=RFC3339_PATTERN,
        ),
    ]
    schema_version: Annotated[
        Literal[1], msgspec.Meta(description="The version of the event contract: always 1.")
    ]


class FoulRecordedWire(VerdictWire, tag="FoulRecorded", frozen=True):
    """A player broke a rule; ``applied`` is false when the action was rejected."""

    player: Annotated[Player, msgspec.Meta(description="The offender: the player who acted.")]
    foul: Annotated[FoulKind, msgspec.Meta(description="The rule broken (RULES.md section 3).")]
    applied: Annotated[
        bool,
        msgspec.Meta(
            description="True when the action stood (draw_while_able, false_pass, "
            "pass_before_drawing); false when it was rejected and changed nothing."
        ),
    ]
    penalty: Annotated[
        int,
        msgspec.Meta(
            ge=0,
            description="The foul's points (0 if none): deducted under award scoring, added "
            "under penalty scoring.",
        ),
    ]


class PointsScoredWire(VerdictWire, tag="PointsScored", frozen=True):
    """A play scored at once from the layout's count (RULES.md section 10)."""

    player: Annotated[Player, msgspec.Meta(description="The mover.")]
    count: Annotated[int, _about("The layout's count after the play (RULES.md section 10).", 15)]
    points: Annotated[int, msgspec.Meta(gt=0, description="What the play scored.")]
    cumulative: Annotated[
        Points,
        msgspec.Meta(
            description="Player id -> score so far in the game, this play included (with "
            "teams, each player's team's score)."
        ),
    ]
    team: Annotated[
        str | UnsetType, _about("The mover's team; only when the game has teams.", "north")
    ] = UNSET
    team_cumulative: TeamPoints = UNSET


class BlockDeclaredWire(VerdictWire, tag="BlockDeclared", frozen=True):
    """The round is blocked: nobody can play and the boneyard is exhausted."""

    proposer: Annotated[
        Player,
        msgspec.Meta(
            description="The player whose legitimate pass proposed the block (under immediate "
            "confirmation: whose action closed the layout)."
        ),
    ]
    confirmed_by: Annotated[
        list[str],
        msgspec.Meta(
            description="Players in the order they passed, proposer first; "
            "empty under immediate confirmation."
        ),
    ]
    open_ends: Annotated[
        dict[str, int],
        msgspec.Meta(
            description="End -> the value it shows: left and right in line; plus up and down "
            "in spinner once the spinner is down; train id -> value for every train in trains.",
            examples=[{"left": 3, "right": 7}, {"ann": 4, "bob": 12, "mexican": 9}],
        ),
    ]
    pip_counts: PipCounts


class RoundScoredWire(VerdictWire, tag="RoundScored", frozen=True):
    """A round ended and was scored."""

    reason: Annotated[RoundEnd, msgspec.Meta(description="How the round ended.")]
    winners: Annotated[
        list[str],
        msgspec.Meta(
            description="The round's winners, in the order of play: with teams every member "
            "of every winning team; empty when nobody wins (a tie under tie: no_winner)."
        ),
    ]
    pip_counts: PipCounts
    awards: Annotated[
        Points,
        msgspec.Meta(
            description="Player id -> points this round, every player (0 if none); with teams "
            "each player's team's award. Under penalty scoring: the pips each player added."
        ),
    ]
    cumulative: Annotated[
        Points,
        msgspec.Meta(
            description="Player id -> score so far in the game, this round, play points and "
            "foul penalties included (with teams, each player's team's score)."
        ),
    ]
    tie: Annotated[
        bool,
        msgspec.Meta(
            description="True when the lowest pip count was shared (with teams: when several "
            "teams were tied, RULES.md section 5.1)."
        ),
    ]
    scoring: Annotated[
        Literal["penalty"] | UnsetType,
        _about(
            "Present under penalty scoring: awards then hold the pips each player added.",
            "penalty",
        ),
    ] = UNSET
    team_pip_counts: TeamPoints = UNSET
    team_awards: TeamPoints = UNSET
    team_cumulative: TeamPoints = UNSET
    winning_teams: Annotated[
        list[str] | UnsetType,
        _about("The winning teams, by seat of their first member; only with teams.", ["north"]),
    ] = UNSET


class GameWonWire(VerdictWire, tag="GameWon", frozen=True):
    """The game is over: its (first) winner and the final scores."""

    winner: Annotated[
        Player, msgspec.Meta(description="The (first) winner: the first in the order of play.")
    ]
    cumulative: Annotated[
        Points,
        msgspec.Meta(description="Player id -> final score (with teams, each player's team's)."),
    ]
    winners: Annotated[
        list[str] | UnsetType,
        _about(
            "Every winning player, in the order of play; only with teams, rounds or penalty "
            "scoring.",
            ["ann", "cid"],
        ),
    ] = UNSET
    winning_teams: Annotated[
        list[str] | UnsetType, _about("The winning teams; only with teams.", ["north"])
    ] = UNSET
    team_cumulative: TeamPoints = UNSET


OutputVerdict = (
    FoulRecordedWire | PointsScoredWire | BlockDeclaredWire | RoundScoredWire | GameWonWire
)
VERDICTS: tuple[type[VerdictWire], ...] = (
    FoulRecordedWire,
    PointsScoredWire,
    BlockDeclaredWire,
    RoundScoredWire,
    GameWonWire,
)
VERDICT_TYPES: tuple[str, ...] = tuple(str(cls.__struct_config__.tag) for cls in VERDICTS)
"""The verdicts' names, in the order one event's verdicts are announced (RULES.md section 7):
the one table of them (their struct tags)."""


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
    round_number: int,
    cause_event_id: str,
    cause_seq: int,
    occurred_at: str,
    index: int,
) -> OutputVerdict:
    """Wraps a domain verdict in its envelope."""
    head: tuple[str, str, int, str, int, str, Literal[1]] = (
        verdict_id(game_id, cause_seq, index),
        game_id,
        round_number,
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
        return BlockDeclaredWire(
            *head,
            verdict.proposer,
            list(verdict.confirmed_by),
            dict(verdict.open_ends),
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
            scoring=UNSET if verdict.scoring is None else "penalty",
            team_pip_counts=_optional(verdict.team_pip_counts),
            team_awards=_optional(verdict.team_awards),
            team_cumulative=_optional(verdict.team_cumulative),
            winning_teams=UNSET if verdict.winning_teams is None else list(verdict.winning_teams),
        )
    if isinstance(verdict, domain.PointsScored):
        return PointsScoredWire(
            *head,
            verdict.player,
            verdict.count,
            verdict.points,
            dict(verdict.cumulative),
            team=UNSET if verdict.team is None else verdict.team,
            team_cumulative=_optional(verdict.team_cumulative),
        )
    return GameWonWire(
        *head,
        verdict.winner,
        dict(verdict.cumulative),
        winners=UNSET if verdict.winners is None else list(verdict.winners),
        winning_teams=UNSET if verdict.winning_teams is None else list(verdict.winning_teams),
        team_cumulative=_optional(verdict.team_cumulative),
    )


def _optional(points: Mapping[str, int] | None) -> Points | UnsetType:
    """Returns a figure that only some games have, or ``UNSET`` (left out) when absent."""
    return UNSET if points is None else dict(points)


def encode_canonical(obj: object) -> bytes:
    """Serialises canonically: keys sorted, no spaces, UTF-8."""
    return msgspec.json.encode(obj, order="sorted")


_VERDICT_DECODER = msgspec.json.Decoder(OutputVerdict)


def decode_verdict(data: bytes) -> OutputVerdict:
    """Parses one verdict line (used by audits and tests)."""
    return _VERDICT_DECODER.decode(data)
