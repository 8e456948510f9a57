"""``referee serve``: the FastStream application around the processing step, composed.

One process, one job: the consumer of the game-event topic (one member of the group), the
processing step it feeds batch by batch (``batch.py``), and the publishers of the input
partitions it owns (``publisher.py``). Offsets belong to the database: on every assignment
the consumer seeks to the stored position + 1 (``listener.py``); Kafka's committed offsets
are written for lag monitoring only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from faststream import AckPolicy, FastStream
from faststream.kafka import KafkaBroker
from faststream.kafka.annotations import KafkaMessage
from faststream.kafka.prometheus import KafkaPrometheusMiddleware
from faststream.kafka.subscriber.usecase import BatchSubscriber
from faststream.message import StreamMessage
from faststream.security import BaseSecurity
from sqlalchemy.ext.asyncio import AsyncEngine

from referee.processing.step import ProcessingStep
from referee.service.assignor import StickyAssignor
from referee.service.batch import BatchHandler
from referee.service.http import OpsServer
from referee.service.kafka_options import consumer_options, kafka_security, publisher_producers
from referee.service.listener import PositionListener
from referee.service.metrics import Metrics
from referee.service.poll import without_idle_sleep
from referee.service.publisher import Outbox, Publishers, Publishing
from referee.service.runtime import Service
from referee.service.settings import Settings
from referee.service.tails import TopicTails
from referee.service.takeover import Preflight
from referee.store.outbox_store import PostgresOutboxStore
from referee.store.partitions import PartitionMaker
from referee.store.step_store import PostgresStepStore


def build(settings: Settings, engine: AsyncEngine) -> tuple[FastStream, Service]:
    """Composes the broker, the consumer, the step, the publishers and the ops server."""
    security = kafka_security(settings)
    metrics = Metrics(
        revision=settings.build_revision,
        rules_revision=settings.rules_revision,
        topics=(settings.verdict_topic, settings.dlq_topic),
    )
    broker = _broker(settings, security, metrics)
    publishing, preflight = _publishing(settings, security, engine, metrics)
    publishers = Publishers(publishing)
    maker = PartitionMaker(
        engine, settings.partition_policy, observe=metrics.count_partition_making
    )
    step = ProcessingStep(
        PostgresStepStore(engine, partitions=maker),
        settings.group_id,
        max_event_bytes=settings.max_event_bytes,
        cache_games=settings.cache_games,
        rules_revision=settings.rules_revision,
        on_appended=publishers.appended,
        observe=metrics.observe_stage,
    )
    service = Service(settings, engine, broker, step, publishers, metrics, partition_maker=maker)
    service.preflight = preflight
    service.ops = OpsServer(
        settings.http_host,
        settings.http_port,
        service.exposition,
        service.readiness,
        service.liveness,
    )
    handler = BatchHandler(service)
    step.on_committed = handler.committed
    subscriber = _subscriber(broker, settings, PositionListener(service))
    service.subscriber = subscriber

    @subscriber
    async def referee_batch(message: KafkaMessage) -> None:
        """Referees one batch of input records (pipelined with the batch before it)."""
        await handler(message.raw_message)

    app = FastStream(broker, logger=logging.getLogger("referee.app"))
    app.on_startup(service.start)
    app.after_startup(service.started)
    app.on_shutdown(service.stop)
    app.after_shutdown(service.closed)
    return app, service


def _broker(settings: Settings, security: BaseSecurity | None, metrics: Metrics) -> KafkaBroker:
    """The FastStream broker; its publishers describe the output topics in the AsyncAPI
    document (the partitions' publishers send through producers of their own)."""
    broker = KafkaBroker(
        settings.kafka_bootstrap_servers,
        logger=logging.getLogger("referee.kafka"),
        log_level=logging.DEBUG,
        security=security,
        graceful_timeout=30.0,
        client_id="referee",
        middlewares=[KafkaPrometheusMiddleware(registry=metrics.registry, app_name="referee")],
    )
    broker.publisher(
        settings.verdict_topic,
        title="domino.referee-verdicts",
        description="Verdicts (FoulRecorded, PointsScored, BlockDeclared, RoundScored, "
        "GameWon), keyed by game id, on the partition number of their input, in Kafka "
        "transactions: read with isolation.level=read_committed. Header outbox-position: the "
        "verdict's position in its input partition's outbox.",
    )
    broker.publisher(
        settings.dlq_topic,
        title="domino.game-events.dlq",
        description="EventRejected for every input that could not be judged, keyed by the "
        "input key, on the partition number of the input, in Kafka transactions: read with "
        "isolation.level=read_committed.",
    )
    return broker


def _subscriber(
    broker: KafkaBroker, settings: Settings, listener: PositionListener
) -> BatchSubscriber:
    """The batch subscriber of the input topic: one member of the consumer group."""
    subscriber = broker.subscriber(
        settings.input_topic,
        group_id=settings.group_id,
        group_instance_id=settings.kafka_group_instance_id or None,
        batch=True,
        max_records=settings.batch_size,
        batch_timeout_ms=settings.batch_linger_ms,
        auto_offset_reset="earliest",
        session_timeout_ms=settings.kafka_session_timeout_ms,
        heartbeat_interval_ms=settings.kafka_heartbeat_interval_ms,
        partition_assignment_strategy=_assignors(),
        ack_policy=AckPolicy.MANUAL,
        decoder=_raw_batch,
        listener=listener,
        title="domino.game-events",
        description="Input events from the game backends (GameStarted, RoundStarted, "
        "TilePlayed, TileDrawn, Passed), keyed by game id.",
    )
    without_idle_sleep(subscriber, settings.batch_linger_ms, settings.batch_size)
    return subscriber


def _assignors() -> Sequence[Any]:
    """One sticky, balanced assignor of the consumer's own, offered as the one protocol
    every release offers (assignor.py). FastStream types the strategies as classes; aiokafka
    calls only their methods, so an instance, which keeps its consumer's claim, will do."""
    return (StickyAssignor(),)


async def _raw_batch(message: StreamMessage[Any]) -> Any:
    """Skips FastStream's decoding: the handler reads the raw records, the edge validates."""
    return message.body


def _publishing(
    settings: Settings, security: BaseSecurity | None, engine: AsyncEngine, metrics: Metrics
) -> tuple[Publishing, Preflight]:
    """What the partitions' publishers share, and the checks and the takeover run before
    the consumer joins its group (on the same store, producers and tail reader)."""
    options = consumer_options(settings, security)
    store = PostgresOutboxStore(engine)
    tails = TopicTails(options)
    make_producer = publisher_producers(settings, security)
    publishing = Publishing(
        group_id=settings.group_id,
        topic=settings.input_topic,
        transactional_prefix=settings.relay_transactional_id,
        verdicts=Outbox("verdicts", settings.verdict_topic),
        dead_letters=Outbox("dead_letters", settings.dlq_topic),
        make_producer=make_producer,
        store=store,
        tails=tails,
        metrics=metrics,
    )
    preflight = Preflight(
        group_id=settings.group_id,
        input_topic=settings.input_topic,
        verdict_topic=settings.verdict_topic,
        dlq_topic=settings.dlq_topic,
        transactional_prefix=settings.relay_transactional_id,
        kafka_options=options,
        store=store,
        make_producer=make_producer,
        tails=tails,
    )
    return publishing, preflight
