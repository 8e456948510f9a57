"""Scenario 4: poison input: 5% of the records are bad in every way the contract names.

Built here from a clean simulated log: malformed JSON (truncated lines, bytes that are not
UTF-8), oversized events, unknown types, events of games that never started, exact re-sends
(duplicates), events with a gap in their game's seq, and conflicting events (same game and
seq as one already judged, different content). Every bad record must land on the dead-letter
topic exactly as ``referee replay --rejected`` puts it, or be counted as a duplicate in the
journal, and the valid games' verdicts must be exactly those of the clean log. One SIGKILL
mid-stream makes the DLQ outbox go through a restart too.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from tests.reliability.conftest import MakeStack, Simulated
from tests.reliability.harness import (
    SOAK,
    Figures,
    RssWatch,
    Store,
    kill,
    produce_paced,
    replay,
    verify,
)
from tools.testkit.kafkatools import keyed_lines

pytestmark = [pytest.mark.reliability, pytest.mark.kafka]

GAMES = 1200 if SOAK else 250
POISON_RATE = 0.05
KINDS = (
    "malformed",
    "oversized",
    "unknown_type",
    "unknown_game",
    "duplicate",
    "seq_gap",
    "conflict",
)


def dumps(event: dict[str, object]) -> bytes:
    return json.dumps(event, separators=(",", ":")).encode()


def poison(clean: list[bytes], rng: random.Random) -> tuple[list[bytes], Counter[str], list[bytes]]:
    """Returns the poisoned lines, how many of each kind, and the bad lines themselves."""
    per_line = POISON_RATE / (1 - POISON_RATE)
    out: list[bytes] = []
    pending: list[tuple[int, bytes]] = []
    kinds: Counter[str] = Counter()
    bad: list[bytes] = []
    for i, line in enumerate(clean):
        out.append(line)
        event = json.loads(line)
        if rng.random() < per_line:
            kind = rng.choice(KINDS)
            made = None
            if kind == "malformed":
                if rng.random() < 0.7:
                    made = line[: rng.randrange(1, len(line) - 1)]
                else:
                    made = b"\xff\xfe" + line[:40] + b"\x80"
            elif kind == "oversized":
                made = dumps({**event, "game_id": f"poison-big-{i}", "padding": "x" * 70_000})
            elif kind == "unknown_type":
                made = dumps({**event, "event_id": f"poison-type-{i}", "type": "TileFlipped"})
            elif kind == "unknown_game" and event["type"] != "GameStarted":
                made = dumps({**event, "event_id": f"poison-ghost-{i}", "game_id": f"ghost-{i}"})
            elif kind == "duplicate":
                made = line
            elif kind == "seq_gap":
                made = dumps({**event, "event_id": f"poison-gap-{i}", "seq": event["seq"] + 500})
            elif kind == "conflict" and event["type"] in ("TilePlayed", "TileDrawn"):
                tile = [0, 0] if sorted(event["tile"]) != [0, 0] else [1, 1]
                made = dumps({**event, "event_id": f"poison-conflict-{i}", "tile": tile})
            if made is not None:
                kinds[kind] += 1
                bad.append(made)
                # later, in the same game's order (same key, so same partition)
                pending.append((i + rng.randrange(0, 300), made))
        still = []
        for at, made in pending:
            if at <= i:
                out.append(made)
            else:
                still.append((at, made))
        pending = still
    out.extend(made for _, made in pending)
    return out, kinds, bad


async def test_poison_input_reaches_the_dlq_or_is_counted(
    make_stack: MakeStack, simulated: Simulated, tmp_path: Path
) -> None:
    stack = await make_stack(partitions=4)
    clean_log = simulated(GAMES, 41)
    clean = [line for line in clean_log.read_bytes().splitlines() if line.strip()]
    lines, kinds, bad = poison(clean, random.Random(41))
    log = tmp_path / "poisoned.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")
    figures = Figures("poison_input")

    clean_replay = replay(clean_log, tmp_path, "clean")
    expected = replay(log, tmp_path, "poisoned")
    assert expected.verdicts == clean_replay.verdicts, "the oracle: poison changes no verdict"
    assert not clean_replay.rejections
    assert clean_replay.duplicates == 0
    # every injected line is rejected or a duplicate, in the oracle too
    assert len(expected.rejections) + expected.duplicates == len(bad)
    assert expected.duplicates == kinds["duplicate"]

    records = keyed_lines(log)
    store = Store(stack.database_url)
    rss = RssWatch()
    try:
        feeding = asyncio.create_task(
            produce_paced(stack.bootstrap, stack.topics.input, records, seconds=10)
        )
        process, _ = stack.start("first")
        rss.watch(process.pid)
        await store.wait_until(len(records) // 3)
        await kill(process, rss)
        second, _ = stack.start("second")
        rss.watch(second.pid)
        await feeding
        figures["events"] = len(records)
        figures["poison_records"] = len(bad)
        figures["poison_share"] = round(len(bad) / len(records), 4)
        figures["poison_kinds"] = dict(sorted(kinds.items()))
        figures["rejection_reasons"] = dict(
            sorted(Counter(r["reason"] for r in expected.rejections).items())
        )
        figures["kills"] = 1
        await verify(stack, log, tmp_path, figures, expected=expected)
        assert figures["journal_outcomes"].get("rejected", 0) == len(expected.rejections)
        assert figures["duplicates_counted"] == kinds["duplicate"]
        assert len(bad) / len(records) >= 0.04
    finally:
        figures["peak_rss_mb"] = await rss.stop()
        await store.close()
        figures.emit()
