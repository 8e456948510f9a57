"""Prometheus metrics of the live referee (served on /metrics)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from referee.processing.referee import Outcome, Processed


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
        self.batch_seconds = Histogram(
            "referee_batch_seconds",
            "Time to process one batch, transaction included.",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=r,
        )
        self.batch_errors = Counter(
            "referee_batch_errors", "Batches that failed and were retried.", registry=r
        )
        self.relay_lag = Gauge(
            "referee_relay_lag",
            "Outbox rows not yet published, by outbox.",
            ["outbox"],
            registry=r,
        )
        self.published = Counter(
            "referee_published",
            "Messages published by the relay, by topic.",
            ["topic"],
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

    def count(self, processed: Processed) -> None:
        """Counts one processed record."""
        if processed.event_type is not None:
            self.events.labels(processed.event_type).inc()
        else:
            self.events.labels("unreadable").inc()
        if processed.outcome is Outcome.DUPLICATE:
            self.duplicates.inc()
        elif processed.rejection is not None:
            self.rejections.labels(processed.rejection.reason.value).inc()
        for v in processed.verdicts:
            self.verdicts.labels(v.__struct_config__.tag).inc()
