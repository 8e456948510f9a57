"""The wire actions' ``to_domain`` builds the domain events through the events' own builders
(``tile_played`` and the others: once per input event, cheaper than the named tuples'
generated ``__new__``): held here, field by field and by name, to the plain keyword
constructors, so a field put in the wrong place fails."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from referee.contracts.wire import InputEvent, PassedWire, TileDrawnWire, TilePlayedWire
from referee.domain.events import End, Passed, TileDrawn, TilePlayed

rounds = st.integers(min_value=1, max_value=2**53 - 1)
players = st.text(alphabet="abcdefgh-_", min_size=1, max_size=12)
tiles = st.tuples(st.integers(0, 18), st.integers(0, 18))
ends = st.sampled_from([None, *End])
trains = st.none() | players | st.just("mexican")
_DECODE = msgspec.json.Decoder(InputEvent).decode


def wire(event_type: str, **fields: object) -> InputEvent:
    doc = {
        "type": event_type,
        "game_id": "g-1",
        "seq": 3,
        "event_id": "e-3",
        "occurred_at": "2026-12-01T12:00:00Z",
        "schema_version": 1,
        **{k: v for k, v in fields.items() if v is not None},
    }
    return _DECODE(msgspec.json.encode(doc))


@given(rounds, players, tiles, ends, trains)
def test_a_play_converts_field_by_field(
    round_: int, player: str, tile: tuple[int, int], end: End | None, train: str | None
) -> None:
    event = wire(
        "TilePlayed",
        round=round_,
        player=player,
        tile=list(tile),
        end=None if end is None else end.value,
        train=train,
    )
    assert isinstance(event, TilePlayedWire)
    converted = event.to_domain()
    expected = TilePlayed(round=round_, player=player, tile=tile, end=end, train=train)
    assert converted == expected
    assert converted._asdict() == expected._asdict()
    assert type(converted) is TilePlayed


@given(rounds, players, tiles)
def test_a_draw_converts_field_by_field(round_: int, player: str, tile: tuple[int, int]) -> None:
    event = wire("TileDrawn", round=round_, player=player, tile=list(tile))
    assert isinstance(event, TileDrawnWire)
    converted = event.to_domain()
    assert converted._asdict() == TileDrawn(round=round_, player=player, tile=tile)._asdict()
    assert type(converted) is TileDrawn


@given(rounds, players)
def test_a_pass_converts_field_by_field(round_: int, player: str) -> None:
    event = wire("Passed", round=round_, player=player)
    assert isinstance(event, PassedWire)
    converted = event.to_domain()
    assert converted._asdict() == Passed(round=round_, player=player)._asdict()
    assert type(converted) is Passed
