"""Prometheus metrics of the live referee (served on /metrics)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

from referee.contracts.verdicts import VERDICTS
from referee.contracts.wire import INPUT_EVENTS
from referee.domain.errors import RejectionReason
from referee.processing.outcome import Outcome, Processed

RELAY_FAMILIES = frozenset(
    {
        "referee_relay_unpublished_rows",
        "referee_relay_oldest_unpublished_seconds",
        "referee_relay_leader",
        "referee_published",
        "referee_relay_transactions",
        "referee_stage_seconds",
    }
)
"""The metric families the relay writes: a relay process sends these to its instance."""
RELAY_STAGE_PREFIX = "relay_"
"""Of ``referee_stage_seconds``, the relay's stages are those named ``relay_...``."""

RemoteFamily = list[Any]
"""One metric family as a relay process sends it (JSON): name, help, type, unit, and its
samples as [name, labels, value]."""

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


def package_version() -> str:
    """Returns the installed referee's version (``unknown`` from a bare source tree)."""
    try:
        return version("referee")
    except PackageNotFoundError:
        return "unknown"


class Metrics:
    """Every metric the service exports, on its own registry."""

    def __init__(self, *, revision: str = "unknown", topics: Iterable[str] = ()) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        # process (CPU, memory, file descriptors), platform and garbage-collector metrics;
        # the default registry's own collectors stay there
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        self.build_info = Gauge(
            "referee_build_info",
            "1, labelled with the referee's version and the source revision of its build.",
            ["version", "revision"],
            registry=r,
        )
        self.build_info.labels(package_version(), revision).set(1)
        self.events = Counter(
            "referee_events_consumed",
            "Input records consumed, by event type.",
            ["type"],
            registry=r,
        )
        self.verdicts = Counter(
            "referee_verdicts", "Verdicts produced, by type.", ["type"], registry=r
        )
        self.rejections = Counter(
            "referee_rejections",
            "Input rejected to the dead-letter topic, by reason.",
            ["reason"],
            registry=r,
        )
        self.duplicates = Counter(
            "referee_duplicates", "Input records ignored as duplicates.", registry=r
        )
        self.quarantined = Counter(
            "referee_quarantined",
            "Input records the referee failed on, quarantined as internal_error.",
            registry=r,
        )
        self.batch_seconds = Histogram(
            "referee_batch_seconds",
            "Time from receiving a batch to its transaction's commit.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.event_to_verdict = Histogram(
            "referee_event_to_verdict_seconds",
            "Time from an input record's Kafka timestamp to the commit of its verdicts in the "
            "outbox (the relay publishes them from there).",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.last_batch = Gauge(
            "referee_last_batch_timestamp_seconds",
            "Unix time at which a batch last committed.",
            registry=r,
        )
        self.stage_seconds = Histogram(
            "referee_stage_seconds",
            "Time of each stage of the live path, per batch or per relay pump: decode, load, "
            "judge, rows, wait, copy, commit (the step); arrival, fetch_wait, offset_commit "
            "(the consumer); relay_wake, relay_read, relay_send, relay_commit (the relay).",
            ["stage"],
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
            registry=r,
        )
        self.rebalances = Counter(
            "referee_rebalances",
            "Rebalances of the consumer group that moved partitions to or from this instance.",
            registry=r,
        )
        self.batch_errors = Counter(
            "referee_batch_errors", "Batches that failed and were retried.", registry=r
        )
        self.relay_unpublished = Gauge(
            "referee_relay_unpublished_rows",
            "Outbox rows committed but not yet published, by outbox (on the leading relay; "
            "0 on the others).",
            ["outbox"],
            registry=r,
        )
        self.relay_oldest_unpublished = Gauge(
            "referee_relay_oldest_unpublished_seconds",
            "Age of the oldest outbox row not yet published, by outbox (on the leading relay; "
            "0 on the others).",
            ["outbox"],
            registry=r,
        )
        self.relay_leader = Gauge(
            "referee_relay_leader", "1 while this instance's relay leads, else 0.", registry=r
        )
        self.published = Counter(
            "referee_published",
            "Messages published by the relay, by topic.",
            ["topic"],
            registry=r,
        )
        self.relay_transactions = Counter(
            "referee_relay_transactions",
            "Kafka transactions of the relay, by outcome (committed or aborted).",
            ["outcome"],
            registry=r,
        )
        self.relay_restarts = Counter(
            "referee_relay_restarts",
            "Times the relay's process exited and was started again (REFEREE_RELAY_PROCESS).",
            registry=r,
        )
        self.consumer_lag = Gauge(
            "referee_consumer_lag",
            "Records behind the end of each input partition this instance owns.",
            ["topic", "partition"],
            registry=r,
        )
        self.assigned = Gauge(
            "referee_assigned_partitions",
            "Input partitions owned by this instance.",
            registry=r,
        )

        # Every label known in advance starts at 0: a rate then reads 0, not "no data".
        for cls in INPUT_EVENTS:
            self.events.labels(cls.__struct_config__.tag)
        self.events.labels("unreadable")
        for verdict in VERDICTS:
            self.verdicts.labels(verdict.__struct_config__.tag)
        for reason in RejectionReason:
            self.rejections.labels(reason.value)
        for outcome in ("committed", "aborted"):
            self.relay_transactions.labels(outcome)
        for outbox in ("verdicts", "dead_letters"):
            self.relay_unpublished.labels(outbox)
            self.relay_oldest_unpublished.labels(outbox)
        for topic in topics:
            self.published.labels(topic)
        self.relay_leader.set(0)

    def observe_stage(self, stage: str, seconds: float) -> None:
        """Records how long one stage of the live path took."""
        self.stage_seconds.labels(stage).observe(seconds)

    def forget_partition(self, topic: str, partition: int) -> None:
        """Drops the series of a partition this instance no longer owns."""
        with contextlib.suppress(KeyError):  # never measured while it was owned
            self.consumer_lag.remove(topic, str(partition))

    def count_batch(self, batch: Iterable[tuple[object, Processed]]) -> None:
        """Counts a batch of (record, processed) pairs: one increment per label, not per
        record (the counting is written for the live path: a dict's ``get`` rather than a
        Counter's ``+=``, the verdicts looked at only when there are some)."""
        events: dict[str, int] = {}
        verdicts: dict[str, int] = {}
        rejections: dict[str, int] = {}
        duplicates = quarantined = 0
        duplicate = Outcome.DUPLICATE
        internal = RejectionReason.INTERNAL_ERROR
        for _, p in batch:
            kind = p.event_type or "unreadable"
            events[kind] = events.get(kind, 0) + 1
            if p.outcome is duplicate:
                duplicates += 1
            elif (rejection := p.rejection) is not None:
                reason = rejection.reason
                rejections[reason.value] = rejections.get(reason.value, 0) + 1
                quarantined += reason is internal
            if p.verdicts:
                for v in p.verdicts:
                    tag: str = v.__struct_config__.tag  # type: ignore[assignment]
                    verdicts[tag] = verdicts.get(tag, 0) + 1
        for name, n in events.items():
            self.events.labels(name).inc(n)
        for name, n in verdicts.items():
            self.verdicts.labels(name).inc(n)
        for name, n in rejections.items():
            self.rejections.labels(name).inc(n)
        if duplicates:
            self.duplicates.inc(duplicates)
        if quarantined:
            self.quarantined.inc(quarantined)


def relay_families(registry: CollectorRegistry) -> list[RemoteFamily]:
    """Returns the relay's metric families of ``registry``, as a relay process sends them."""
    families: list[RemoteFamily] = []
    for family in registry.collect():
        if family.name not in RELAY_FAMILIES:
            continue
        samples = [
            [s.name, s.labels, s.value]
            for s in family.samples
            if family.name != "referee_stage_seconds"
            or s.labels.get("stage", "").startswith(RELAY_STAGE_PREFIX)
        ]
        families.append([family.name, family.documentation, family.type, family.unit, samples])
    return families


class Merged(Collector):
    """The instance's families, with the relay process's samples in place of its own.

    A sample of the relay (same family, name and labels) replaces the instance's, which in
    a process of its own stays at its start value (``referee_relay_leader`` 0, the counters
    0); a sample the instance lacks (a relay stage) is added to its family.
    """

    def __init__(self, registry: CollectorRegistry, remote: list[RemoteFamily]) -> None:
        self.registry = registry
        self.remote = {f[0]: f for f in remote if f and f[0] in RELAY_FAMILIES}

    def collect(self) -> Iterator[Metric]:
        for family in self.registry.collect():
            theirs = self.remote.get(family.name)
            if theirs is None:
                yield family
                continue
            samples = {(s.name, tuple(sorted(s.labels.items()))): s for s in family.samples}
            for name, labels, value in theirs[4]:
                samples[(name, tuple(sorted(labels.items())))] = Sample(name, labels, value)
            merged = Metric(family.name, family.documentation, family.type, family.unit)
            merged.samples = list(samples.values())
            yield merged


def exposition(registry: CollectorRegistry, remote: list[RemoteFamily]) -> bytes:
    """Returns /metrics: the instance's families merged with a relay process's."""
    if not remote:
        return generate_latest(registry)
    merged = CollectorRegistry(auto_describe=False)
    merged.register(Merged(registry, remote))
    return generate_latest(merged)


class _Families(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)


def labelled(expositions: dict[int, str], label: str = "consumer") -> bytes:
    """Returns one /metrics of several processes' own: each family once, with every
    process's samples in it, each labelled ``label="<the process's index>"``."""
    families: dict[str, Metric] = {}
    for index, text in sorted(expositions.items()):
        for family in text_string_to_metric_families(text):
            merged = families.get(family.name)
            if merged is None:
                merged = Metric(family.name, family.documentation, family.type, family.unit)
                families[family.name] = merged
            merged.samples.extend(
                Sample(s.name, {**s.labels, label: str(index)}, s.value, s.timestamp, s.exemplar)
                for s in family.samples
            )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(list(families.values())))
    return generate_latest(registry)
