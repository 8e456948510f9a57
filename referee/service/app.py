"""``referee serve``: the composition root (as cosmicpython's ``bootstrap``).

Every part is built once, in dependency order, and handed what it needs; nothing is wired
after it is made. One process, one job: the consumer of the game-event topic (one member of
the group), the processing step it feeds batch by batch (``batch.py``), the partitions it owns
from their take to their giving back (``partitions.py``: their terms, checks, publishers),
and the operations port. Offsets belong to the database: on every assignment the consumer
seeks to the stored position + 1; Kafka's committed offsets are written for lag monitoring.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

from aiokafka import AIOKafkaConsumer
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
from referee.service.batch import BatchHandler, Progress
from referee.service.http import OpsServer
from referee.service.kafka_options import consumer_options, kafka_security, publisher_producers
from referee.service.listener import PositionListener
from referee.service.metrics import Metrics
from referee.service.partitions import Owner, Partitions
from referee.service.patches import poll_without_idle_sleep, quicken_next_transaction
from referee.service.poll import Polls
from referee.service.publisher import Outbox, Publisher, Publishing
from referee.service.runtime import Service
from referee.service.settings import Settings
from referee.service.tails import TopicTails
from referee.service.takeover import Preflight
from referee.store.outbox_store import PostgresOutboxStore
from referee.store.partitions import PartitionMaker
from referee.store.step_store import PostgresStepStore


class Built(NamedTuple):
    """The running referee, composed."""

    app: FastStream
    broker: KafkaBroker
    subscriber: BatchSubscriber
    service: Service
    ops: OpsServer


def build(settings: Settings, engine: AsyncEngine) -> Built:
    """Composes the broker, the consumer, the step, the partitions and the ops server."""
    quicken_next_transaction()
    security = kafka_security(settings)
    options = consumer_options(settings, security)
    metrics = Metrics(
        revision=settings.build_revision,
        rules_revision=settings.rules_revision,
        topics=(settings.verdict_topic, settings.dlq_topic),
    )
    broker = _broker(settings, security, metrics)

    def consumer() -> AIOKafkaConsumer | None:
        # FastStream makes the group's consumer when the broker starts (the name is bound
        # below, before anything can call this)
        found: AIOKafkaConsumer | None = getattr(subscriber, "consumer", None)
        return found

    maker = PartitionMaker(
        engine, settings.partition_policy, observe=metrics.count_partition_making
    )
    step_store = PostgresStepStore(engine, partitions=maker)
    outbox_store = PostgresOutboxStore(engine)
    tails = TopicTails(options)
    make_producer = publisher_producers(settings, security)
    polls = Polls()
    progress = Progress(metrics, consumer)
    owner = Owner.of_this_process()
    publishing = Publishing(
        group_id=settings.group_id,
        topic=settings.input_topic,
        transactional_prefix=settings.relay_transactional_id,
        verdicts=Outbox("verdicts", settings.verdict_topic),
        dead_letters=Outbox("dead_letters", settings.dlq_topic),
        make_producer=make_producer,
        store=outbox_store,
        tails=tails,
        metrics=metrics,
    )
    publisher = Publisher(publishing, owner.instance, step_store)
    step = ProcessingStep(
        step_store,
        settings.group_id,
        max_event_bytes=settings.max_event_bytes,
        cache_games=settings.cache_games,
        rules_revision=settings.rules_revision,
        on_committed=progress.committed,
        on_appended=publisher.appended,
        observe=metrics.observe_stage,
        owned_only=True,
    )
    preflight = Preflight(
        group_id=settings.group_id,
        input_topic=settings.input_topic,
        verdict_topic=settings.verdict_topic,
        dlq_topic=settings.dlq_topic,
        transactional_prefix=settings.relay_transactional_id,
        kafka_options=options,
        store=outbox_store,
        make_producer=make_producer,
        tails=tails,
    )
    partitions = Partitions(
        group_id=settings.group_id,
        topic=settings.input_topic,
        owner=owner,
        step=step,
        store=step_store,
        publishing=publishing,
        publisher=publisher,
        preflight=preflight,
        metrics=metrics,
        consumer=consumer,
        polls=polls,
        ready_requires_partition=settings.ready_requires_partition,
    )
    service = Service(
        settings, engine, step, partitions, progress, metrics, consumer, partition_maker=maker
    )
    ops = OpsServer(
        settings.http_host,
        settings.http_port,
        service.exposition,
        service.readiness,
        service.liveness,
        max_clients=settings.http_max_clients,
        request_seconds=settings.http_request_seconds,
        rejected=metrics.ops_rejected,
        connections=metrics.ops_connections,
    )
    handler = BatchHandler(step, partitions, progress, metrics, polls, pipeline=settings.pipeline)
    subscriber = _subscriber(broker, settings, PositionListener(partitions), polls)

    @subscriber
    async def referee_batch(message: KafkaMessage) -> None:
        """Referees one batch of input records (pipelined with the batch before it)."""
        await handler(message.raw_message)

    app = FastStream(broker, logger=logging.getLogger("referee.app"))
    app.on_startup(ops.start)  # the probes answer from the first moment
    app.on_startup(service.start)
    app.after_startup(service.started)
    app.on_shutdown(service.stop)
    app.after_shutdown(service.closed)
    app.after_shutdown(ops.stop)
    return Built(app, broker, subscriber, service, ops)


def _broker(settings: Settings, security: BaseSecurity | None, metrics: Metrics) -> KafkaBroker:
    """The FastStream broker; its publishers describe the output topics in the AsyncAPI
    document (the instance's publisher sends through a producer of its own)."""
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
        "transactions: read with isolation.level=read_committed. Headers: outbox-position, "
        "the verdict's position in its input partition's outbox; input-offset, the offset "
        "of the input record that gave it.",
    )
    broker.publisher(
        settings.dlq_topic,
        title="domino.game-events.dlq",
        description="EventRejected for every input that could not be judged, keyed by the "
        "input key (its first 16 KiB, with the header key-cut giving the whole length when "
        "longer), on the partition number of the input, in Kafka transactions: read with "
        "isolation.level=read_committed. Headers as the verdicts'.",
    )
    return broker


def _subscriber(
    broker: KafkaBroker, settings: Settings, listener: PositionListener, polls: Polls
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
    poll_without_idle_sleep(subscriber, settings.batch_linger_ms, settings.batch_size, polls)
    return subscriber


def _assignors() -> Sequence[Any]:
    """One sticky, balanced assignor of the consumer's own, offered as the one protocol
    every release offers (assignor.py). FastStream types the strategies as classes; aiokafka
    calls only their methods, so an instance, which keeps its consumer's claim, will do."""
    return (StickyAssignor(),)


async def _raw_batch(message: StreamMessage[Any]) -> Any:
    """Skips FastStream's decoding: the handler reads the raw records, the edge validates."""
    return message.body
