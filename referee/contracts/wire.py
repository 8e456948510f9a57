"""Input events as they travel on the wire (EVENTS.md), decoded and validated with msgspec."""

from __future__ import annotations

from dataclasses import fields
from types import MappingProxyType
from typing import Annotated, Literal, TypeVar

import msgspec
from msgspec import UNSET, UnsetType
from msgspec.structs import force_setattr

from referee.contracts.limits import MAX_INTEGER, RFC3339_PATTERN
from referee.domain import events as domain
from referee.domain.events import End
from referee.domain.fouls import FoulKind
from referee.domain.rules import (
    NO_PENALTIES,
    BlockConfirmation,
    BlockWinner,
    DoubleRule,
    DrawRule,
    DrawWhileAble,
    EngineOrder,
    Layout,
    PlayScoring,
    PointsPolicy,
    Rounding,
    Rules,
    Scoring,
    SpinnerArms,
    TiePolicy,
    default_draw,
    default_scoring,
)

ID_PATTERN = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"
"""No control character (EVENTS.md): checked by ``parse_event``, stated in the schemas."""

EventId = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=64,
        extra_json_schema={"pattern": ID_PATTERN},
        description="The backend's unique id of the event, 1 to 64 characters, no control "
        "characters: the idempotency key (the same event sent again is ignored; another event "
        "under a used id is seq_conflict).",
    ),
]
GAME_ID_PATTERN = r"^[A-Za-z0-9._:-]+$"
GameId = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=128,
        # In the schema, but checked by ``parse_event`` rather than the decoder: a game id
        # recurs in every event of its game, and a regex per event was a large share of
        # decoding (docs/design.md, "Performance choices").
        extra_json_schema={"pattern": GAME_ID_PATTERN},
        description="The game (a table, a match): 1 to 128 of A-Z a-z 0-9 . _ : -. Every "
        "event of a game carries it, and it is the Kafka key of the game's records.",
        examples=["table-42"],
    ),
]
Seq = Annotated[
    int,
    msgspec.Meta(
        ge=1,
        le=MAX_INTEGER,
        description="Position in the game's own stream: GameStarted is 1, then +1 per event, "
        "no gaps (a duplicate of an earlier seq with the same content is ignored).",
    ),
]
Timestamp = Annotated[
    str,
    msgspec.Meta(
        # Checked by ``parse_event`` (the shape, then a real date, time and offset).
        extra_json_schema={"pattern": RFC3339_PATTERN, "format": "date-time"},
        description="When it happened at the table: an RFC 3339 date-time (section 5.6) "
        "naming a real instant. Informational: the referee never reads a clock, and copies "
        "this text verbatim into the event's verdicts.",
        examples=["2026-11-30T12:00:07Z", "2026-11-30T14:00:05+01:00"],
    ),
]
PlayerId = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=64,
        extra_json_schema={"pattern": ID_PATTERN},
        description="A player id: 1 to 64 characters, no control characters.",
        examples=["ann"],
    ),
]
RoundNo = Annotated[
    int,
    msgspec.Meta(
        ge=1,
        le=MAX_INTEGER,
        description="The round the action belongs to: 1 for the first; an action for another "
        "round than the current one is rejected (wrong_round).",
    ),
]
Pip = Annotated[
    int, msgspec.Meta(ge=0, le=18, description="The pips of one half, 0 to the game's max_pip.")
]
WireTile = Annotated[
    tuple[Pip, Pip],
    msgspec.Meta(
        description="A tile [a, b]; [3, 5] and [5, 3] are the same tile.", examples=[[5, 3]]
    ),
]
SchemaVersion = Annotated[
    Literal[1], msgspec.Meta(description="The version of the event contract: always 1.")
]
Actor = Annotated[PlayerId, msgspec.Meta(description="The player who acted.")]
Penalty = Annotated[int, msgspec.Meta(ge=0, le=1000)]
TeamId = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=64,
        extra_json_schema={"pattern": ID_PATTERN},
        description="A team id: 1 to 64 characters, no control characters.",
    ),
]


_T = TypeVar("_T")


def _option(description: str) -> msgspec.Meta:
    return msgspec.Meta(description=description)


SHARED_RULES_LIMIT = 256
"""How many distinct rule sets ``shared_rules`` keeps; rules past it are not shared."""

_RULE_FIELDS = tuple(f.name for f in fields(Rules) if f.name != "foul_penalty")
_shared_rules: dict[tuple[object, ...], Rules] = {}


def shared_rules(rules: Rules) -> Rules:
    """Returns the one shared object equal to ``rules`` (``rules`` itself the first time).

    Rules are immutable, so games of equal rules may hold one object: the open games of one
    rule set hold one ``Rules`` rather than one each (docs/benchmarks.md, "Peak memory").
    The table is bounded: once ``SHARED_RULES_LIMIT`` rule sets are kept, others are returned
    as they are, so a stream of ever-different rules costs a lookup each and no memory.
    """
    key = (*(getattr(rules, name) for name in _RULE_FIELDS), frozenset(rules.foul_penalty.items()))
    kept = _shared_rules.get(key)
    if kept is not None:
        return kept
    if len(_shared_rules) < SHARED_RULES_LIMIT:
        _shared_rules[key] = rules
    return rules


class RulesWire(msgspec.Struct, forbid_unknown_fields=True, frozen=True, gc=False):
    """The rule options of RULES.md; an absent option takes its default.

    The options added in edition 2 are ``UNSET`` when absent, so an edition-1 ``GameStarted``
    encodes (and fingerprints) exactly as before, and ``draw`` stays ``UNSET`` when absent in
    a trains game, whose default differs (``to_domain`` resolves both).
    """

    max_pip: Annotated[
        Literal[6, 9, 12, 15, 18],
        _option("The set: double-N holds every tile [a, b] with 0 <= a <= b <= N. Default 6."),
    ] = 6
    draw: Annotated[
        DrawRule | UnsetType,
        _option(
            "When a player who cannot play draws (RULES.md section 2). Default until_playable; "
            "once when layout is trains."
        ),
    ] = UNSET
    draw_while_able: Annotated[
        DrawWhileAble,
        _option("Whether drawing while holding a playable tile is a foul. Default allowed."),
    ] = DrawWhileAble.ALLOWED
    block_confirmation: Annotated[
        BlockConfirmation,
        _option(
            "How a blocked round is confirmed (RULES.md section 4): a full round of legitimate "
            "passes, or at once. Default full_round; immediate is not allowed with trains."
        ),
    ] = BlockConfirmation.FULL_ROUND
    block_points: Annotated[
        PointsPolicy,
        _option(
            "What the winners of a blocked round score (RULES.md section 5.1). Default others."
        ),
    ] = PointsPolicy.OTHERS
    domino_points: Annotated[
        PointsPolicy,
        _option("What the winner of a round won by domino scores. Default others."),
    ] = PointsPolicy.OTHERS
    tie: Annotated[
        TiePolicy,
        _option("Who wins a blocked round when several teams qualify. Default no_winner."),
    ] = TiePolicy.NO_WINNER
    rounding: Annotated[Rounding, _option("How each award is rounded, last. Default none.")] = (
        Rounding.NONE
    )
    double_blank: Annotated[
        int,
        msgspec.Meta(
            ge=0,
            le=100,
            description="The pips the double-blank counts in a pip count (not in a layout's "
            "count). Default 0; some rule sets use 25 or 50.",
        ),
    ] = 0
    foul_penalty: Annotated[
        dict[FoulKind, Penalty],
        msgspec.Meta(
            description="Foul kind -> its points, 0 to 1000 (absent kinds: 0): deducted from "
            "the offender's (team's) score under award scoring, added under penalty scoring. "
            "Default {}.",
            examples=[{"false_pass": 10}],
        ),
    ] = msgspec.field(default_factory=dict)
    target_score: Annotated[
        Annotated[int, msgspec.Meta(ge=1, le=MAX_INTEGER)] | None,
        _option(
            "When set, the game is won by the first team whose cumulative score reaches it "
            "after a round is scored (RULES.md section 5.2). Default none."
        ),
    ] = None
    layout: Annotated[
        Layout | UnsetType,
        _option("Where tiles are played (RULES.md section 1). Default line."),
    ] = UNSET
    spinner_arms: Annotated[
        SpinnerArms | UnsetType,
        _option(
            "When up and down open on the spinner; only with layout spinner. Default after_sides."
        ),
    ] = UNSET
    mexican_train: Annotated[
        bool | UnsetType,
        _option(
            "Whether there is a public train, id mexican; only with layout trains. Default true."
        ),
    ] = UNSET
    double_rule: Annotated[
        DoubleRule | UnsetType,
        _option(
            "How long a double on a train stays pending; only with layout trains. Default satisfy."
        ),
    ] = UNSET
    engine_order: Annotated[
        EngineOrder | UnsetType,
        _option("Which double may be a round's engine; only with layout trains. Default free."),
    ] = UNSET
    boneyard_reserve: Annotated[
        Annotated[int, msgspec.Meta(ge=0, le=2)] | UnsetType,
        _option("Tiles never drawn: the boneyard is exhausted at this many. Default 0."),
    ] = UNSET
    block_winner: Annotated[
        BlockWinner | UnsetType,
        _option("Which team wins a blocked round. Default lowest_team."),
    ] = UNSET
    scoring: Annotated[
        Scoring | UnsetType,
        _option("What a round's score is. Default award; penalty when layout is trains."),
    ] = UNSET
    rounds: Annotated[
        Annotated[int, msgspec.Meta(ge=1, le=100)] | UnsetType | None,
        _option("When set, the game ends once this round is scored. Default none."),
    ] = UNSET
    play_scoring: Annotated[
        PlayScoring | UnsetType,
        _option(
            "Whether a play scores from the layout's count (RULES.md section 10); only "
            "with layout line or spinner. Default none."
        ),
    ] = UNSET

    def __post_init__(self) -> None:
        # An absent draw is edition 1's default wherever that is the default, so that an
        # edition-1 GameStarted re-encodes (and fingerprints) exactly as it always did.
        if self.draw is UNSET and self.layout is not Layout.TRAINS:
            force_setattr(self, "draw", DrawRule.UNTIL_PLAYABLE)

    @classmethod
    def from_domain(cls, rules: Rules) -> RulesWire:
        """Returns the domain's rules as their wire object: every edition-1 option spelled
        out, an edition-2 option only where it is not what its absence would give."""
        layout = rules.layout
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
            layout=_unless(layout, Layout.LINE),
            spinner_arms=_unless(rules.spinner_arms, SpinnerArms.AFTER_SIDES),
            mexican_train=_unless(rules.mexican_train, True),  # noqa: FBT003
            double_rule=_unless(rules.double_rule, DoubleRule.SATISFY),
            engine_order=_unless(rules.engine_order, EngineOrder.FREE),
            boneyard_reserve=_unless(rules.boneyard_reserve, 0),
            block_winner=_unless(rules.block_winner, BlockWinner.LOWEST_TEAM),
            scoring=_unless(rules.scoring, default_scoring(layout)),
            rounds=_unless(rules.rounds, None),
            play_scoring=_unless(rules.play_scoring, PlayScoring.NONE),
        )

    def to_domain(self) -> Rules:
        """Returns the domain's rules: absent options at their defaults (by layout).

        Equal rules come back as one shared object (``shared_rules``): a platform runs a few
        rule sets over many games, and each game holds its rules for as long as it is open.
        """
        layout = _given(self.layout, Layout.LINE)
        rules = Rules(
            max_pip=self.max_pip,
            draw=_given(self.draw, default_draw(layout)),
            draw_while_able=self.draw_while_able,
            block_confirmation=self.block_confirmation,
            block_points=self.block_points,
            domino_points=self.domino_points,
            tie=self.tie,
            rounding=self.rounding,
            double_blank=self.double_blank,
            foul_penalty=(
                MappingProxyType(dict(self.foul_penalty)) if self.foul_penalty else NO_PENALTIES
            ),
            target_score=self.target_score,
            layout=layout,
            spinner_arms=_given(self.spinner_arms, SpinnerArms.AFTER_SIDES),
            mexican_train=_given(self.mexican_train, True),  # noqa: FBT003
            double_rule=_given(self.double_rule, DoubleRule.SATISFY),
            engine_order=_given(self.engine_order, EngineOrder.FREE),
            boneyard_reserve=_given(self.boneyard_reserve, 0),
            block_winner=_given(self.block_winner, BlockWinner.LOWEST_TEAM),
            scoring=_given(self.scoring, default_scoring(layout)),
            rounds=_given(self.rounds, None),
            play_scoring=_given(self.play_scoring, PlayScoring.NONE),
        )
        return shared_rules(rules)


def _given(value: _T | UnsetType, default: _T) -> _T:
    """Returns an option's value, or its default when it is absent."""
    return default if isinstance(value, UnsetType) else value


def _unless(value: _T, default: _T) -> _T | UnsetType:
    """Returns an option's value, or ``UNSET`` (left out) when it is what absence gives."""
    return UNSET if value == default else value


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
    schema_version: SchemaVersion

    @property
    def round_number(self) -> int:
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
    rules: Annotated[
        RulesWire,
        msgspec.Meta(
            description="The game's rule options (RULES.md section 6); an absent option takes "
            "its default, so {} (or no rules at all) plays every default. An unknown option, "
            "or one the layout or scoring does not use, is a schema_violation."
        ),
    ] = msgspec.field(default_factory=RulesWire)
    teams: Annotated[
        dict[TeamId, list[PlayerId]] | UnsetType | None,
        msgspec.Meta(
            description="Partnerships (RULES.md section 9): team id -> its players. At least "
            "2 teams of one size, every player in exactly one, partners alternating around "
            "the table. Absent or null: every player is a team of one."
        ),
    ] = UNSET

    def to_domain(self) -> domain.GameStarted:
        """Returns the event as the judge sees it."""
        teams = self.teams
        return domain.GameStarted(
            tuple(self.players),
            self.rules.to_domain(),
            None if teams is UNSET or teams is None else {t: tuple(m) for t, m in teams.items()},
        )


class RoundStartedWire(WireEvent, tag="RoundStarted", frozen=True):
    """A round was dealt: every hand, the boneyard, and the leader."""

    round: Annotated[
        RoundNo,
        msgspec.Meta(
            description="The round dealt: 1 for the first, then +1 after each scored one."
        ),
    ]
    hands: Annotated[
        dict[PlayerId, list[WireTile]],
        msgspec.Meta(
            description="Player id -> the tiles dealt to them: every player of the game, no "
            "hand empty, no tile twice across hands, boneyard and engine (else bad_deal)."
        ),
    ]
    boneyard: Annotated[
        list[WireTile],
        msgspec.Meta(
            description="The tiles that may be drawn, empty in a draw: none game. Tiles of the "
            "set in no hand, not here and not the engine are sleeping: out of play."
        ),
    ]
    leader: Annotated[PlayerId, msgspec.Meta(description="The player who acts first.")]
    engine: Annotated[
        WireTile | UnsetType | None,
        msgspec.Meta(
            description="The centre double, present exactly when the layout is trains "
            "(RULES.md section 8.2)."
        ),
    ] = UNSET

    @property
    def round_number(self) -> int:
        """Returns the round the event belongs to."""
        return self.round

    def to_domain(self) -> domain.RoundStarted:
        """Returns the event as the judge sees it."""
        engine = self.engine
        return domain.RoundStarted(
            self.round,
            {p: tuple(ts) for p, ts in self.hands.items()},
            tuple(self.boneyard),
            self.leader,
            None if engine is UNSET else engine,
        )


class TilePlayedWire(WireEvent, tag="TilePlayed", frozen=True):
    """A player put a tile on a place of the layout: an end, or a train."""

    round: RoundNo
    player: Actor
    tile: Annotated[
        WireTile,
        msgspec.Meta(
            description="The tile played, from the player's hand (else the foul "
            "tile_not_in_hand: rejected)."
        ),
    ]
    end: Annotated[
        End | None,
        msgspec.Meta(
            description="The end played on, in a line or spinner: left, right, or up and down "
            "once the spinner's arms are open. Omitted or null for the first tile of a round; "
            "an end the layout does not have is a foul (end_not_available), not invalid input."
        ),
    ] = None
    train: Annotated[
        str | UnsetType | None,
        msgspec.Meta(
            description="The train, in trains: a player id or mexican. A place the layout "
            "does not have is a foul (end_not_available), not invalid input."
        ),
    ] = UNSET

    @property
    def round_number(self) -> int:
        """Returns the round the event belongs to."""
        return self.round

    def to_domain(self) -> domain.TilePlayed:
        """Returns the event as the judge sees it."""
        train = self.train
        return domain.tile_played(
            self.round, self.player, self.tile, self.end, None if train is UNSET else train
        )


class TileDrawnWire(WireEvent, tag="TileDrawn", frozen=True):
    """A player drew a tile from the boneyard."""

    round: RoundNo
    player: Actor
    tile: Annotated[
        WireTile,
        msgspec.Meta(
            description="The tile drawn, from the boneyard (else the foul "
            "tile_not_in_boneyard: rejected)."
        ),
    ]

    @property
    def round_number(self) -> int:
        """Returns the round the event belongs to."""
        return self.round

    def to_domain(self) -> domain.TileDrawn:
        """Returns the event as the judge sees it."""
        return domain.tile_drawn(self.round, self.player, self.tile)


class PassedWire(WireEvent, tag="Passed", frozen=True):
    """A player passed their turn."""

    round: RoundNo
    player: Actor

    @property
    def round_number(self) -> int:
        """Returns the round the event belongs to."""
        return self.round

    def to_domain(self) -> domain.Passed:
        """Returns the event as the judge sees it."""
        return domain.passed(self.round, self.player)


InputEvent = GameStartedWire | RoundStartedWire | TilePlayedWire | TileDrawnWire | PassedWire
INPUT_EVENTS: tuple[type[WireEvent], ...] = (
    GameStartedWire,
    RoundStartedWire,
    TilePlayedWire,
    TileDrawnWire,
    PassedWire,
)
EVENT_TYPES: tuple[str, ...] = tuple(str(cls.__struct_config__.tag) for cls in INPUT_EVENTS)
"""The input events' names, in EVENTS.md's order: the one table of them (their struct tags)."""


class EnvelopeProbe(msgspec.Struct):
    """The place of an event in its game, read leniently from input that failed validation."""

    game_id: object = None
    seq: object = None
    event_id: object = None
