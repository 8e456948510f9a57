"""Prometheus metrics of the live referee (served on /metrics)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version

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

from referee.contracts.verdicts import VERDICTS
from referee.contracts.wire import INPUT_EVENTS
from referee.domain.errors import RejectionReason
from referee.domain.revisions import NEWEST
from referee.processing.outcome import Outcome, Processed
from referee.service.bounded_uvicorn import Rejected
from referee.store.partitions import FAILED, LOCK_TIMEOUT, MADE, TimePartition

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


def package_version() -> str:
    """Returns the installed referee's version (``unknown`` from a bare source tree)."""
    try:
        return version("referee")
    except PackageNotFoundError:
        return "unknown"


class Metrics:
    """Every metric the service exports, on its own registry."""

    def __init__(
        self,
        *,
        revision: str = "unknown",
        rules_revision: int = NEWEST,
        topics: Iterable[str] = (),
    ) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        # process (CPU, memory, file descriptors), platform and garbage-collector metrics;
        # the default registry's own collectors stay there
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        self.build_info = Gauge(
            "referee_build_info",
            "1, labelled with the referee's version, the source revision of its build and the "
            "rules revision it gives new games.",
            ["version", "revision", "rules_revision"],
            registry=r,
        )
        self.build_info.labels(package_version(), revision, str(rules_revision)).set(1)
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
            "outbox (its partition's publisher publishes them from there).",
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
            "Time of each stage of the live path, per batch or per publisher transaction: "
            "decode, load, judge, rows, wait, copy, commit (the step); arrival, fetch_wait, "
            "offset_commit (the consumer); relay_wake, relay_read, relay_send, relay_commit "
            "(the publishers).",
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
            "Outbox rows committed by this instance's partitions and not yet published, by "
            "outbox (what its publishers hold; a publisher reading the store catches up).",
            ["outbox"],
            registry=r,
        )
        self.relay_oldest_unpublished = Gauge(
            "referee_relay_oldest_unpublished_seconds",
            "Age of the oldest outbox row this instance's publishers hold unpublished, by outbox.",
            ["outbox"],
            registry=r,
        )
        self.relay_partitions = Gauge(
            "referee_relay_partitions",
            "Input partitions whose outboxes this instance publishes (the partitions it owns).",
            registry=r,
        )
        self.published = Counter(
            "referee_published",
            "Messages published by this instance's publishers, by topic.",
            ["topic"],
            registry=r,
        )
        self.relay_transactions = Counter(
            "referee_relay_transactions",
            "Kafka transactions of this instance's publishers, by outcome (committed or aborted).",
            ["outcome"],
            registry=r,
        )
        self.partition_refused = Gauge(
            "referee_partition_refused",
            "1 for each owned input partition the referee refuses to judge now, by reason: "
            "input_gone (input it needs was deleted before it processed it), input_recreated "
            "(the input partition is not the one the store processed).",
            ["partition", "reason"],
            registry=r,
        )
        self.store_behind = Counter(
            "referee_store_behind",
            "Partitions taken whose output topics held records of input the store had not "
            "processed (the store lost commits): that input is judged again, and only what "
            "the topics lack is published.",
            registry=r,
        )
        self.already_published = Counter(
            "referee_already_published_rows",
            "Outbox rows not sent because their input record's rows were on the topic already "
            "(judged again after the store lost commits), by outbox.",
            ["outbox"],
            registry=r,
        )
        self.withheld = Counter(
            "referee_withheld_rows",
            "Outbox rows the broker refused for good (too large for the topic, say): kept in "
            "the store and recorded in withheld_rows, not published; by outbox.",
            ["outbox"],
            registry=r,
        )
        self.partitions_lost = Counter(
            "referee_partitions_lost",
            "Owned partitions given up because another owner took them (its term newer).",
            registry=r,
        )
        self.publishers_failing = Gauge(
            "referee_publishers_failing",
            "Publishers of this instance whose last try to publish failed (they retry).",
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
        # The store's time partitions (migration 0010), read every minute; no series until
        # the first reading (a 0 would read as "no partition ahead").
        self.partitions_ahead = Gauge(
            "referee_partitions_ahead_seconds",
            "How far past the database's clock each partitioned table's time partitions "
            "reach: the end of its newest partition less now (negative: rows would find no "
            "partition).",
            ["table"],
            registry=r,
        )
        self.oldest_partition_age = Gauge(
            "referee_oldest_partition_age_seconds",
            "Age of each partitioned table's oldest time partition still in PostgreSQL: now "
            "less its start; for the legacy partition (the rows of before migration 0010, "
            "which has no start), now less its end, the moment it may be archived from.",
            ["table"],
            registry=r,
        )
        self.live_partitions = Gauge(
            "referee_live_partitions",
            "Time partitions attached to each partitioned table (the legacy one included).",
            ["table"],
            registry=r,
        )
        self.ops_rejected = Counter(
            "referee_ops_rejected",
            "Clients of the operations port closed or refused, by reason: timeout (no request "
            "answered within REFEREE_HTTP_REQUEST_SECONDS), evicted (closed while waiting, for a "
            "newcomer past REFEREE_HTTP_MAX_CLIENTS), refused (a newcomer while every other "
            "connection was being answered), malformed (400), too_large (a request head over "
            "8 KiB, 431).",
            ["reason"],
            registry=r,
        )
        self.ops_connections = Gauge(
            "referee_ops_connections",
            "Connections the operations port holds: at most REFEREE_HTTP_MAX_CLIENTS once the "
            "event loop has read what a burst of new connections sent.",
            registry=r,
        )
        self.partition_check_errors = Counter(
            "referee_partition_check_errors",
            "Readings of the store's time partitions that failed (the partition gauges keep "
            "their last reading).",
            registry=r,
        )
        self.partition_making = Counter(
            "referee_partition_making",
            "Tries of the time partitions' maker, by outcome: made (a round made the "
            "partitions ahead, or found none missing), lock_timeout (a try whose lock was not "
            "free within its bounded wait: tried again), failed (a round that failed, its "
            "locks never free or the database away: tried again later).",
            ["outcome"],
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
        for turned in Rejected:
            self.ops_rejected.labels(turned.value)
        for outcome in ("committed", "aborted"):
            self.relay_transactions.labels(outcome)
        for outbox in ("verdicts", "dead_letters"):
            self.relay_unpublished.labels(outbox)
            self.relay_oldest_unpublished.labels(outbox)
            self.already_published.labels(outbox)
            self.withheld.labels(outbox)
        for topic in topics:
            self.published.labels(topic)
        for outcome in (MADE, LOCK_TIMEOUT, FAILED):
            self.partition_making.labels(outcome)

    def exposition(self) -> bytes:
        """Renders /metrics."""
        return generate_latest(self.registry)

    def observe_stage(self, stage: str, seconds: float) -> None:
        """Records how long one stage of the live path took."""
        self.stage_seconds.labels(stage).observe(seconds)

    def observe_partitions(self, partitions: Iterable[TimePartition], now: datetime) -> None:
        """Sets the time partitions' gauges from the attached partitions and the database's
        clock: per table, how far its newest partition reaches past ``now``, the age of its
        oldest (the legacy partition, without a start, by its end) and how many it has."""
        newest: dict[str, datetime] = {}
        oldest: dict[str, datetime] = {}
        count: dict[str, int] = {}
        for p in partitions:
            if p.table not in newest or p.upper > newest[p.table]:
                newest[p.table] = p.upper
            start = p.lower if p.lower is not None else p.upper
            if p.table not in oldest or start < oldest[p.table]:
                oldest[p.table] = start
            count[p.table] = count.get(p.table, 0) + 1
        for table, upper in newest.items():
            self.partitions_ahead.labels(table).set((upper - now).total_seconds())
            self.oldest_partition_age.labels(table).set((now - oldest[table]).total_seconds())
            self.live_partitions.labels(table).set(count[table])

    def count_partition_making(self, outcome: str) -> None:
        """Counts one try of the time partitions' maker."""
        self.partition_making.labels(outcome).inc()

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
