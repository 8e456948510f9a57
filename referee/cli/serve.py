"""``referee serve``: configuration from the environment, then the FastStream app."""

from __future__ import annotations

import asyncio
import logging

from referee.cli.store_commands import database_url
from referee.service.logs import configure_logging
from referee.service.settings import Settings
from referee.store.database import create_engine, migrate


def serve(*, migrate_first: bool) -> int:
    """Runs the live referee until SIGTERM or SIGINT; finishes the batch in hand first."""
    settings = Settings()
    configure_logging(settings.log_level)
    log = logging.getLogger("referee.serve")
    url = database_url(None, settings, embedded_default=True)
    if migrate_first:
        migrate(url)
    log.info(
        "starting",
        extra={
            "kafka": settings.kafka_bootstrap_servers,
            "input_topic": settings.input_topic,
            "group_id": settings.group_id,
            "batch_size": settings.batch_size,
        },
    )

    async def run() -> None:
        from referee.service.app import build

        engine = create_engine(url, settings.db_pool_size, settings.db_max_overflow)
        app, _ = build(settings, engine)
        await app.run()

    asyncio.run(run())
    return 0
