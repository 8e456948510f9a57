"""A relay process's metric families merged into its instance's /metrics."""

from __future__ import annotations

import json

from prometheus_client.parser import text_string_to_metric_families

from referee.service.metrics import (
    RELAY_FAMILIES,
    Metrics,
    exposition,
    labelled,
    relay_families,
)


def parsed(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def test_the_relay_sends_its_families_and_only_its_stages() -> None:
    relay = Metrics(topics=("verdicts-topic",))
    relay.observe_stage("relay_send", 0.002)
    relay.observe_stage("judge", 0.5)  # not the relay's: never sent
    sent = json.loads(json.dumps(relay_families(relay.registry)))
    names = {family[0] for family in sent}
    assert names == RELAY_FAMILIES
    assert {"referee_relay_leader", "referee_published", "referee_stage_seconds"} <= names
    assert "referee_events_consumed" not in names, "the instance's own"
    (stages,) = [family for family in sent if family[0] == "referee_stage_seconds"]
    assert {labels["stage"] for _, labels, _ in stages[4]} == {"relay_send"}


def test_the_relay_processes_samples_replace_the_instances_and_add_its_stages() -> None:
    instance = Metrics(topics=("verdicts-topic",))
    instance.observe_stage("judge", 0.003)
    instance.events.labels("TilePlayed").inc(7)
    relay = Metrics(topics=("verdicts-topic",))
    relay.relay_leader.set(1)
    relay.published.labels("verdicts-topic").inc(42)
    relay.relay_transactions.labels("committed").inc(3)
    relay.observe_stage("relay_commit", 0.004)

    merged = parsed(exposition(instance.registry, relay_families(relay.registry)))

    assert merged[("referee_relay_leader", ())] == 1.0
    assert merged[("referee_published_total", (("topic", "verdicts-topic"),))] == 42.0
    assert merged[("referee_relay_transactions_total", (("outcome", "committed"),))] == 3.0
    assert merged[("referee_stage_seconds_count", (("stage", "relay_commit"),))] == 1.0
    assert merged[("referee_stage_seconds_count", (("stage", "judge"),))] == 1.0
    assert merged[("referee_events_consumed_total", (("type", "TilePlayed"),))] == 7.0


def test_without_a_relay_process_the_instances_own_families_are_served() -> None:
    instance = Metrics()
    instance.relay_leader.set(1)
    assert parsed(exposition(instance.registry, []))[("referee_relay_leader", ())] == 1.0


def test_a_family_that_is_not_the_relays_is_not_taken_from_it() -> None:
    instance = Metrics()
    instance.events.labels("TilePlayed").inc(2)
    foreign = [
        [
            "referee_events_consumed",
            "x",
            "counter",
            "",
            [["referee_events_consumed_total", {"type": "TilePlayed"}, 99.0]],
        ]
    ]
    merged = parsed(exposition(instance.registry, foreign))
    assert merged[("referee_events_consumed_total", (("type", "TilePlayed"),))] == 2.0


def test_consumer_processes_metrics_are_one_exposition_labelled_by_process() -> None:
    first = Metrics(topics=("verdicts-topic",))
    first.events.labels("TilePlayed").inc(7)
    first.observe_stage("judge", 0.003)
    first.relay_leader.set(1)
    second = Metrics(topics=("verdicts-topic",))
    second.events.labels("TilePlayed").inc(5)
    second.events.labels("Passed").inc(2)
    texts = {
        0: exposition(first.registry, []).decode(),
        3: exposition(second.registry, []).decode(),
    }
    text = labelled(texts)
    got = parsed(text)
    assert got[("referee_events_consumed_total", (("consumer", "0"), ("type", "TilePlayed")))] == 7
    assert got[("referee_events_consumed_total", (("consumer", "3"), ("type", "TilePlayed")))] == 5
    assert got[("referee_events_consumed_total", (("consumer", "3"), ("type", "Passed")))] == 2
    assert got[("referee_relay_leader", (("consumer", "0"),))] == 1
    assert got[("referee_relay_leader", (("consumer", "3"),))] == 0
    judge = (("consumer", "0"), ("stage", "judge"))
    assert got[("referee_stage_seconds_count", judge)] == 1
    assert all(dict(labels).get("consumer") in ("0", "3") for _, labels in got)
    # each family is described once (a scraper refuses a second HELP or TYPE of a name)
    lines = text.decode().splitlines()
    helps = [line.split()[2] for line in lines if line.startswith("# HELP ")]
    assert len(helps) == len(set(helps))
    assert "referee_events_consumed_total" in helps
