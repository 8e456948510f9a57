"""Input events as they travel on the wire (EVENTS.md), decoded and validated with msgspec."""

from __future__ import annotations

from types import MappingProxyType
from typing import Annotated, Literal

import msgspec

from referee.contracts.limits import MAX_INTEGER, RFC3339_PATTERN
from referee.domain import events as domain
from referee.domain.events import End
from referee.domain.fouls import FoulKind
from referee.domain.rules import (
    BlockConfirmation,
    DrawRule,
    DrawWhileAble,
    PointsPolicy,
    Rounding,
    Rules,
    TiePolicy,
)

ID_PATTERN = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"
"""No control character (EVENTS.md): checked by ``parse_event``, stated in the schemas."""

EventId = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=64,
        extra_json_schema={"pattern": ID_PATTERN},
        description="Unique id; the idempotency key. No control characters.",
    ),
]
GAME_ID_PATTERN = r"^[A-Za-z0-9._:-]+$"
GameId = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=128,
        # In the schema, but checked by ``parse_event`` rather than the decoder: a game id
        # recurs in every event of its game, and a regex per event cost 30% of decoding.
        extra_json_schema={"pattern": GAME_ID_PATTERN},
        description="The game (a table, a match).",
    ),
]
Seq = Annotated[
    int,
    msgspec.Meta(
        ge=1, le=MAX_INTEGER, description="Position in the game's stream: GameStarted is 1."
    ),
]
Timestamp = Annotated[
    str,
    msgspec.Meta(
        # Checked by ``parse_event`` (the shape, then a real date, time and offset).
        extra_json_schema={"pattern": RFC3339_PATTERN, "format": "date-time"},
        description="RFC 3339 time at the table (informational); copied into verdicts.",
    ),
]
PlayerId = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=64,
        extra_json_schema={"pattern": ID_PATTERN},
        description="A player id. No control characters.",
    ),
]
RoundNo = Annotated[
    int, msgspec.Meta(ge=1, le=MAX_INTEGER, description="Round number: 1 for the first.")
]
Pip = Annotated[int, msgspec.Meta(ge=0, le=18)]
WireTile = Annotated[
    tuple[Pip, Pip],
    msgspec.Meta(description="A tile [a, b]; [3, 5] and [5, 3] are the same tile."),
]
Penalty = Annotated[int, msgspec.Meta(ge=0, le=1000)]

_new = tuple.__new__
"""Builds a domain event (a named tuple) from all its fields, without its generated
``__new__``: the actions are converted once per input event."""


class RulesWire(msgspec.Struct, forbid_unknown_fields=True, frozen=True, gc=False):
    """The rule options of RULES.md; an absent option takes its default."""

    max_pip: Literal[6, 9, 12, 15, 18] = 6
    draw: DrawRule = DrawRule.UNTIL_PLAYABLE
    draw_while_able: DrawWhileAble = DrawWhileAble.ALLOWED
    block_confirmation: BlockConfirmation = BlockConfirmation.FULL_ROUND
    block_points: PointsPolicy = PointsPolicy.OTHERS
    domino_points: PointsPolicy = PointsPolicy.OTHERS
    tie: TiePolicy = TiePolicy.NO_WINNER
    rounding: Rounding = Rounding.NONE
    double_blank: Annotated[int, msgspec.Meta(ge=0, le=100)] = 0
    foul_penalty: dict[FoulKind, Penalty] = msgspec.field(default_factory=dict)
    target_score: Annotated[int, msgspec.Meta(ge=1, le=MAX_INTEGER)] | None = None

    @classmethod
    def from_domain(cls, rules: Rules) -> RulesWire:
        """Returns the domain's rules as their wire object, every option spelled out."""
        return cls(
            max_pip=rules.max_pip,  # type: ignore[arg-type]
            draw=rules.draw,
            draw_while_able=rules.draw_while_able,
            block_confirmation=rules.block_confirmation,
            block_points=rules.block_points,
            domino_points=rules.domino_points,
            tie=rules.tie,
            rounding=rules.rounding,
            double_blank=rules.double_blank,
            foul_penalty=dict(rules.foul_penalty),
            target_score=rules.target_score,
        )

    def to_domain(self) -> Rules:
        """Returns the domain's rules."""
        return Rules(
            max_pip=self.max_pip,
            draw=self.draw,
            draw_while_able=self.draw_while_able,
            block_confirmation=self.block_confirmation,
            block_points=self.block_points,
            domino_points=self.domino_points,
            tie=self.tie,
            rounding=self.rounding,
            double_blank=self.double_blank,
            foul_penalty=MappingProxyType(dict(self.foul_penalty)),
            target_score=self.target_score,
        )


class WireEvent(msgspec.Struct, tag_field="type", frozen=True, gc=False):
    """The fields every input event carries.

    Events hold plain data only and can never be part of a reference cycle, so the garbage
    collector does not track them (``gc=False``): one per input record, they are then cheaper
    to make and to free.
    """

    event_id: EventId
    game_id: GameId
    seq: Seq
    occurred_at: Timestamp
    schema_version: Literal[1]

    @property
    def round_no(self) -> int:
        """Returns the round the event belongs to (0 before any round)."""
        return 0

    def to_domain(self) -> domain.GameEvent:
        """Returns the event as the judge sees it."""
        raise NotImplementedError


class GameStartedWire(WireEvent, tag="GameStarted", frozen=True):
    """A game began: players in clockwise seating order, and its rules."""

    players: Annotated[
        list[PlayerId],
        msgspec.Meta(
            min_length=2,
            max_length=10,
            description="2 to 10 distinct player ids, in clockwise seating order.",
            extra_json_schema={"uniqueItems": True},
        ),
    ]
    rules: RulesWire = msgspec.field(default_factory=RulesWire)

    def to_domain(self) -> domain.GameStarted:
        """Returns the event as the judge sees it."""
        return domain.GameStarted(tuple(self.players), self.rules.to_domain())


class RoundStartedWire(WireEvent, tag="RoundStarted", frozen=True):
    """A round was dealt: every hand, the boneyard, and the leader."""

    round: RoundNo
    hands: dict[PlayerId, list[WireTile]]
    boneyard: list[WireTile]
    leader: PlayerId

    @property
    def round_no(self) -> int:
        """Returns the round the event belongs to."""
        return self.round

    def to_domain(self) -> domain.RoundStarted:
        """Returns the event as the judge sees it."""
        return domain.RoundStarted(
            self.round,
            {p: tuple(ts) for p, ts in self.hands.items()},
            tuple(self.boneyard),
            self.leader,
        )


class TilePlayedWire(WireEvent, tag="TilePlayed", frozen=True):
    """A player put a tile on an end of the line."""

    round: RoundNo
    player: PlayerId
    tile: WireTile
    end: End | None = None

    @property
    def round_no(self) -> int:
        """Returns the round the event belongs to."""
        return self.round

    def to_domain(self) -> domain.TilePlayed:
        """Returns the event as the judge sees it."""
        return _new(domain.TilePlayed, (self.round, self.player, self.tile, self.end))


class TileDrawnWire(WireEvent, tag="TileDrawn", frozen=True):
    """A player drew a tile from the boneyard."""

    round: RoundNo
    player: PlayerId
    tile: WireTile

    @property
    def round_no(self) -> int:
        """Returns the round the event belongs to."""
        return self.round

    def to_domain(self) -> domain.TileDrawn:
        """Returns the event as the judge sees it."""
        return _new(domain.TileDrawn, (self.round, self.player, self.tile))


class PassedWire(WireEvent, tag="Passed", frozen=True):
    """A player passed their turn."""

    round: RoundNo
    player: PlayerId

    @property
    def round_no(self) -> int:
        """Returns the round the event belongs to."""
        return self.round

    def to_domain(self) -> domain.Passed:
        """Returns the event as the judge sees it."""
        return _new(domain.Passed, (self.round, self.player))


InputEvent = GameStartedWire | RoundStartedWire | TilePlayedWire | TileDrawnWire | PassedWire
INPUT_EVENTS: tuple[type[WireEvent], ...] = (
    GameStartedWire,
    RoundStartedWire,
    TilePlayedWire,
    TileDrawnWire,
    PassedWire,
)
EVENT_TYPES = frozenset(("GameStarted", "RoundStarted", "TilePlayed", "TileDrawn", "Passed"))


class EnvelopeProbe(msgspec.Struct):
    """The place of an event in its game, read leniently from input that failed validation."""

    game_id: object = None
    seq: object = None
    event_id: object = None
    type: object = None
