"""``referee serve``: the FastStream application around the processing step, wired.

It consumes the game-event topic in batches as one consumer group, feeds each batch to the
processing step's pipeline (``batch.py``), and runs the relay that publishes the verdict and
dead-letter outboxes (``relay.py``): by default in a child process of its own
(``relay_process.py``, ``REFEREE_RELAY_PROCESS``), else on this event loop. Offsets belong
to the database: on every assignment the consumer seeks to the stored position + 1
(``listener.py``); Kafka's committed offsets are written for lag monitoring only.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Coroutine
from itertools import chain
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import ConsumerRecord
from faststream import AckPolicy, FastStream
from faststream.kafka import KafkaBroker
from faststream.kafka.annotations import KafkaMessage
from faststream.kafka.prometheus import KafkaPrometheusMiddleware
from faststream.message import StreamMessage
from sqlalchemy.ext.asyncio import AsyncEngine

from referee.processing.step import ProcessingStep
from referee.service.batch import BatchHandler
from referee.service.consumers import answer_instance
from referee.service.http import OpsServer
from referee.service.kafka_options import kafka_security
from referee.service.lag import watch_lag
from referee.service.listener import PositionListener
from referee.service.metrics import Metrics
from referee.service.relay_process import RelayProcess, make_relay, outboxes
from referee.service.runtime import Relay, Service
from referee.service.settings import Settings
from referee.store.step_store import PostgresStepStore

log = logging.getLogger("referee.serve")

RELAY_STOP_SECONDS = 15.0

HEARTBEAT_MOST_MS = 500
"""The longest interval between the consumer's heartbeats. A member of a stable group learns
that a rebalance has begun (an instance scaled out, a second consumer process of an instance
joining a moment after the first) only from its next heartbeat's answer, and the member that
joined waits, consuming nothing, until then: a fifth of the session timeout (2 s by default)
was that wait. A heartbeat is one small request to the group coordinator."""


async def _raw_batch(message: StreamMessage[Any]) -> Any:
    """Skips FastStream's decoding: the handler reads the raw records, the edge validates."""
    return message.body


Batch = tuple[ConsumerRecord[bytes, bytes], ...]
Poll = Callable[[AIOKafkaConsumer], Coroutine[Any, Any, Batch]]


def batch_poll(timeout_ms: int, max_records: int) -> Poll:
    """The subscriber's poll for the next batch, without FastStream's sleep after an empty one.

    ``getmany`` returns as soon as a record is buffered, or empty after ``timeout_ms``.
    FastStream's batch subscriber then sleeps ``timeout_ms`` more before it polls again: a
    record that arrives during that sleep waits up to ``timeout_ms`` (half the time, at a
    quiet table). This poll only returns the empty batch; the consume loop polls again at
    once, checking in between whether it is stopping. The wait for idle records is
    ``getmany``'s own, so the loop still sleeps in the consumer while nothing arrives.
    """

    async def get_msg(consumer: AIOKafkaConsumer) -> Batch:
        got = await consumer.getmany(timeout_ms=timeout_ms, max_records=max_records)
        return tuple(chain.from_iterable(got.values()))

    return get_msg


def build(
    settings: Settings,
    engine: AsyncEngine,
    database_url: str | None = None,
    control: socket.socket | None = None,
) -> tuple[FastStream, Service]:
    """Wires the broker, the subscriber, the publishers, the relay and the ops server.

    ``database_url`` is the database of ``engine`` (the settings' by default), for a relay
    in a process of its own. With ``control``, this is one consumer process of an instance
    (``consumers.py``): no ops server; the instance asks over ``control`` for what its
    probes and /metrics say."""
    security = kafka_security(settings)
    metrics = Metrics(
        revision=settings.build_revision, topics=(settings.verdict_topic, settings.dlq_topic)
    )
    broker = KafkaBroker(
        settings.kafka_bootstrap_servers,
        logger=logging.getLogger("referee.kafka"),
        log_level=logging.DEBUG,
        security=security,
        graceful_timeout=30.0,
        client_id="referee",
        middlewares=[KafkaPrometheusMiddleware(registry=metrics.registry, app_name="referee")],
    )
    step = ProcessingStep(
        PostgresStepStore(engine),
        settings.group_id,
        max_event_bytes=settings.max_event_bytes,
        cache_games=settings.cache_games,
        observe=metrics.observe_stage,
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
    relay: Relay
    if settings.relay_process:
        url = settings.database_url.get_secret_value() if database_url is None else database_url
        relay = RelayProcess(url, outboxes(settings), metrics)
    else:
        relay = make_relay(settings, engine, metrics)
    service = Service(settings, engine, broker, step, relay, metrics)
    if control is None:
        service.ops = OpsServer(
            settings.http_host,
            settings.http_port,
            service.exposition,
            service.readiness,
            service.liveness,
        )
    handler = BatchHandler(service)
    step.on_committed = handler.committed
    subscriber = broker.subscriber(
        settings.input_topic,
        group_id=settings.group_id,
        batch=True,
        max_records=settings.batch_size,
        batch_timeout_ms=settings.batch_linger_ms,
        auto_offset_reset="earliest",
        session_timeout_ms=settings.kafka_session_timeout_ms,
        heartbeat_interval_ms=min(HEARTBEAT_MOST_MS, settings.kafka_session_timeout_ms // 5),
        ack_policy=AckPolicy.MANUAL,
        decoder=_raw_batch,
        listener=PositionListener(service),
        title="domino.game-events",
        description="Input events from the game backends (GameStarted, RoundStarted, "
        "TilePlayed, TileDrawn, Passed), keyed by game id.",
    )
    subscriber.get_msg = batch_poll(settings.batch_linger_ms, settings.batch_size)  # type: ignore[method-assign,assignment]
    service.subscriber = subscriber

    @subscriber
    async def referee_batch(message: KafkaMessage) -> None:
        """Referees one batch of input records (pipelined with the batch before it)."""
        service.consumer = subscriber.consumer
        records: tuple[ConsumerRecord[bytes, bytes], ...] = message.raw_message
        await handler(records)

    app = FastStream(broker, logger=logging.getLogger("referee.app"))

    @app.on_startup
    async def start_ops() -> None:
        if service.ops is not None:
            await service.ops.start()

    @app.after_startup
    async def start_relay() -> None:
        service.consumer = subscriber.consumer
        service.tasks.append(asyncio.create_task(service.relay.run(service.stopping)))
        service.tasks.append(asyncio.create_task(watch_lag(service)))
        if control is not None:
            service.tasks.append(asyncio.create_task(answer_instance(service, control)))

    @app.on_shutdown
    async def stop_everything() -> None:
        # The batch judged last is written before anything stops.
        try:
            await step.settle()
        except Exception:
            log.warning("the batch in flight did not commit", exc_info=True)
        service.stopping.set()
        service.relay.wake.set()  # inline, out of an idle wait (a relay process: run stops it)
        # The relay ends its term between two pumps: the transaction in hand commits
        # before the lock goes (cancelled later, it aborts instead).
        if service.tasks:
            await asyncio.wait(service.tasks[:1], timeout=RELAY_STOP_SECONDS)
        for task in service.tasks:
            task.cancel()
        await asyncio.gather(*service.tasks, return_exceptions=True)

    @app.after_shutdown
    async def close() -> None:
        if service.ops is not None:
            await service.ops.stop()
        await engine.dispose()
        log.info("stopped")

    return app, service
