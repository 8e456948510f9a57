"""``referee explain``, run as a real process: text, JSON against its schema, the selections,
the views, and bad usage (one line, exit status 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
FALSE_PASS = GOLDEN / "false_pass_in_confirmation.jsonl"
SCHEMA = json.loads((ROOT / "schemas" / "Explanation.schema.json").read_text(encoding="utf-8"))


def referee(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "referee", *map(str, args)],
        capture_output=True,
        check=check,
        timeout=120,
    )


def explained(*args: str | Path) -> list[dict[str, Any]]:
    result = referee("explain", *args, "--json")
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.fixture(scope="module")
def fouled_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A simulated log of every family with many fouls, bad lines and re-sent events."""
    log = tmp_path_factory.mktemp("explain") / "games.jsonl"
    referee(
        "simulate", "--games", "30", "--seed", "36", "--foul-rate", "0.15",
        "--bad-rate", "0.02", "--duplicate-rate", "0.02", "--output", log,
    )  # fmt: skip
    return log


def test_every_verdict_of_a_log_is_explained_once_as_replay_announces_it(fouled_log: Path) -> None:
    announced = [json.loads(x) for x in referee("replay", fouled_log).stdout.splitlines()]

    found = explained(fouled_log)

    assert [e["verdict"] for e in found] == announced
    assert [e["verdict_id"] for e in found] == [v["verdict_id"] for v in announced]
    assert [e["type"] for e in found] == [v["type"] for v in announced]


KINDS = {"turn", "hand", "place", "draw", "playable", "count", "block", "round", "game"}
"""Every kind of evidence (docs/disputes.md)."""


def test_every_kind_of_evidence_appears_and_validates_against_its_schema(
    fouled_log: Path,
) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    kinds = set(SCHEMA["properties"]["evidence"]["discriminator"]["mapping"])
    assert kinds == KINDS  # the schema knows every kind, and only those

    found = explained(fouled_log) + explained(fouled_log, "--as", "spectator")

    assert {e["evidence"]["kind"] for e in found} == KINDS
    for explanation in found:
        validator.validate(explanation)
        assert explanation["rule"].startswith("RULES.md §")


def test_a_players_view_validates_against_its_schema(fouled_log: Path) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    game, player = first_game(fouled_log)

    found = explained(fouled_log, "--as", player)

    assert {e["game_id"] for e in found} == {game}  # the games the player sits at
    assert {e["view"] for e in found} == {player}
    assert any(e["withheld"] for e in found)  # something was kept from the player
    for explanation in found:
        validator.validate(explanation)


def test_the_schema_allows_no_field_the_evidence_does_not_have(fouled_log: Path) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    [explanation, *_] = explained(fouled_log)

    extra = {**explanation, "evidence": {**explanation["evidence"], "surplus": 1}}

    with pytest.raises(jsonschema.ValidationError, match="surplus"):
        validator.validate(extra)


def first_game(log: Path) -> tuple[str, str]:
    """The first game of a log and its first player."""
    for line in log.read_bytes().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "GameStarted":
            return event["game_id"], event["players"][0]
    raise AssertionError("no game in the log")


def test_the_schemas_examples_are_what_the_command_writes() -> None:
    examples = [
        json.loads(line)
        for line in (ROOT / "referee/contracts/explanation_examples.jsonl").read_text().splitlines()
    ]
    assert examples == SCHEMA["examples"]

    for example in examples:
        view = [] if example["view"] == "auditor" else ["--as", example["view"]]
        game, seq = example["game_id"], str(example["cause_seq"])
        made = explained(FALSE_PASS, "--game", game, "--seq", seq, *view)
        assert example in made


def test_the_text_tells_the_story_draws_the_board_and_gives_the_evidence() -> None:
    text = referee("explain", FALSE_PASS).stdout.decode()

    assert "== game golden-false-pass ==" in text
    assert "players, in the order of play: ann, bob, cid" in text
    assert "    cid: [0,3] [3,5] [4,4] [4,6]" in text  # the deal, every hand to the auditor
    assert "seq 8, round 1: cid passed" in text
    assert "board: [6|4][4|5][5|5]" in text
    assert "verdict: FoulRecorded false_pass (applied: the action stood)" in text
    assert "rule: RULES.md §2, §3" in text
    assert "tiles that play: [3,5] on right (5)" in text
    assert "bob (T = 3): U = 16 (never below 0); award 16" in text


def test_a_player_sees_their_own_hand_and_not_the_others_until_the_round_ends() -> None:
    text = referee("explain", FALSE_PASS, "--as", "ann").stdout.decode()

    assert "    ann: [0,0] [1,4] [4,5]" in text
    assert "cid: [0,3] [3,5] [4,4] [4,6]" not in text
    assert "[3,5] on right" not in text
    assert "withheld from this view until the round ends: hand, playable" in text
    assert "cid: [0,3] [4,4] = 11 pips" in text  # the hands left, once the round is over


def test_the_offender_sees_the_evidence_against_them() -> None:
    text = referee("explain", FALSE_PASS, "--as", "cid").stdout.decode()

    assert "tiles that play: [3,5] on right (5)" in text


def test_game_and_seq_select_one_event(fouled_log: Path) -> None:
    everything = explained(fouled_log)
    first = everything[0]

    found = explained(fouled_log, "--game", first["game_id"], "--seq", str(first["cause_seq"]))

    assert found == [
        e
        for e in everything
        if (e["game_id"], e["cause_seq"]) == (first["game_id"], first["cause_seq"])
    ]
    assert {e["game_id"] for e in explained(fouled_log, "--game", first["game_id"])} == {
        first["game_id"]
    }


def test_an_event_without_a_verdict_says_so_and_succeeds() -> None:
    result = referee("explain", FALSE_PASS, "--game", "golden-false-pass", "--seq", "3")

    assert result.returncode == 0
    assert result.stdout == b""
    assert b"seq 3 of game 'golden-false-pass' (TilePlayed) gave no verdict" in result.stderr


def test_an_event_rejected_as_invalid_input_says_it_has_no_verdict_and_succeeds(
    tmp_path: Path,
) -> None:
    """An ``EventRejected`` is no verdict (RULES.md section 7): nothing to explain."""
    head = FALSE_PASS.read_bytes().splitlines()[:2]  # the game and its deal
    stranger = {
        "event_id": "e-stranger", "type": "Passed", "game_id": "golden-false-pass", "seq": 3,
        "occurred_at": "2026-11-30T11:00:03Z", "schema_version": 1, "round": 1, "player": "zed",
    }  # fmt: skip
    log = tmp_path / "rejected.jsonl"
    log.write_bytes(b"\n".join([*head, json.dumps(stranger).encode()]) + b"\n")

    result = referee("explain", log, "--game", "golden-false-pass", "--seq", "3")
    as_json = referee("explain", log, "--game", "golden-false-pass", "--seq", "3", "--json")

    assert result.returncode == as_json.returncode == 0
    assert result.stdout == as_json.stdout == b""
    message = (
        b"seq 3 of game 'golden-false-pass' was rejected (unknown_player): no verdict to explain"
    )
    assert message in result.stderr
    assert message in as_json.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--seq", "3"), "--seq N needs --game ID"),
        (("--game", "nowhere"), "no game 'nowhere' in"),
        (("--game", "golden-false-pass", "--seq", "99"), "has no event at seq 99 (its seqs: 1 to"),
        (("--as", "zed"), "--as zed: no such player at any game of"),
        (("--game", "golden-false-pass", "--as", "zed"), "no such player at game"),
        (("--seq", "0", "--game", "g"), "0 is out of range"),
    ],
)
def test_bad_usage_is_one_line_and_exit_status_2(args: tuple[str, ...], message: str) -> None:
    result = referee("explain", FALSE_PASS, *args, check=False)

    assert result.returncode == 2
    assert message in result.stderr.decode()
    assert len(result.stderr.decode().strip().splitlines()) == 1
    assert result.stdout == b""


def test_a_log_and_a_database_together_or_neither_is_bad_usage() -> None:
    both = referee("explain", FALSE_PASS, "--database", "postgresql://x/y", check=False)
    neither = referee("explain", check=False)

    swapped = referee("explain", "--database", FALSE_PASS, check=False)

    assert both.returncode == neither.returncode == swapped.returncode == 2
    assert "is a log, not a URL" in swapped.stderr.decode()
    assert "not both" in both.stderr.decode()
    assert "give a LOG" in neither.stderr.decode()
