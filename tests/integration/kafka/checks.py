"""What every end-to-end scenario asserts about the verdicts it got."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

from tests.integration.conftest import fetch


def by_game(lines: list[str]) -> dict[str, list[str]]:
    """Groups verdict lines by game, keeping their order."""
    games: dict[str, list[str]] = defaultdict(list)
    for line in lines:
        games[json.loads(line)["game_id"]].append(line)
    return dict(games)


def assert_same_verdicts(published: list[str], expected: list[str], where: str) -> None:
    """Same verdicts, byte for byte, each once, in each game's order."""
    duplicates = [v for v, n in Counter(published).items() if n > 1]
    assert not duplicates, f"{len(duplicates)} duplicated verdicts {where}: {duplicates[:2]}"
    missing = set(expected) - set(published)
    extra = set(published) - set(expected)
    assert not missing, f"{len(missing)} verdicts missing {where}: {sorted(missing)[:2]}"
    assert not extra, f"{len(extra)} unexpected verdicts {where}: {sorted(extra)[:2]}"
    assert by_game(published) == by_game(expected), f"a game's verdict order differs {where}"


async def stored_verdicts(url: str) -> list[str]:
    """The verdict bodies in the store, in outbox order."""
    return [r["body"] for r in await fetch(url, "SELECT body FROM verdicts ORDER BY position")]


async def assert_journal_complete(url: str, records: int) -> None:
    """Every record produced was journaled exactly once."""
    rows = await fetch(
        url,
        "SELECT count(*) AS n, count(DISTINCT (source_partition, source_offset)) AS d FROM journal",
    )
    assert rows[0]["n"] == records, f"journal holds {rows[0]['n']} rows, {records} produced"
    assert rows[0]["d"] == records, "a record was journaled twice"
