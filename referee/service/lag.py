"""The lag watcher: how far behind the consumer and the relay are, for /metrics."""

from __future__ import annotations

import asyncio

from referee.service.runtime import Service

EVERY_SECONDS = 5.0


async def watch_lag(service: Service) -> None:
    """Updates the consumer lag per owned partition and the relay's backlog, until stopped."""
    metrics = service.metrics
    while not service.stopping.is_set():
        await asyncio.sleep(EVERY_SECONDS)
        consumer = service.consumer
        if consumer is not None:
            for tp in list(service.assigned):
                high = consumer.highwater(tp)
                done = service.step.committed.get((tp.topic, tp.partition), -1) + 1
                if high is not None:
                    metrics.consumer_lag.labels(tp.topic, str(tp.partition)).set(
                        max(high - done, 0)
                    )
        await service.relay.publish_backlog()
