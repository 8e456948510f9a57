"""The live path's counters count each record of a batch once, under its labels; the store's
time partitions' gauges say how far ahead they reach, how old the oldest is and how many."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from referee.contracts.rejection import FileSource
from referee.processing.referee import Referee
from referee.service import runtime
from referee.service.app import build
from referee.service.metrics import Metrics
from referee.service.settings import Settings
from referee.simulate import SimulationOptions, simulate
from referee.store.database import create_engine
from referee.store.partitions import TimePartition

NOWHERE = "postgresql://nobody@127.0.0.1:1/none"  # refused at once: a failed reading


def test_a_batch_is_counted_by_event_type_verdict_rejection_and_duplicate() -> None:
    referee = Referee()
    lines = [line for _, line in simulate(SimulationOptions(games=3, seed=2, foul_rate=0.1))]
    batch = [lines[0], lines[0], b"{not json", *lines[1:]]  # a duplicate and an unreadable
    processed = [
        (None, referee.process(line, FileSource("log", n))) for n, line in enumerate(batch, 1)
    ]
    metrics = Metrics()
    metrics.count_batch(processed)
    value = metrics.registry.get_sample_value

    results = [p for _, p in processed]
    played = sum(1 for p in results if p.event_type == "TilePlayed")
    verdicts = [v.__struct_config__.tag for p in results for v in p.verdicts]
    assert played > 10
    assert "RoundScored" in verdicts
    assert value("referee_events_consumed_total", {"type": "TilePlayed"}) == played
    assert value("referee_events_consumed_total", {"type": "unreadable"}) == 1
    assert value("referee_verdicts_total", {"type": "RoundScored"}) == verdicts.count("RoundScored")
    assert value("referee_rejections_total", {"reason": "malformed_json"}) == 1
    assert value("referee_duplicates_total") == 1
    total = sum(
        value("referee_events_consumed_total", {"type": kind}) or 0
        for kind in {p.event_type or "unreadable" for p in results}
    )
    assert total == len(batch)


def test_build_info_names_the_version_the_build_and_the_rules_revision() -> None:
    from importlib.metadata import version

    from referee.domain.revisions import NEWEST

    text = Metrics(revision="abc123").exposition().decode()
    line = (
        f'referee_build_info{{revision="abc123",rules_revision="{NEWEST}",'
        f'version="{version("referee")}"}} 1.0'
    )
    assert line in text.splitlines(), [x for x in text.splitlines() if "build_info" in x]
    pinned = Metrics(revision="abc123", rules_revision=7).registry.get_sample_value(
        "referee_build_info",
        {"version": version("referee"), "revision": "abc123", "rules_revision": "7"},
    )
    assert pinned == 1


UTC_NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def day_partitions(table: str, first: datetime, days: int) -> list[TimePartition]:
    """The legacy partition up to ``first``, then ``days`` partitions of a day."""
    found = [TimePartition(table, f"{table}_p_legacy", None, first)]
    for n in range(days):
        start = first + n * DAY
        found.append(TimePartition(table, f"{table}_p{start:%Y%m%d}t000000", start, start + DAY))
    return found


def test_the_time_partitions_gauges_say_how_far_ahead_how_old_and_how_many() -> None:
    metrics = Metrics()
    value = metrics.registry.get_sample_value
    assert value("referee_partitions_ahead_seconds", {"table": "journal"}) is None  # unread
    midnight = datetime(2026, 12, 1, tzinfo=UTC)
    partitions = day_partitions("journal", midnight, 8)  # up to 2026-12-09
    partitions += day_partitions("verdicts", midnight, 6)[2:]  # two archived, to 2026-12-07
    metrics.observe_partitions(partitions, UTC_NOW)

    assert value("referee_partitions_ahead_seconds", {"table": "journal"}) == 3.5 * 86400
    assert value("referee_partitions_ahead_seconds", {"table": "verdicts"}) == 1.5 * 86400
    # the legacy partition has no start: its age is counted from its end
    assert value("referee_oldest_partition_age_seconds", {"table": "journal"}) == 4.5 * 86400
    assert value("referee_oldest_partition_age_seconds", {"table": "verdicts"}) == 3.5 * 86400
    assert value("referee_live_partitions", {"table": "journal"}) == 9
    assert value("referee_live_partitions", {"table": "verdicts"}) == 5


async def test_a_failed_reading_of_the_partitions_is_counted_never_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = Settings(database_url=NOWHERE, group_id="g")
    engine = create_engine(NOWHERE)
    try:
        service = build(settings, engine).service
        value = service.metrics.registry.get_sample_value
        assert await service.check_partitions() is False  # nothing listens at NOWHERE
        assert value("referee_partition_check_errors_total") == 1

        async def read(_: object) -> tuple[datetime, list[TimePartition]]:
            return UTC_NOW, day_partitions("journal", datetime(2026, 12, 5, tzinfo=UTC), 3)

        monkeypatch.setattr(runtime, "read_partitions", read)
        assert await service.check_partitions() is True
        assert value("referee_partitions_ahead_seconds", {"table": "journal"}) == 2.5 * 86400
        assert value("referee_live_partitions", {"table": "journal"}) == 4

        async def broken(_: object) -> tuple[datetime, list[TimePartition]]:
            raise OSError("the database went away")

        monkeypatch.setattr(runtime, "read_partitions", broken)
        assert await service.check_partitions() is False
        assert value("referee_partition_check_errors_total") == 2
        # the gauges keep their last reading
        assert value("referee_partitions_ahead_seconds", {"table": "journal"}) == 2.5 * 86400
    finally:
        await engine.dispose()
