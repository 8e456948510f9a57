"""``referee serve``: configuration from the environment, then the FastStream app.

Everything it says is a JSON log line, its failures included: a bad setting (exit 2, before
anything connects), PostgreSQL or Kafka unreachable at start, a database schema at another
revision than this referee's migrations, or the HTTP port taken (exit 3).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
from typing import TYPE_CHECKING

from referee.cli.args import Commands
from referee.cli.database import (
    choose_database,
    database_flags,
    engine_of,
    migrate_to_newest,
    probe_schema,
    reaching,
    settings_or_exit,
)
from referee.cli.errors import EXIT_OK, UnavailableError

if TYPE_CHECKING:  # Kafka's and the service's modules load when it runs
    from aiokafka.errors import KafkaError

    from referee.service.settings import Settings

BIND_FAILURES = frozenset({errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES})


def add(commands: Commands) -> None:
    """Adds ``referee serve``: its failures are JSON log lines, as its logs are."""
    serve = commands.add("serve", "run the live referee on Kafka (see README)", run)
    serve.add_argument(
        "--migrate", action="store_true", help="upgrade the database schema before starting"
    )
    database_flags(serve)
    serve.set_defaults(json_errors=True)


def run(args: argparse.Namespace) -> int:
    """Runs the live referee until SIGTERM or SIGINT; finishes the batch in hand first."""
    import asyncio
    import logging

    from aiokafka.errors import KafkaError

    from referee.cli.collector import tune
    from referee.service.logs import configure_logging

    settings = settings_or_exit()
    configure_logging(settings.log_level)
    log = logging.getLogger("referee.serve")
    db = choose_database(args.database, embedded=args.embedded, settings=settings)
    if args.migrate:
        migrate_to_newest(db, settings)
    else:
        probe_schema(db, settings, "serves")
    asyncio.run(_probe_kafka(settings))
    log.info(
        "starting",
        extra={
            "database": db.shown,
            "kafka": settings.kafka_bootstrap_servers,
            "input_topic": settings.input_topic,
            "group_id": settings.group_id,
            "batch_size": settings.batch_size,
        },
    )

    from referee.service.app import build
    from referee.service.takeover import TopicsRefused

    async def work() -> None:
        engine = engine_of(db, settings, settings.session_limits)
        built = build(settings, engine)
        app, ops = built.app, built.ops
        tune()
        try:
            await app.run()
        except OSError as bind:
            raise _port_unavailable(settings, bind) from bind
        except KafkaError as kafka:
            raise _kafka_unavailable(settings, kafka) from kafka
        except TopicsRefused as refused:
            raise UnavailableError(str(refused)) from refused
        finally:
            # after a failed start the ops port and the engine are still open
            with contextlib.suppress(Exception):
                await ops.stop()
            await engine.dispose()

    with reaching(db):
        asyncio.run(work())
    return EXIT_OK


def _port_unavailable(settings: Settings, bind: OSError) -> Exception:
    """The operations port could not be bound: says so (exit 3); any other OSError as is."""
    if bind.errno not in BIND_FAILURES:
        return bind
    return UnavailableError(
        f"cannot listen on {settings.http_host}:{settings.http_port} "
        f"(REFEREE_HTTP_HOST, REFEREE_HTTP_PORT): {bind.strerror}"
    )


async def _probe_kafka(settings: Settings) -> None:
    """Bootstraps a bare client once, so that an unreachable Kafka fails before anything
    starts (and aiokafka's own error lines do not repeat ours)."""
    import logging

    from aiokafka.client import AIOKafkaClient
    from aiokafka.errors import KafkaError

    from referee.service.kafka_options import consumer_options, kafka_security

    client = AIOKafkaClient(**consumer_options(settings, kafka_security(settings)))
    quiet = logging.getLogger("aiokafka")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        await client.bootstrap()
    except KafkaError as kafka:
        raise _kafka_unavailable(settings, kafka) from kafka
    finally:
        quiet.setLevel(level)
        await client.close()


def _kafka_unavailable(settings: Settings, kafka: KafkaError) -> UnavailableError:
    from aiokafka.errors import KafkaConnectionError

    if isinstance(kafka, KafkaConnectionError):  # its text lists resolved socket addresses
        what = "no broker could be reached"
    else:
        what = f"{type(kafka).__name__}: {kafka}".removesuffix(": ")
    return UnavailableError(
        f"Kafka at {settings.kafka_bootstrap_servers} (REFEREE_KAFKA_BOOTSTRAP_SERVERS): "
        f"{what} (are the brokers up, and the REFEREE_KAFKA_* security settings right?)"
    )
