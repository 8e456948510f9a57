"""``referee serve``: the FastStream application around the processing step.

It consumes the game-event topic in batches as one consumer group, feeds each batch to the
processing step (one transaction), and runs the relay that publishes the verdict and
dead-letter outboxes. Offsets belong to the database: on every assignment the consumer seeks
to the stored position + 1; Kafka's committed offsets are written for lag monitoring only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.structs import ConsumerRecord
from faststream import AckPolicy, FastStream
from faststream.kafka import KafkaBroker
from faststream.kafka.annotations import KafkaMessage
from faststream.message import StreamMessage
from faststream.security import BaseSecurity, SASLPlaintext, SASLScram256, SASLScram512
from sqlalchemy.ext.asyncio import AsyncEngine

from referee.contracts.rejection import KafkaSource
from referee.processing.step import InputRecord, PositionMoved, ProcessingStep
from referee.service.http import OpsServer
from referee.service.metrics import Metrics
from referee.service.relay import MakeProducer, Outbox, OutboxRelay, TopicTails
from referee.service.settings import Settings
from referee.store.database import ping
from referee.store.relay_store import PostgresRelayStore
from referee.store.step_store import PostgresStepStore

log = logging.getLogger("referee.serve")

RELAY_STOP_SECONDS = 15.0


def kafka_security(settings: Settings) -> BaseSecurity | None:
    """Returns FastStream's security object for the configured SASL/SSL settings.

    The settings are validated (``Settings``): a SASL protocol has a mechanism, a client
    certificate comes with its key and a TLS protocol. With a client certificate the TLS
    context presents it (mutual TLS, e.g. a Strimzi ``KafkaUser`` of type ``tls``), alone
    with ``SSL`` or beside SASL with ``SASL_SSL``.
    """
    protocol = settings.kafka_security_protocol
    if protocol == "PLAINTEXT":
        return None
    context = None
    if protocol in ("SSL", "SASL_SSL"):
        context = settings.kafka_ssl_context()
    if protocol == "SSL":
        return BaseSecurity(ssl_context=context, use_ssl=True)
    kinds: dict[str, type[SASLPlaintext | SASLScram256 | SASLScram512]] = {
        "PLAIN": SASLPlaintext,
        "SCRAM-SHA-256": SASLScram256,
        "SCRAM-SHA-512": SASLScram512,
    }
    return kinds[settings.kafka_sasl_mechanism](
        username=settings.kafka_sasl_username,
        password=settings.kafka_sasl_password.get_secret_value(),
        ssl_context=context,
        use_ssl=protocol == "SASL_SSL",
    )


def consumer_options(settings: Settings, security: BaseSecurity | None) -> dict[str, Any]:
    """Returns aiokafka connection options matching the broker's (tail reader, relay)."""
    options: dict[str, Any] = {"bootstrap_servers": settings.kafka_bootstrap_servers}
    if security is None:
        return options
    protocol = settings.kafka_security_protocol
    options["security_protocol"] = protocol
    if security.ssl_context is not None:
        options["ssl_context"] = security.ssl_context  # the client certificate included
    if protocol.startswith("SASL"):
        options["sasl_mechanism"] = settings.kafka_sasl_mechanism
        options["sasl_plain_username"] = settings.kafka_sasl_username
        options["sasl_plain_password"] = settings.kafka_sasl_password.get_secret_value()
    return options


def relay_producer(settings: Settings, security: BaseSecurity | None) -> MakeProducer:
    """Returns a maker of the relay's transactional producers (one per leadership term)."""
    options = consumer_options(settings, security)

    def make() -> AIOKafkaProducer:
        return AIOKafkaProducer(
            transactional_id=settings.relay_transactional_id,
            acks="all",
            linger_ms=5,
            client_id="referee-relay",
            **options,
        )

    return make


@dataclass(slots=True)
class Service:
    """The parts of a running referee, for the hooks, health checks and tests."""

    settings: Settings
    engine: AsyncEngine
    broker: KafkaBroker
    step: ProcessingStep
    relay: OutboxRelay
    metrics: Metrics
    ops: OpsServer | None = None
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    assigned: set[TopicPartition] = field(default_factory=set)
    consumer: AIOKafkaConsumer | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    subscriber: Any = None

    def subscriber_consumer(self) -> AIOKafkaConsumer:
        """Returns the subscriber's aiokafka consumer (it exists before it joins the group)."""
        consumer: AIOKafkaConsumer | None = getattr(self.subscriber, "consumer", None)
        if consumer is None:
            raise RuntimeError("the subscriber has no consumer yet")
        return consumer

    async def readiness(self) -> tuple[bool, str]:
        """Checks PostgreSQL, Kafka and the assignment; says what is missing."""
        problems = []
        try:
            async with asyncio.timeout(2):
                await ping(self.engine)
        except Exception as exc:  # noqa: BLE001 - any failure means not ready
            problems.append(f"postgresql unreachable: {exc.__class__.__name__}")
        if self.consumer is None:
            problems.append("kafka consumer not started")
        elif not self.assigned:
            problems.append("no partitions assigned")
        return (not problems, "; ".join(problems) or "ready")


class PositionListener(ConsumerRebalanceListener):  # type: ignore[misc]
    """Seeks every newly assigned partition to its stored position + 1."""

    def __init__(self, service: Service) -> None:
        self.service = service

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """Forgets the partitions and the cached games (they may move elsewhere)."""
        service = self.service
        service.assigned -= set(revoked)
        await service.step.forget_partitions({(tp.topic, tp.partition) for tp in revoked})
        service.metrics.assigned.set(len(service.assigned))
        if revoked:
            log.info(
                "partitions revoked", extra={"partitions": sorted(tp.partition for tp in revoked)}
            )

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        """Seeks each partition to where the store says processing ended."""
        service = self.service
        consumer = service.consumer = service.subscriber_consumer()
        by_topic: dict[str, list[int]] = {}
        for tp in assigned:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        for topic, partitions in by_topic.items():
            stored = await _retrying(
                lambda t=topic, p=partitions: service.step.load_positions(t, p)
            )
            for partition in partitions:
                tp = TopicPartition(topic, partition)
                if partition in stored:
                    consumer.seek(tp, stored[partition] + 1)
                else:
                    await consumer.seek_to_beginning(tp)
        service.assigned |= set(assigned)
        service.metrics.assigned.set(len(service.assigned))
        log.info(
            "partitions assigned",
            extra={"partitions": sorted(tp.partition for tp in assigned)},
        )


async def _retrying(make: Any, attempts: int = 30) -> Any:
    delay = 0.2
    for attempt in range(attempts):
        try:
            return await make()
        except Exception:
            if attempt == attempts - 1:
                raise
            log.warning("database not reachable; retrying", extra={"retry_in_seconds": delay})
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
    return None


async def _raw_batch(message: StreamMessage[Any]) -> Any:
    """Skips FastStream's decoding: the handler reads the raw records, the edge validates."""
    return message.body


def build(settings: Settings, engine: AsyncEngine) -> tuple[FastStream, Service]:
    """Wires the broker, the subscriber, the publishers, the relay and the ops server."""
    security = kafka_security(settings)
    broker = KafkaBroker(
        settings.kafka_bootstrap_servers,
        logger=logging.getLogger("referee.kafka"),
        log_level=logging.DEBUG,
        security=security,
        graceful_timeout=30.0,
        client_id="referee",
    )
    metrics = Metrics()
    step = ProcessingStep(
        PostgresStepStore(engine),
        settings.group_id,
        max_event_bytes=settings.max_event_bytes,
        cache_games=settings.cache_games,
    )
    # The publishers describe the output topics in the AsyncAPI document; the relay publishes
    # through its own transactional producer (relay_producer), not through them.
    broker.publisher(
        settings.verdict_topic,
        title="domino.referee-verdicts",
        description="Verdicts (FoulRecorded, BlockDeclared, RoundScored, GameWon), keyed by "
        "game id, in outbox order, in Kafka transactions: read with "
        "isolation.level=read_committed. Header outbox-position: the verdict's outbox position.",
    )
    broker.publisher(
        settings.dlq_topic,
        title="domino.game-events.dlq",
        description="EventRejected for every input that could not be judged, keyed by the "
        "input key, in Kafka transactions: read with isolation.level=read_committed.",
    )
    relay = OutboxRelay(
        PostgresRelayStore(engine),
        [
            Outbox("verdicts", settings.verdict_topic),
            Outbox("dead_letters", settings.dlq_topic),
        ],
        relay_producer(settings, security),
        TopicTails(consumer_options(settings, security)),
        metrics,
    )
    service = Service(settings, engine, broker, step, relay, metrics)
    service.ops = OpsServer(settings.http_host, settings.http_port, metrics, service.readiness)
    subscriber = broker.subscriber(
        settings.input_topic,
        group_id=settings.group_id,
        batch=True,
        max_records=settings.batch_size,
        batch_timeout_ms=settings.batch_linger_ms,
        auto_offset_reset="earliest",
        session_timeout_ms=settings.kafka_session_timeout_ms,
        heartbeat_interval_ms=max(300, settings.kafka_session_timeout_ms // 5),
        ack_policy=AckPolicy.MANUAL,
        decoder=_raw_batch,
        listener=PositionListener(service),
        title="domino.game-events",
        description="Input events from the game backends (GameStarted, RoundStarted, "
        "TilePlayed, TileDrawn, Passed), keyed by game id.",
    )

    service.subscriber = subscriber

    @subscriber
    async def referee_batch(message: KafkaMessage) -> None:
        """Referees one batch of input records in one transaction."""
        service.consumer = subscriber.consumer
        records: tuple[ConsumerRecord[bytes, bytes], ...] = message.raw_message
        await handle_batch(service, records)

    app = FastStream(broker, logger=logging.getLogger("referee.app"))

    @app.on_startup
    async def start_ops() -> None:
        assert service.ops is not None
        await service.ops.start()

    @app.after_startup
    async def start_relay() -> None:
        service.consumer = subscriber.consumer
        service.tasks.append(asyncio.create_task(service.relay.run(service.stopping)))
        service.tasks.append(asyncio.create_task(_watch_lag(service)))

    @app.on_shutdown
    async def stop_everything() -> None:
        service.stopping.set()
        # The relay ends its term between two pumps: the transaction in hand commits
        # before the lock goes (cancelled later, it aborts instead).
        if service.tasks:
            await asyncio.wait(service.tasks[:1], timeout=RELAY_STOP_SECONDS)
        for task in service.tasks:
            task.cancel()
        for task in service.tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @app.after_shutdown
    async def close() -> None:
        if service.ops is not None:
            await service.ops.stop()
        await engine.dispose()
        log.info("stopped")

    return app, service


async def handle_batch(service: Service, records: tuple[ConsumerRecord[bytes, bytes], ...]) -> None:
    """Processes a batch; on failure re-seeks to the stored positions after a pause."""
    batch = [
        InputRecord(
            r.value or b"",
            r.topic,
            r.partition,
            r.offset,
            KafkaSource(r.topic, r.partition, r.offset),
            r.key,
        )
        for r in records
    ]
    if not batch:
        return
    started = time.perf_counter()
    consumer = service.consumer
    try:
        result = await service.step.process(batch)
    except PositionMoved as moved:
        log.warning("partition moved on; re-seeking", extra={"detail": str(moved)})
        if consumer is not None:
            consumer.seek(TopicPartition(moved.topic, moved.partition), moved.stored + 1)
        return
    except Exception:
        service.metrics.batch_errors.inc()
        log.exception("batch failed; will retry from the stored positions")
        await asyncio.sleep(1.0)
        if consumer is not None:
            for topic, partition in {(r.topic, r.partition) for r in batch}:
                stored = service.step.positions.get((topic, partition), -1)
                tp = TopicPartition(topic, partition)
                if tp in service.assigned:
                    consumer.seek(tp, stored + 1)
        return
    service.metrics.batch_seconds.observe(time.perf_counter() - started)
    service.metrics.count_batch(p for _, p in result.processed)
    service.relay.wake.set()
    if consumer is not None:
        offsets = {
            TopicPartition(t, p): o + 1
            for (t, p), o in service.step.positions.items()
            if TopicPartition(t, p) in service.assigned and o >= 0
        }
        with contextlib.suppress(Exception):  # lag monitoring only: never fatal
            await consumer.commit(offsets)


async def _watch_lag(service: Service) -> None:
    while not service.stopping.is_set():
        await asyncio.sleep(5)
        consumer = service.consumer
        if consumer is None:
            continue
        for tp in list(service.assigned):
            with contextlib.suppress(Exception):
                high = consumer.highwater(tp)
                position = service.step.positions.get((tp.topic, tp.partition), -1) + 1
                if high is not None:
                    service.metrics.consumer_lag.labels(str(tp.partition)).set(high - position)
        try:
            backlog = await service.relay.backlog()
        except Exception:
            log.warning("relay backlog not read", exc_info=True)
            continue
        for outbox in service.relay.outboxes:
            known = backlog.get(outbox.name)
            service.metrics.relay_unpublished.labels(outbox.name).set(known.rows if known else 0)
            service.metrics.relay_oldest_unpublished.labels(outbox.name).set(
                known.oldest_seconds if known else 0
            )
