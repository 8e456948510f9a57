"""Prometheus metrics of the live referee (served on /metrics)."""

from __future__ import annotations

from collections import Counter as Counter_
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from referee.domain.errors import RejectionReason
from referee.processing.outcome import Outcome, Processed


class Metrics:
    """Every metric the service exports, on its own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
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
            "Time to process one batch, transaction included.",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
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
        self.consumer_lag = Gauge(
            "referee_consumer_lag",
            "Records behind the end of each input partition.",
            ["partition"],
            registry=r,
        )
        self.assigned = Gauge(
            "referee_assigned_partitions",
            "Input partitions owned by this instance.",
            registry=r,
        )

    def count_batch(self, batch: Iterable[Processed]) -> None:
        """Counts a batch of processed records (one increment per label, not per record)."""
        events: Counter_[str] = Counter_()
        verdicts: Counter_[str] = Counter_()
        rejections: Counter_[str] = Counter_()
        duplicates = quarantined = 0
        for p in batch:
            events[p.event_type or "unreadable"] += 1
            if p.outcome is Outcome.DUPLICATE:
                duplicates += 1
            elif p.rejection is not None:
                rejections[p.rejection.reason.value] += 1
                quarantined += p.rejection.reason is RejectionReason.INTERNAL_ERROR
            for v in p.verdicts:
                verdicts[v.__struct_config__.tag] += 1  # type: ignore[index]
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
