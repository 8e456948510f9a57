"""Kafka client options from the settings: security (SASL, TLS, mutual TLS), the options of
the publishers' transactional producers and of the tail reader."""

from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaProducer
from faststream.security import BaseSecurity, SASLPlaintext, SASLScram256, SASLScram512

from referee.service.publisher import MakeProducer
from referee.service.settings import Settings


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


def publisher_producers(settings: Settings, security: BaseSecurity | None) -> MakeProducer:
    """Returns a maker of the publishers' transactional producers (one per partition and
    term, each with the transactional id it is given)."""
    options = consumer_options(settings, security)

    def make(transactional_id: str) -> AIOKafkaProducer:
        return AIOKafkaProducer(
            transactional_id=transactional_id,
            acks="all",
            linger_ms=0,  # a transaction is sent whole, then committed: lingering only delays
            client_id=f"referee-{transactional_id}",
            **options,
        )

    return make
