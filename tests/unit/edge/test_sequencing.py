"""Sequencing: duplicates, the place rule of EVENTS.md, verdict envelopes, and the tally."""

from __future__ import annotations

import json
import uuid

from referee.contracts.rejection import KafkaSource
from referee.contracts.verdicts import VERDICT_NAMESPACE, encode_canonical, verdict_id
from referee.processing.ledger import Fingerprint
from referee.processing.outcome import Outcome
from tests.unit.edge.edge_helpers import (
    AT,
    GAME,
    SOURCE,
    FedReferee,
    dealt,
    drawn,
    event,
    in_round,
    passed,
    played,
    raw,
    started,
)

# --- duplicates -------------------------------------------------------------------------------


def test_the_same_bytes_again_are_a_duplicate() -> None:
    table = in_round()
    first, again = table.feed(played(3, "ann", [6, 6]), played(3, "ann", [6, 6]))
    assert first.outcome is Outcome.APPLIED
    assert again.outcome is Outcome.DUPLICATE
    assert again.verdicts == ()
    assert again.rejection is None
    assert not again.took_place
    assert table.referee.tally.duplicates == 1


def test_the_same_content_written_differently_is_a_duplicate() -> None:
    table = in_round()
    table.one(raw(played(3, "ann", [6, 6])))
    reordered = dict(reversed(list(played(3, "ann", [6, 6]).items())))
    spaced = json.dumps(reordered, indent=2).encode()
    assert table.one(spaced).outcome is Outcome.DUPLICATE


def test_places_kept_as_their_prints_still_tell_duplicates_from_conflicts() -> None:
    # The store's step keeps a print where the in-memory replay keeps the record (eager prints).
    table = in_round()
    table.referee.eager_prints = True
    record = raw(played(3, "ann", [6, 6]))
    first = table.one(record)
    ledger = table.referee.games[GAME]
    assert ledger.by_seq[3] == first.fingerprint
    assert first.event_id is not None
    assert ledger.by_event_id[first.event_id] == first.fingerprint
    assert table.one(raw(played(3, "ann", [6, 6]))).outcome is Outcome.DUPLICATE
    conflict = table.one(raw(played(3, "ann", [5, 6])))
    assert conflict.outcome is Outcome.REJECTED
    assert conflict.rejection is not None
    assert conflict.rejection.reason.value == "seq_conflict"


def test_eager_prints_keep_a_print_in_every_place_a_valid_event_takes() -> None:
    # The store's step keeps no record in its ledgers: a game's start, a judged rejection
    # and an event id used again at the next seq each leave their print, as an applied
    # event does; the outcomes are the in-memory replay's.
    lazy, eager = FedReferee(), FedReferee()
    eager.referee.eager_prints = True
    events = [
        started(),
        dealt(),
        passed(3, "ann", round_number=2),  # wrong_round, at its place
        played(4, "ann", [6, 6]),
        {**passed(5, "bob"), "event_id": f"{GAME}-e0004"},  # seq_conflict, at its place
        played(6, "bob", [6, 5], end="right"),
    ]
    for e in events:
        a, b = lazy.one(e), eager.one(e)
        assert (a.outcome, a.took_place, a.rejection, a.fingerprint) == (
            b.outcome,
            b.took_place,
            b.rejection,
            b.fingerprint,
        )
    assert eager.referee.tally.rejections == {"seq_conflict": 1, "wrong_round": 1}
    ledger = eager.referee.games[GAME]
    assert sorted(ledger.by_seq) == [1, 2, 3, 4, 5, 6]
    assert all(isinstance(t, Fingerprint) for t in ledger.by_seq.values())
    assert all(isinstance(t, Fingerprint) for t in ledger.by_event_id.values())
    assert not any(isinstance(t, Fingerprint) for t in lazy.referee.games[GAME].by_seq.values())


def test_a_duplicate_of_an_older_event_is_ignored_later_on() -> None:
    table = in_round()
    table.feed(played(3, "ann", [6, 6]), played(4, "bob", [6, 5], end="right"))
    again = table.one(raw(dealt()))
    assert again.outcome is Outcome.DUPLICATE
    # and the game goes on from seq 5
    assert table.one(raw(passed(5, "ann"))).outcome is not Outcome.REJECTED


def test_a_duplicate_of_a_fouled_event_announces_nothing_again() -> None:
    table = in_round()
    fouled = table.one(raw(passed(3, "bob")))  # out of turn
    assert fouled.outcome is Outcome.FOULED
    assert [v.foul.value for v in fouled.verdicts] == ["out_of_turn"]  # type: ignore[union-attr]
    again = table.one(raw(passed(3, "bob")))
    assert again.outcome is Outcome.DUPLICATE
    assert again.verdicts == ()
    assert table.referee.tally.verdicts == {"FoulRecorded": 1}


def test_a_duplicate_of_an_event_that_ended_a_round_announces_nothing_again() -> None:
    table = FedReferee()
    table.feed(started(), dealt(hands={"ann": [[6, 6]], "bob": [[6, 5], [0, 0]]}))
    first, again = table.feed(played(3, "ann", [6, 6]), played(3, "ann", [6, 6]))
    assert len(first.verdicts) == 1
    assert again.outcome is Outcome.DUPLICATE
    assert again.verdicts == ()


def test_a_duplicate_of_a_rejected_event_that_took_its_place() -> None:
    table = in_round()
    first, again = table.feed(passed(3, "zed"), passed(3, "zed"))
    assert first.rejection is not None
    assert first.rejection.reason.value == "unknown_player"
    assert first.took_place
    assert again.outcome is Outcome.DUPLICATE
    assert again.rejection is None
    assert table.referee.tally.rejections == {"unknown_player": 1}


def test_a_duplicate_of_an_unparsed_event_that_took_its_place() -> None:
    table = in_round()
    bad = raw({**passed(3, "ann"), "player": 5})
    first, again = table.feed(bad, bad)
    assert first.took_place
    assert again.outcome is Outcome.DUPLICATE
    assert table.referee.tally.rejections == {"schema_violation": 1}
    assert table.referee.tally.duplicates == 1


def test_a_resent_event_with_a_new_event_id_is_a_conflict_not_a_duplicate() -> None:
    table = in_round()
    table.one(raw(played(3, "ann", [6, 6])))
    result = table.one(raw(played(3, "ann", [6, 6], event_id="resent")))
    assert result.rejection is not None
    assert result.rejection.reason.value == "seq_conflict"


def test_a_duplicate_game_started() -> None:
    table = FedReferee()
    first, again = table.feed(started(), started())
    assert (first.outcome, again.outcome) == (Outcome.APPLIED, Outcome.DUPLICATE)


# --- the place rule ---------------------------------------------------------------------------


def test_a_schema_violation_with_the_next_seq_takes_its_place() -> None:
    table = in_round()
    bad = table.one(raw({**played(3, "ann", [6, 6]), "tile": "six-six"}))
    assert bad.rejection is not None
    assert bad.rejection.reason.value == "schema_violation"
    assert bad.took_place
    following = table.one(raw(played(4, "ann", [6, 6])))
    assert following.outcome is Outcome.APPLIED, following.rejection
    assert following.took_place


def test_an_unknown_type_with_the_next_seq_takes_its_place() -> None:
    table = in_round()
    bad = table.one(raw(event("Shuffled", 3)))
    assert bad.took_place
    assert table.one(raw(played(4, "ann", [6, 6]))).outcome is Outcome.APPLIED


def test_a_too_large_event_with_the_next_seq_takes_its_place() -> None:
    table = in_round()
    huge = raw({**passed(3, "ann"), "pad": "x" * 70_000})
    bad = table.one(huge)
    assert bad.rejection is not None
    assert bad.rejection.reason.value == "too_large"
    assert bad.took_place
    assert table.one(raw(played(4, "ann", [6, 6]))).outcome is Outcome.APPLIED


def test_a_schema_violation_with_a_later_seq_takes_no_place() -> None:
    table = in_round()
    bad = table.one(raw({**played(5, "ann", [6, 6]), "tile": "six-six"}))
    assert bad.rejection is not None
    assert bad.rejection.reason.value == "schema_violation"
    assert not bad.took_place
    assert table.one(raw(played(3, "ann", [6, 6]))).outcome is Outcome.APPLIED
    gap = table.one(raw(passed(5, "bob")))
    assert gap.rejection is not None
    assert gap.rejection.reason.value == "seq_gap"


def test_a_schema_violation_with_an_unreadable_seq_takes_no_place() -> None:
    table = in_round()
    bad = table.one(raw({**played(3, "ann", [6, 6]), "seq": "3"}))
    assert bad.rejection is not None
    assert bad.seq is None
    assert not bad.took_place
    assert table.one(raw(played(3, "ann", [6, 6]))).outcome is Outcome.APPLIED


def test_a_judged_rejection_with_the_next_seq_takes_its_place() -> None:
    table = in_round()
    bad = table.one(raw(passed(3, "ann", round_number=2)))
    assert bad.rejection is not None
    assert bad.rejection.reason.value == "wrong_round"
    assert bad.took_place
    assert table.one(raw(played(4, "ann", [6, 6]))).outcome is Outcome.APPLIED


def test_a_seq_gap_takes_no_place() -> None:
    table = in_round()
    assert not table.one(raw(played(4, "ann", [6, 6]))).took_place
    assert table.one(raw(played(3, "ann", [6, 6]))).outcome is Outcome.APPLIED


def test_a_seq_conflict_takes_no_place() -> None:
    table = in_round()
    conflict = table.one(raw(dealt(boneyard=[])))
    assert conflict.rejection is not None
    assert conflict.rejection.reason.value == "seq_conflict"
    assert not conflict.took_place
    assert table.one(raw(played(3, "ann", [6, 6]))).outcome is Outcome.APPLIED


def test_an_event_for_an_unknown_game_takes_no_place() -> None:
    table = FedReferee()
    ghost = table.one(raw(started(seq=1, game_id="ghost") | {"type": "Passed"}))
    assert not ghost.took_place
    assert table.one(raw(started(game_id="ghost"))).outcome is Outcome.APPLIED


def test_a_rejected_event_does_not_change_the_game() -> None:
    table = in_round()
    table.feed(
        played(3, "bob", [6, 5]),  # wrong player: fouled, rejected, no change
        {**played(4, "ann", [6, 6]), "tile": [6]},  # schema violation
        passed(5, "zed"),  # unknown player
    )
    # it is still ann's turn with both her tiles, on an empty layout
    result = table.one(raw(played(6, "ann", [1, 2])))
    assert result.outcome is Outcome.APPLIED
    after = table.one(raw(played(7, "bob", [6, 5], end="left")))
    assert [v.foul.value for v in after.verdicts] == ["tile_does_not_match"]  # type: ignore[union-attr]


# --- verdict envelopes ------------------------------------------------------------------------


def test_verdicts_carry_the_cause_and_an_input_derived_id() -> None:
    table = in_round(foul_penalty={"out_of_turn": 3})
    result = table.one(raw({**passed(3, "bob"), "occurred_at": "2026-12-01T08:09:10+01:00"}))
    (foul,) = result.verdicts
    line = json.loads(encode_canonical(foul))
    assert line == {
        "type": "FoulRecorded",
        "verdict_id": str(uuid.uuid5(VERDICT_NAMESPACE, f"{GAME}/3/0")),
        "game_id": GAME,
        "round": 1,
        "cause_event_id": f"{GAME}-e0003",
        "cause_seq": 3,
        "occurred_at": "2026-12-01T08:09:10+01:00",
        "schema_version": 1,
        "player": "bob",
        "foul": "out_of_turn",
        "applied": False,
        "penalty": 3,
    }


def test_verdict_ids_count_the_verdicts_of_one_event() -> None:
    table = FedReferee()
    table.feed(started(target_score=1), dealt(hands={"ann": [[6, 6]], "bob": [[6, 5], [0, 0]]}))
    result = table.one(raw(played(3, "ann", [6, 6])))
    assert [v.verdict_id for v in result.verdicts] == [
        verdict_id(GAME, 3, 0),
        verdict_id(GAME, 3, 1),
    ]
    assert verdict_id(GAME, 3, 0) == str(uuid.uuid5(VERDICT_NAMESPACE, f"{GAME}/3/0"))


def test_canonical_json_sorts_keys_without_spaces() -> None:
    table = in_round()
    (foul,) = table.one(raw(passed(3, "bob"))).verdicts
    line = encode_canonical(foul)
    assert b" " not in line
    decoded = json.loads(line)
    assert list(decoded) == sorted(decoded)
    assert line == json.dumps(decoded, sort_keys=True, separators=(",", ":")).encode()


def test_canonical_json_keeps_unicode_as_utf8() -> None:
    table = FedReferee()
    table.one(raw(event("GameStarted", 1, players=["zoë", "bob"], rules={})))
    table.one(raw(dealt(hands={"zoë": [[6, 6]], "bob": [[6, 5]]}, leader="zoë")))
    (scored,) = table.one(raw(event("TilePlayed", 3, round=1, player="zoë", tile=[6, 6]))).verdicts
    line = encode_canonical(scored)
    assert "zoë".encode() in line
    assert (
        line
        == json.dumps(
            json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode()
    )


def test_canonical_json_sorts_player_keys_not_seats() -> None:
    table = FedReferee()
    table.one(raw(event("GameStarted", 1, players=["zed", "Amy", "bob"], rules={})))
    table.one(raw(dealt(hands={"zed": [[6, 6]], "Amy": [[6, 5]], "bob": [[1, 1]]}, leader="zed")))
    (scored,) = table.one(raw(event("TilePlayed", 3, round=1, player="zed", tile=[6, 6]))).verdicts
    line = encode_canonical(scored)
    assert b'"pip_counts":{"Amy":11,"bob":2,"zed":0}' in line
    assert b'"awards":{"Amy":0,"bob":0,"zed":13}' in line


def test_occurred_at_is_copied_from_the_cause() -> None:
    table = in_round()
    (foul,) = table.one(raw(passed(3, "bob"))).verdicts
    assert foul.occurred_at == AT


def test_a_kafka_source_is_recorded() -> None:
    result = FedReferee().referee.process(
        raw(passed(2, "ann")), KafkaSource("domino.game-events", 3, 41)
    )
    assert result.rejection is not None
    record = json.loads(encode_canonical(result.rejection))
    assert record["source"] == {
        "kind": "kafka",
        "topic": "domino.game-events",
        "partition": 3,
        "offset": 41,
    }


# --- the tally --------------------------------------------------------------------------------


def test_the_tally_counts_every_record_once() -> None:
    table = FedReferee()
    table.feed(
        started(),  # GameStarted
        dealt(),  # RoundStarted
        dealt(),  # duplicate
        b"{not json",  # malformed_json
        passed(3, "bob"),  # Passed, fouled out_of_turn
        drawn(4, "ann", [3, 4]),  # TileDrawn
        passed(4, "ann"),  # seq_conflict
        played(9, "ann", [6, 6]),  # seq_gap
        played(5, "ann", [6, 6]),  # TilePlayed
        passed(2, "ann", game_id="ghost"),  # unknown_game
        played(5, "ann", [6, 6]),  # duplicate
    )
    tally = table.referee.tally
    assert tally.records == 11
    assert tally.duplicates == 2
    assert tally.events == {
        "GameStarted": 1,
        "RoundStarted": 1,
        "Passed": 1,
        "TileDrawn": 1,
        "TilePlayed": 1,
    }
    assert tally.rejections == {
        "malformed_json": 1,
        "seq_conflict": 1,
        "seq_gap": 1,
        "unknown_game": 1,
    }
    assert tally.verdicts == {"FoulRecorded": 1}
    assert tally.records == sum(tally.events.values()) + sum(tally.rejections.values()) + (
        tally.duplicates
    )


def test_a_source_is_not_part_of_the_content() -> None:
    table = in_round()
    table.referee.process(raw(played(3, "ann", [6, 6])), SOURCE)
    again = table.referee.process(raw(played(3, "ann", [6, 6])), KafkaSource("t", 0, 9))
    assert again.outcome is Outcome.DUPLICATE
