"""A game's state as stored in the projection: plain JSON, and back, losslessly."""

from __future__ import annotations

from typing import Any

import msgspec

from referee.contracts.wire import RulesWire
from referee.domain.state import GameState, RoundState
from referee.domain.tiles import mask_of, sorted_tiles, tile

_encode = msgspec.json.Encoder(order="sorted").encode
_decode = msgspec.json.Decoder().decode


def _round_to_json(rnd: RoundState) -> dict[str, Any]:
    return {
        "number": rnd.number,
        "hands": [sorted_tiles(h) for h in rnd.hand_masks],
        "boneyard": sorted_tiles(rnd.boneyard_mask),
        "left": rnd.left,
        "right": rnd.right,
        "turn": rnd.turn,
        "drew": rnd.drew,
        "chain": list(rnd.chain),
        "ended": rnd.ended,
    }


def encode_state(game: GameState) -> bytes:
    """Returns the game's state as canonical JSON."""
    return _encode(
        {
            "players": list(game.players),
            "rules": RulesWire.from_domain(game.rules),
            "scores": list(game.scores),
            "round": None if game.round is None else _round_to_json(game.round),
            "winner": game.winner,
        }
    )


def _mask(items: list[list[int]]) -> int:
    return mask_of(tile(a, b) for a, b in items)


def decode_state(data: bytes | str) -> GameState:
    """Returns the game's state from its stored JSON."""
    doc = _decode(data)
    players = tuple(doc["players"])
    rules = msgspec.convert(doc["rules"], RulesWire).to_domain()
    r = doc["round"]
    rnd = None
    if r is not None:
        rnd = RoundState(
            number=r["number"],
            hand_masks=tuple(_mask(h) for h in r["hands"]),
            boneyard_mask=_mask(r["boneyard"]),
            left=r["left"],
            right=r["right"],
            turn=r["turn"],
            drew=r["drew"],
            chain=tuple(r["chain"]),
            ended=r["ended"],
        )
    return GameState(
        players=players,
        rules=rules,
        seats={p: i for i, p in enumerate(players)},
        scores=tuple(doc["scores"]),
        round=rnd,
        winner=doc["winner"],
    )
