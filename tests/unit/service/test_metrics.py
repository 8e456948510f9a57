"""The live path's counters count each record of a batch once, under its labels."""

from __future__ import annotations

from referee.contracts.rejection import FileSource
from referee.processing.referee import Referee
from referee.service.metrics import Metrics
from referee.simulate import SimulationOptions, simulate


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
