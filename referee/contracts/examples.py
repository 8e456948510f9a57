"""Real messages for the schemas: three short games as the referee hears and judges them.

A scenario is an input log as it arrives (on a Kafka partition, or as a log file) with what
the referee answers: every verdict, canonical, byte for byte, and every rejection. They are
written out here, not computed (the contracts do not run the referee), and
``tests/unit/contracts/test_examples.py`` referees each log and requires exactly these
answers: an example cannot say what the rules do not. The schemas' examples are taken from
them (``examples``), so every id, seq and time in them belongs to one coherent game.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from referee.contracts.rejection import FileSource, KafkaSource, Source, raw_text, rejection_of
from referee.contracts.verdicts import VERDICT_TYPES, encode_canonical
from referee.contracts.wire import EVENT_TYPES
from referee.domain.errors import RejectionReason

VERDICT_ORDER = VERDICT_TYPES
"""The verdict types in the order one input event gives them (RULES.md section 7)."""


@dataclass(frozen=True, slots=True)
class Rejected:
    """What the referee says of a record it cannot judge, but for what the record shows.

    ``raw``, ``raw_encoding`` and ``source`` of the ``EventRejected`` are the record's own
    bytes and place, filled in by ``Scenario.rejections``.
    """

    record: int
    reason: str
    detail: str
    game_id: str | None
    seq: int | None
    event_id: str | None


@dataclass(frozen=True, slots=True)
class Scenario:
    """A short game: its records in arrival order, and the referee's answers to them."""

    game_id: str
    story: str
    first: Source
    """Where ``records[0]`` arrived; each next record is at the next offset or line."""
    partitions: int
    """The input topic's partition count that put the game on ``first``'s partition (Kafka)."""
    records: tuple[bytes, ...]
    verdicts: tuple[bytes, ...]
    rejected: tuple[Rejected, ...]

    def source_of(self, index: int) -> Source:
        """Returns where the ``index``-th record (from 0) arrived."""
        first = self.first
        if isinstance(first, KafkaSource):
            return KafkaSource(first.topic, first.partition, first.offset + index)
        return FileSource(first.file, first.line + index)

    def rejections(self) -> list[dict[str, Any]]:
        """Returns the ``EventRejected`` of every record the referee cannot judge, in order."""
        out = []
        for r in self.rejected:
            raw, encoding = raw_text(self.records[r.record])
            out.append(
                {
                    "type": "EventRejected",
                    "reason": r.reason,
                    "detail": r.detail,
                    "raw": raw,
                    "raw_encoding": encoding,
                    "source": json.loads(encode_canonical(self.source_of(r.record))),
                    "game_id": r.game_id,
                    "seq": r.seq,
                    "event_id": r.event_id,
                    "schema_version": 1,
                }
            )
        return out

    def events(self) -> list[dict[str, Any]]:
        """Returns the input events the referee judged (every record it did not reject)."""
        rejected = {r.record for r in self.rejected}
        return [json.loads(raw) for i, raw in enumerate(self.records) if i not in rejected]


def _lines(text: str) -> tuple[bytes, ...]:
    return tuple(line.encode() for line in text.split("\n") if line.strip())


TABLE_42 = Scenario(
    game_id="table-42",
    story="A line game of double-six under edition-1 options, on Kafka: a play out of turn "
    "(rejected), a false pass with a penalty, a round won by domino, a blocked round that "
    "reaches the target score; a record that is not UTF-8 and one that skips ahead.",
    first=KafkaSource("domino.game-events", 7, 1040),
    partitions=8,
    records=(
        *_lines(
            """
{"event_id":"t42-0001","type":"GameStarted","game_id":"table-42","seq":1,"occurred_at":"2026-11-30T12:00:01Z","schema_version":1,"players":["ann","bob","cid"],"rules":{"target_score":65,"rounding":"nearest_5","double_blank":25,"foul_penalty":{"false_pass":10}}}
{"event_id":"t42-0002","type":"RoundStarted","game_id":"table-42","seq":2,"occurred_at":"2026-11-30T12:00:02Z","schema_version":1,"round":1,"hands":{"ann":[[3,3],[3,6]],"bob":[[3,5],[4,4],[0,3]],"cid":[[1,2],[2,4]]},"boneyard":[[0,1],[2,3]],"leader":"ann"}
{"event_id":"t42-0003","type":"TilePlayed","game_id":"table-42","seq":3,"occurred_at":"2026-11-30T12:00:03Z","schema_version":1,"round":1,"player":"ann","tile":[3,3]}
{"event_id":"t42-0004","type":"TilePlayed","game_id":"table-42","seq":4,"occurred_at":"2026-11-30T12:00:04Z","schema_version":1,"round":1,"player":"cid","tile":[2,4],"end":"right"}
{"event_id":"t42-0005","type":"Passed","game_id":"table-42","seq":5,"occurred_at":"2026-11-30T12:00:05Z","schema_version":1,"round":1,"player":"bob"}
"""
        ),
        # a record with a byte that is not UTF-8 (a backend's encoding bug): not JSON
        (
            b'{"event_id":"t42-0006","type":"TileDrawn","game_id":"table-42",'
            b'"seq":6,"player":"cid\xff"}'
        ),
        *_lines(
            """
{"event_id":"t42-0006","type":"TileDrawn","game_id":"table-42","seq":6,"occurred_at":"2026-11-30T12:00:06Z","schema_version":1,"round":1,"player":"cid","tile":[0,1]}
{"event_id":"t42-0007","type":"TileDrawn","game_id":"table-42","seq":7,"occurred_at":"2026-11-30T12:00:07Z","schema_version":1,"round":1,"player":"cid","tile":[2,3]}
{"event_id":"t42-0008","type":"TilePlayed","game_id":"table-42","seq":8,"occurred_at":"2026-11-30T12:00:08Z","schema_version":1,"round":1,"player":"cid","tile":[3,2],"end":"right"}
{"event_id":"t42-0009","type":"TilePlayed","game_id":"table-42","seq":9,"occurred_at":"2026-11-30T12:00:09Z","schema_version":1,"round":1,"player":"ann","tile":[3,6],"end":"left"}
{"event_id":"t42-0099","type":"Passed","game_id":"table-42","seq":99,"occurred_at":"2026-11-30T12:00:09Z","schema_version":1,"round":1,"player":"bob"}
{"event_id":"t42-0010","type":"RoundStarted","game_id":"table-42","seq":10,"occurred_at":"2026-11-30T12:00:10Z","schema_version":1,"round":2,"hands":{"ann":[[3,4],[1,1],[0,2]],"bob":[[6,6],[0,0]],"cid":[[4,6],[1,2],[1,4]]},"boneyard":[],"leader":"bob"}
{"event_id":"t42-0011","type":"TilePlayed","game_id":"table-42","seq":11,"occurred_at":"2026-11-30T12:00:11Z","schema_version":1,"round":2,"player":"bob","tile":[6,6]}
{"event_id":"t42-0012","type":"TilePlayed","game_id":"table-42","seq":12,"occurred_at":"2026-11-30T12:00:12Z","schema_version":1,"round":2,"player":"cid","tile":[6,4],"end":"right"}
{"event_id":"t42-0013","type":"TilePlayed","game_id":"table-42","seq":13,"occurred_at":"2026-11-30T12:00:13Z","schema_version":1,"round":2,"player":"ann","tile":[4,3],"end":"right"}
{"event_id":"t42-0014","type":"Passed","game_id":"table-42","seq":14,"occurred_at":"2026-11-30T12:00:14Z","schema_version":1,"round":2,"player":"bob"}
{"event_id":"t42-0015","type":"Passed","game_id":"table-42","seq":15,"occurred_at":"2026-11-30T12:00:15Z","schema_version":1,"round":2,"player":"cid"}
{"event_id":"t42-0016","type":"Passed","game_id":"table-42","seq":16,"occurred_at":"2026-11-30T12:00:16Z","schema_version":1,"round":2,"player":"ann"}
"""
        ),
    ),
    verdicts=_lines(
        """
{"applied":false,"cause_event_id":"t42-0004","cause_seq":4,"foul":"out_of_turn","game_id":"table-42","occurred_at":"2026-11-30T12:00:04Z","penalty":0,"player":"cid","round":1,"schema_version":1,"type":"FoulRecorded","verdict_id":"a126ef65-1c5a-56df-9a98-bae9fafd452c"}
{"applied":true,"cause_event_id":"t42-0005","cause_seq":5,"foul":"false_pass","game_id":"table-42","occurred_at":"2026-11-30T12:00:05Z","penalty":10,"player":"bob","round":1,"schema_version":1,"type":"FoulRecorded","verdict_id":"dce2584d-5f35-54b4-a487-266d6f2abecc"}
{"awards":{"ann":30,"bob":0,"cid":0},"cause_event_id":"t42-0009","cause_seq":9,"cumulative":{"ann":30,"bob":-10,"cid":0},"game_id":"table-42","occurred_at":"2026-11-30T12:00:09Z","pip_counts":{"ann":0,"bob":19,"cid":10},"reason":"domino","round":1,"schema_version":1,"tie":false,"type":"RoundScored","verdict_id":"f9e99ecc-9bc8-5397-9182-c5e42e26f87e","winners":["ann"]}
{"cause_event_id":"t42-0016","cause_seq":16,"confirmed_by":["bob","cid","ann"],"game_id":"table-42","occurred_at":"2026-11-30T12:00:16Z","open_ends":{"left":6,"right":3},"pip_counts":{"ann":4,"bob":25,"cid":8},"proposer":"bob","round":2,"schema_version":1,"type":"BlockDeclared","verdict_id":"3befd375-3f5a-581a-837d-2ec1572807a6"}
{"awards":{"ann":35,"bob":0,"cid":0},"cause_event_id":"t42-0016","cause_seq":16,"cumulative":{"ann":65,"bob":-10,"cid":0},"game_id":"table-42","occurred_at":"2026-11-30T12:00:16Z","pip_counts":{"ann":4,"bob":25,"cid":8},"reason":"blocked","round":2,"schema_version":1,"tie":false,"type":"RoundScored","verdict_id":"845a8558-8673-5375-8335-8dd35e5bbf5d","winners":["ann"]}
{"cause_event_id":"t42-0016","cause_seq":16,"cumulative":{"ann":65,"bob":-10,"cid":0},"game_id":"table-42","occurred_at":"2026-11-30T12:00:16Z","round":2,"schema_version":1,"type":"GameWon","verdict_id":"8224366e-c46e-5871-bf80-74129e528141","winner":"ann"}
"""
    ),
    rejected=(
        Rejected(
            5, "malformed_json", "not valid JSON: Invalid UTF-8 encoded string", None, None, None
        ),
        Rejected(
            10,
            "seq_gap",
            "seq 99 of game 'table-42' skips ahead; the next expected seq is 10",
            "table-42",
            99,
            "t42-0099",
        ),
    ),
)

TABLE_77 = Scenario(
    game_id="table-77",
    story="Mexican Train on double-twelve, two rounds, engines in descending order, penalty "
    "scoring (the trains default), on Kafka: a round won by domino, a blocked round, the "
    "lowest total wins.",
    first=KafkaSource("domino.game-events", 2, 2210),
    partitions=8,
    records=_lines(
        """
{"event_id":"t77-0001","type":"GameStarted","game_id":"table-77","seq":1,"occurred_at":"2026-11-30T13:00:01Z","schema_version":1,"players":["ann","bob","cid"],"rules":{"max_pip":12,"layout":"trains","engine_order":"descending","rounds":2}}
{"event_id":"t77-0002","type":"RoundStarted","game_id":"table-77","seq":2,"occurred_at":"2026-11-30T13:00:02Z","schema_version":1,"round":1,"hands":{"ann":[[12,11],[7,2],[11,9]],"bob":[[12,7],[12,4],[9,9]],"cid":[[7,7],[4,8],[1,1]]},"boneyard":[[0,3],[3,3]],"leader":"ann","engine":[12,12]}
{"event_id":"t77-0003","type":"TilePlayed","game_id":"table-77","seq":3,"occurred_at":"2026-11-30T13:00:03Z","schema_version":1,"round":1,"player":"ann","tile":[12,11],"train":"ann"}
{"event_id":"t77-0004","type":"TilePlayed","game_id":"table-77","seq":4,"occurred_at":"2026-11-30T13:00:04Z","schema_version":1,"round":1,"player":"bob","tile":[12,7],"train":"mexican"}
{"event_id":"t77-0005","type":"TilePlayed","game_id":"table-77","seq":5,"occurred_at":"2026-11-30T13:00:05Z","schema_version":1,"round":1,"player":"cid","tile":[7,7],"train":"mexican"}
{"event_id":"t77-0006","type":"TileDrawn","game_id":"table-77","seq":6,"occurred_at":"2026-11-30T13:00:06Z","schema_version":1,"round":1,"player":"cid","tile":[3,0]}
{"event_id":"t77-0007","type":"Passed","game_id":"table-77","seq":7,"occurred_at":"2026-11-30T13:00:07Z","schema_version":1,"round":1,"player":"cid"}
{"event_id":"t77-0008","type":"TilePlayed","game_id":"table-77","seq":8,"occurred_at":"2026-11-30T13:00:08Z","schema_version":1,"round":1,"player":"ann","tile":[7,2],"train":"mexican"}
{"event_id":"t77-0009","type":"TilePlayed","game_id":"table-77","seq":9,"occurred_at":"2026-11-30T13:00:09Z","schema_version":1,"round":1,"player":"bob","tile":[12,4],"train":"cid"}
{"event_id":"t77-0010","type":"TilePlayed","game_id":"table-77","seq":10,"occurred_at":"2026-11-30T13:00:10Z","schema_version":1,"round":1,"player":"cid","tile":[4,8],"train":"cid"}
{"event_id":"t77-0011","type":"TilePlayed","game_id":"table-77","seq":11,"occurred_at":"2026-11-30T13:00:11Z","schema_version":1,"round":1,"player":"ann","tile":[11,9],"train":"ann"}
{"event_id":"t77-0012","type":"RoundStarted","game_id":"table-77","seq":12,"occurred_at":"2026-11-30T13:00:12Z","schema_version":1,"round":2,"hands":{"ann":[[5,10],[12,12]],"bob":[[11,6],[2,2],[0,1]],"cid":[[11,3],[4,4],[0,2]]},"boneyard":[],"leader":"bob","engine":[11,11]}
{"event_id":"t77-0013","type":"TilePlayed","game_id":"table-77","seq":13,"occurred_at":"2026-11-30T13:00:13Z","schema_version":1,"round":2,"player":"bob","tile":[11,6],"train":"bob"}
{"event_id":"t77-0014","type":"TilePlayed","game_id":"table-77","seq":14,"occurred_at":"2026-11-30T13:00:14Z","schema_version":1,"round":2,"player":"cid","tile":[3,11],"train":"mexican"}
{"event_id":"t77-0015","type":"Passed","game_id":"table-77","seq":15,"occurred_at":"2026-11-30T13:00:15Z","schema_version":1,"round":2,"player":"ann"}
{"event_id":"t77-0016","type":"Passed","game_id":"table-77","seq":16,"occurred_at":"2026-11-30T13:00:16Z","schema_version":1,"round":2,"player":"bob"}
{"event_id":"t77-0017","type":"Passed","game_id":"table-77","seq":17,"occurred_at":"2026-11-30T13:00:17Z","schema_version":1,"round":2,"player":"cid"}
{"event_id":"t77-0018","type":"Passed","game_id":"table-77","seq":18,"occurred_at":"2026-11-30T13:00:18Z","schema_version":1,"round":2,"player":"ann"}
{"event_id":"t77-0019","type":"Passed","game_id":"table-77","seq":19,"occurred_at":"2026-11-30T13:00:19Z","schema_version":1,"round":2,"player":"bob"}
"""
    ),
    verdicts=_lines(
        """
{"awards":{"ann":0,"bob":18,"cid":5},"cause_event_id":"t77-0011","cause_seq":11,"cumulative":{"ann":0,"bob":18,"cid":5},"game_id":"table-77","occurred_at":"2026-11-30T13:00:11Z","pip_counts":{"ann":0,"bob":18,"cid":5},"reason":"domino","round":1,"schema_version":1,"scoring":"penalty","tie":false,"type":"RoundScored","verdict_id":"c3de0f8c-9f5b-5fdf-8e20-74c814e4ba5b","winners":["ann"]}
{"cause_event_id":"t77-0019","cause_seq":19,"confirmed_by":["cid","ann","bob"],"game_id":"table-77","occurred_at":"2026-11-30T13:00:19Z","open_ends":{"ann":11,"bob":6,"cid":11,"mexican":3},"pip_counts":{"ann":39,"bob":5,"cid":10},"proposer":"cid","round":2,"schema_version":1,"type":"BlockDeclared","verdict_id":"5a1ed44f-9363-5d16-8852-13c6e26eaa14"}
{"awards":{"ann":39,"bob":5,"cid":10},"cause_event_id":"t77-0019","cause_seq":19,"cumulative":{"ann":39,"bob":23,"cid":15},"game_id":"table-77","occurred_at":"2026-11-30T13:00:19Z","pip_counts":{"ann":39,"bob":5,"cid":10},"reason":"blocked","round":2,"schema_version":1,"scoring":"penalty","tie":false,"type":"RoundScored","verdict_id":"2fb00460-18f4-5406-9ec9-c60ec23101b9","winners":["bob"]}
{"cause_event_id":"t77-0019","cause_seq":19,"cumulative":{"ann":39,"bob":23,"cid":15},"game_id":"table-77","occurred_at":"2026-11-30T13:00:19Z","round":2,"schema_version":1,"type":"GameWon","verdict_id":"76405ae3-367d-534c-9fba-f2b44fff1e46","winner":"cid","winners":["cid"]}
"""
    ),
    rejected=(),
)

TABLE_93 = Scenario(
    game_id="table-93",
    story="All Fives on a spinner with two partnerships, replayed from a log file: a play "
    "that scores 15 for its team, a player who does not sit at the table and a play on an "
    "end that does not exist (both rejected, both taking their seq), then a blocked round "
    "that takes the winning team to the target score.",
    first=FileSource("table-93.jsonl", 1),
    partitions=1,
    records=_lines(
        """
{"event_id":"t93-0001","type":"GameStarted","game_id":"table-93","seq":1,"occurred_at":"2026-11-30T14:00:01+01:00","schema_version":1,"players":["ann","bob","cid","dee"],"rules":{"layout":"spinner","play_scoring":"fives","draw":"none","target_score":30},"teams":{"north":["ann","cid"],"east":["bob","dee"]}}
{"event_id":"t93-0002","type":"RoundStarted","game_id":"table-93","seq":2,"occurred_at":"2026-11-30T14:00:02+01:00","schema_version":1,"round":1,"hands":{"ann":[[6,6],[0,1]],"bob":[[6,4],[0,5]],"cid":[[4,3],[0,2]],"dee":[[3,6],[5,5]]},"boneyard":[],"leader":"ann"}
{"event_id":"t93-0003","type":"TilePlayed","game_id":"table-93","seq":3,"occurred_at":"2026-11-30T14:00:03+01:00","schema_version":1,"round":1,"player":"ann","tile":[6,6]}
{"event_id":"t93-0004","type":"TilePlayed","game_id":"table-93","seq":4,"occurred_at":"2026-11-30T14:00:04+01:00","schema_version":1,"round":1,"player":"bob","tile":[6,4],"end":"right"}
{"event_id":"t93-0005","type":"TilePlayed","game_id":"table-93","seq":5,"occurred_at":"2026-11-30T14:00:05+01:00","schema_version":1,"round":1,"player":"cid","tile":[4,3],"end":"right"}
{"event_id":"t93-0006","type":"TilePlayed","game_id":"table-93","seq":6,"occurred_at":"2026-11-30T14:00:06+01:00","schema_version":1,"round":1,"player":"eve","tile":[5,5],"end":"left"}
{"event_id":"t93-0007","type":"TilePlayed","game_id":"table-93","seq":7,"occurred_at":"2026-11-30T14:00:07+01:00","schema_version":1,"round":1,"player":"dee","tile":[3,6],"end":"right"}
{"event_id":"t93-0008","type":"TilePlayed","game_id":"table-93","seq":8,"occurred_at":"2026-11-30T14:00:08+01:00","schema_version":1,"round":1,"player":"ann","tile":[0,1],"end":"middle"}
{"event_id":"t93-0009","type":"Passed","game_id":"table-93","seq":9,"occurred_at":"2026-11-30T14:00:09+01:00","schema_version":1,"round":1,"player":"ann"}
{"event_id":"t93-0010","type":"Passed","game_id":"table-93","seq":10,"occurred_at":"2026-11-30T14:00:10+01:00","schema_version":1,"round":1,"player":"bob"}
{"event_id":"t93-0011","type":"Passed","game_id":"table-93","seq":11,"occurred_at":"2026-11-30T14:00:11+01:00","schema_version":1,"round":1,"player":"cid"}
{"event_id":"t93-0012","type":"Passed","game_id":"table-93","seq":12,"occurred_at":"2026-11-30T14:00:12+01:00","schema_version":1,"round":1,"player":"dee"}
"""
    ),
    verdicts=_lines(
        """
{"cause_event_id":"t93-0005","cause_seq":5,"count":15,"cumulative":{"ann":15,"bob":0,"cid":15,"dee":0},"game_id":"table-93","occurred_at":"2026-11-30T14:00:05+01:00","player":"cid","points":15,"round":1,"schema_version":1,"team":"north","team_cumulative":{"east":0,"north":15},"type":"PointsScored","verdict_id":"2b64c3d7-671c-5e69-b5d7-5aa4b41c39cb"}
{"cause_event_id":"t93-0012","cause_seq":12,"confirmed_by":["ann","bob","cid","dee"],"game_id":"table-93","occurred_at":"2026-11-30T14:00:12+01:00","open_ends":{"down":6,"left":6,"right":6,"up":6},"pip_counts":{"ann":1,"bob":5,"cid":2,"dee":10},"proposer":"ann","round":1,"schema_version":1,"type":"BlockDeclared","verdict_id":"daf76c28-fe0d-57c0-a375-041b5f1ef9bc"}
{"awards":{"ann":15,"bob":0,"cid":15,"dee":0},"cause_event_id":"t93-0012","cause_seq":12,"cumulative":{"ann":30,"bob":0,"cid":30,"dee":0},"game_id":"table-93","occurred_at":"2026-11-30T14:00:12+01:00","pip_counts":{"ann":1,"bob":5,"cid":2,"dee":10},"reason":"blocked","round":1,"schema_version":1,"team_awards":{"east":0,"north":15},"team_cumulative":{"east":0,"north":30},"team_pip_counts":{"east":15,"north":3},"tie":false,"type":"RoundScored","verdict_id":"aed5cb6d-f228-5952-8d21-59eea82de4f6","winners":["ann","cid"],"winning_teams":["north"]}
{"cause_event_id":"t93-0012","cause_seq":12,"cumulative":{"ann":30,"bob":0,"cid":30,"dee":0},"game_id":"table-93","occurred_at":"2026-11-30T14:00:12+01:00","round":1,"schema_version":1,"team_cumulative":{"east":0,"north":30},"type":"GameWon","verdict_id":"8489bf4e-ee4b-5060-9a0d-11e4ea1fcc6b","winner":"ann","winners":["ann","cid"],"winning_teams":["north"]}
"""
    ),
    rejected=(
        Rejected(
            5, "unknown_player", "player 'eve' does not sit at this game", "table-93", 6, "t93-0006"
        ),
        Rejected(
            7,
            "schema_violation",
            "TilePlayed: Invalid enum value 'middle' - at `$.end`",
            "table-93",
            8,
            "t93-0008",
        ),
    ),
)

SCENARIOS = (TABLE_42, TABLE_77, TABLE_93)


@cache
def examples() -> dict[str, list[dict[str, Any]]]:
    """Returns the examples of every message type, from the scenarios.

    An input event type gets, from each scenario, its first event of that type and every
    event of that type that caused a verdict; a verdict type every verdict of that type;
    ``EventRejected`` every rejection.
    """
    out: dict[str, list[dict[str, Any]]] = {t: [] for t in (*EVENT_TYPES, *VERDICT_ORDER)}
    out["EventRejected"] = []
    for scenario in SCENARIOS:
        verdicts = [json.loads(v) for v in scenario.verdicts]
        causes = {v["cause_seq"] for v in verdicts}
        seen: set[str] = set()
        for event in scenario.events():
            if event["type"] not in seen or event["seq"] in causes:
                out[event["type"]].append(event)
            seen.add(event["type"])
        for verdict in verdicts:
            out[verdict["type"]].append(verdict)
        out["EventRejected"] += scenario.rejections()
    out["EventRejected"].append(_oversized())
    return out


def _oversized() -> dict[str, Any]:
    """A record too large to carry on the dead-letter topic: its rejection omits the bytes."""
    pad = '\\"' * 300_000  # 600,000 bytes of escaped quotes: its copy would be 1.2 MB
    raw = (
        '{"event_id":"e-0099","type":"TilePlayed","game_id":"table-42","seq":99,'
        f'"occurred_at":"2026-11-30T12:09:59Z","schema_version":1,"pad":"{pad}"}}'
    ).encode()
    rejection = rejection_of(
        raw,
        KafkaSource("domino.game-events", 7, 1099),
        RejectionReason.TOO_LARGE,
        f"the event is {len(raw)} bytes; the limit is 65536",
        "table-42",
        99,
        "e-0099",
    )
    example: dict[str, Any] = json.loads(encode_canonical(rejection))
    return example
