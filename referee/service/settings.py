"""Configuration of the live service, read from ``REFEREE_*`` environment variables.

Every setting is checked when it is read, before anything connects: enum-like settings are
``Literal`` types, ports and sizes have ranges, the database URL is parsed as PostgreSQL's,
files named by a setting must be readable, and secrets are ``SecretStr`` (never printed).
:func:`load_settings` turns a failure into :class:`SettingsError`: one line that names each
bad variable and says what it must be.
"""

from __future__ import annotations

import ipaddress
import os
import ssl
from datetime import timedelta
from typing import Any, Literal

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from referee.domain.revisions import NEWEST, UnknownRevisionError, revision
from referee.service.limits import BATCH_SIZE_CAP, MAX_EVENT_BYTES_CAP
from referee.store.database import MAX_PORT, SessionLimits, is_port, parse_database_url
from referee.store.partitions import RETENTION_CAP, PartitionPolicy, parse_interval

PREFIX = "REFEREE_"
SERVE_LIMITS = SessionLimits()

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]

_NOT_A_PROTOCOL = {
    "TLS": "Kafka calls TLS 'SSL': use SSL, or SASL_SSL with SASL",
    "MTLS": "mutual TLS is SSL with REFEREE_KAFKA_SSL_CERTFILE and REFEREE_KAFKA_SSL_KEYFILE",
    "SCRAM": "SCRAM is a SASL mechanism: use SASL_SSL with REFEREE_KAFKA_SASL_MECHANISM",
}


class SettingsError(ValueError):
    """The configuration is invalid; the message names every bad setting, on one line."""


class Settings(BaseSettings):
    """Every knob of ``referee serve``, ``referee migrate`` and ``referee audit``."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore")

    database_url: SecretStr = Field(
        default=SecretStr(""),
        description="PostgreSQL URL, libpq style (postgresql:// or postgres://, "
        "postgresql+asyncpg:// too; ?sslmode=, sslrootcert=, sslcert=, sslkey= understood), "
        "e.g. postgresql://referee:pw@db/referee?sslmode=verify-full. Empty: the commands "
        "that can use the embedded PostgreSQL ask for --embedded.",
    )
    data_dir: str = Field(default=".referee", description="Where the embedded PostgreSQL lives.")
    db_pool_size: int = Field(default=5, ge=1, description="Connections kept in the pool.")
    db_max_overflow: int = Field(default=5, ge=0, description="Extra connections under load.")
    db_statement_timeout_seconds: float = Field(
        default=SERVE_LIMITS.statement,
        ge=0,
        le=3600,
        description="`referee serve`'s sessions: the longest one statement may run before "
        "PostgreSQL cancels it (statement_timeout; 0: no limit). Its batch then fails as an "
        "outage and is retried.",
    )
    db_lock_timeout_seconds: float = Field(
        default=SERVE_LIMITS.lock,
        ge=0,
        le=3600,
        description="`referee serve`'s sessions: the longest one statement may wait for a "
        "lock (lock_timeout; 0: no limit), below the statement timeout. Its batch then fails "
        "as an outage and is retried.",
    )
    db_idle_in_transaction_timeout_seconds: float = Field(
        default=SERVE_LIMITS.idle_in_transaction,
        ge=0,
        le=3600,
        description="`referee serve`'s sessions: the longest a session may sit idle inside "
        "a transaction before PostgreSQL ends it and its locks go "
        "(idle_in_transaction_session_timeout; 0: no limit).",
    )

    kafka_bootstrap_servers: str = Field(
        default="localhost:9092",
        min_length=1,
        description="Comma-separated host:port list of Kafka brokers.",
    )
    kafka_security_protocol: SecurityProtocol = Field(
        default="PLAINTEXT", description="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."
    )
    kafka_sasl_mechanism: SaslMechanism = Field(
        default="", description="PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (empty: no SASL)."
    )
    kafka_sasl_username: str = Field(default="", description="SASL user name.")
    kafka_sasl_password: SecretStr = Field(default=SecretStr(""), description="SASL password.")
    kafka_ssl_cafile: str = Field(default="", description="CA bundle to verify the brokers.")
    kafka_ssl_certfile: str = Field(
        default="",
        description="Client certificate (PEM) for mutual TLS, e.g. a Strimzi KafkaUser's "
        "user.crt; with SSL or SASL_SSL.",
    )
    kafka_ssl_keyfile: str = Field(
        default="", description="Private key (PEM) of the client certificate (user.key)."
    )
    kafka_ssl_key_password: SecretStr = Field(
        default=SecretStr(""), description="Password of an encrypted private key."
    )

    input_topic: str = Field(
        default="domino.game-events", min_length=1, description="Topic of game events."
    )
    verdict_topic: str = Field(
        default="domino.referee-verdicts",
        min_length=1,
        description="Topic the verdicts are published to.",
    )
    dlq_topic: str = Field(
        default="domino.game-events.dlq",
        min_length=1,
        description="Topic of rejected input (EventRejected).",
    )
    group_id: str = Field(default="referee", min_length=1, description="Kafka consumer group id.")
    relay_transactional_id: str = Field(
        default="",
        description="The prefix of the publishers' Kafka transactional ids, the same on every "
        "instance of a deployment: an instance publishes every partition it owns as "
        "<prefix>.i-<instance> (a name of its own, new at every start), and a partition's new "
        "owner fences the previous owner's id, which the store's terms of ownership name "
        "(release 0.4 published partition N as <prefix>.N, and the global relay of releases "
        "up to 0.1 as the prefix itself: both fenced too). Empty means "
        "referee-relay.<group_id>.",
    )

    @model_validator(mode="after")
    def _heartbeat_within_session(self) -> Settings:
        if self.kafka_heartbeat_interval_ms * 3 > self.kafka_session_timeout_ms:
            raise ValueError(
                f"REFEREE_KAFKA_HEARTBEAT_INTERVAL_MS={self.kafka_heartbeat_interval_ms} must be "
                "at most a third of REFEREE_KAFKA_SESSION_TIMEOUT_MS="
                f"{self.kafka_session_timeout_ms}"
            )
        return self

    @model_validator(mode="after")
    def _lock_wait_within_statement(self) -> Settings:
        statement, lock = self.db_statement_timeout_seconds, self.db_lock_timeout_seconds
        if statement and lock >= statement:
            raise ValueError(
                f"REFEREE_DB_LOCK_TIMEOUT_SECONDS={lock} must be below "
                f"REFEREE_DB_STATEMENT_TIMEOUT_SECONDS={statement}, so that a statement "
                "stopped while it waits for a lock fails as a lock wait"
            )
        return self

    @property
    def session_limits(self) -> SessionLimits:
        """What ``referee serve``'s database sessions may take (statement, lock, idle)."""
        return SessionLimits(
            self.db_statement_timeout_seconds,
            self.db_lock_timeout_seconds,
            self.db_idle_in_transaction_timeout_seconds,
        )

    @model_validator(mode="after")
    def _derive_transactional_id(self) -> Settings:
        if not self.relay_transactional_id:
            self.relay_transactional_id = f"referee-relay.{self.group_id}"
        return self

    kafka_session_timeout_ms: int = Field(
        default=10_000,
        ge=1000,
        description="How long the group waits for a silent instance before moving its "
        "partitions (within the broker's group.min/max.session.timeout.ms).",
    )
    kafka_group_instance_id: str = Field(
        default="",
        description="Static membership of the consumer group (KIP-345): a stable name per "
        "instance (a StatefulSet pod's name). An instance restarted within the session "
        "timeout under the same name gets its partitions back without a rebalance; one that "
        "stops is replaced only after the session timeout. Empty: dynamic membership.",
    )
    kafka_heartbeat_interval_ms: int = Field(
        default=250,
        ge=10,
        description="How often the consumer tells the group it is alive, in milliseconds (at "
        "most a third of the session timeout). A member learns of a rebalance from a "
        "heartbeat's answer, so this bounds how long the others wait for it to rejoin.",
    )
    batch_size: int = Field(
        default=2000, ge=1, le=BATCH_SIZE_CAP, description="Most records in one processing step."
    )
    batch_linger_ms: int = Field(
        default=50,
        ge=1,
        description="How long a poll for the next batch waits when no record is buffered, in "
        "milliseconds, before it polls again. A record is taken as soon as it arrives: no "
        "batch waits to fill.",
    )
    max_event_bytes: int = Field(
        default=65536,
        ge=1,
        le=MAX_EVENT_BYTES_CAP,
        description="Largest accepted input event; larger is too_large.",
    )
    cache_games: int = Field(
        default=100_000, ge=1, description="Most game states kept in the hot cache."
    )
    http_host: str = Field(
        default="0.0.0.0",  # noqa: S104
        description="Address of /healthz, /livez, /readyz, /metrics.",
    )
    http_port: int = Field(
        default=8080, ge=1, le=MAX_PORT, description="Port of /healthz, /livez, /readyz, /metrics."
    )
    http_max_clients: int = Field(
        default=64,
        ge=1,
        le=10_000,
        description="Most connections the operations port holds; past it, those that have "
        "waited longest for their request are closed (never one being answered).",
    )
    http_request_seconds: float = Field(
        default=5.0,
        gt=0.0,
        le=300.0,
        description="How long a client of the operations port has for each request, from its "
        "connection (or its previous answer) to the answer; past it the connection is closed.",
    )
    log_level: LogLevel = Field(default="INFO", description="DEBUG, INFO, WARNING or ERROR.")
    ready_requires_partition: bool = Field(
        default=True,
        description="Whether /readyz also needs at least one input partition assigned to this "
        "instance. Turn it off where instances can outnumber the partitions (autoscaling, a "
        "surge pod in a rolling update): an instance with no partition is healthy but idle.",
    )
    pipeline: bool = Field(
        default=True,
        description="Judge each batch while the batch before it commits (docs/design.md, "
        "Pipelining); off, every batch is judged and written before the next is fetched.",
    )
    liveness_stall_seconds: float = Field(
        default=120.0,
        ge=1.0,
        le=3600.0,
        description="How long records may wait with no batch committed (or a publisher's loop "
        "not come round) before /livez fails and the instance is restarted.",
    )
    rules_revision: int = Field(
        default=NEWEST,
        ge=1,
        description="The rules revision a game that starts is pinned to (docs/rules.md, "
        "Rules revisions); a game keeps the one it started under. Default: the newest.",
    )
    partition_interval: str = Field(
        default="1 day",
        description="How long each time partition of the store is (docs/store.md, Time "
        "partitions): a whole number and a unit ('1 day', '6h', '15 minutes'), from a minute "
        "to 31 days. A change applies from the end of the partitions made already.",
    )
    partitions_ahead: int = Field(
        default=3,
        ge=1,
        le=1000,
        description="How many time partitions are made ahead of the clock (by the service "
        "in the background, starting that many intervals ahead; by `referee migrate` and "
        "`referee maintain`).",
    )
    archive_url: str = Field(
        default="",
        description="Where `referee archive` writes and `referee audit --archive` reads the "
        "archive: a local directory or s3://bucket/prefix (credentials and endpoint from "
        "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL). Empty: "
        "give --to / --archive.",
    )
    archive_retention: str = Field(
        default="30 days",
        description="How long rows stay in PostgreSQL before `referee archive` moves them to "
        "the archive (without --before): a whole number and a unit, from a minute to "
        "3650 days.",
    )
    archive_keep_prints: str = Field(
        default="7 days",
        description="How long after a game's last event `referee archive` keeps the prints "
        "of its archived events in PostgreSQL (and always while the game goes on), so a "
        "redelivered event is told from a conflicting one without reading the archive.",
    )
    build_revision: str = Field(
        default="unknown",
        description="The source revision of this build, for referee_build_info (the image "
        "sets it from its REVISION build argument).",
    )

    @field_validator("kafka_security_protocol", "kafka_sasl_mechanism", "log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any, info: ValidationInfo) -> Any:
        # Case never mattered for these (they were compared upper-cased); keep accepting it.
        if isinstance(value, str):
            value = value.strip().upper()
            if info.field_name == "kafka_security_protocol" and value in _NOT_A_PROTOCOL:
                raise ValueError(_NOT_A_PROTOCOL[value])
        return value

    @field_validator("partition_interval")
    @classmethod
    def _interval(cls, value: str) -> str:
        parse_interval(value)  # raises ValueError naming the rule
        return value

    @field_validator("archive_retention", "archive_keep_prints")
    @classmethod
    def _retention(cls, value: str) -> str:
        parse_interval(value, largest=RETENTION_CAP)
        return value

    @property
    def partition_policy(self) -> PartitionPolicy:
        """The time partitions' interval and how many are made ahead."""
        return PartitionPolicy(parse_interval(self.partition_interval), self.partitions_ahead)

    @property
    def keep_prints(self) -> timedelta:
        """How long a finished game's prints stay in PostgreSQL once its events are archived."""
        return parse_interval(self.archive_keep_prints, largest=RETENTION_CAP)

    @property
    def retention(self) -> timedelta:
        """How long rows stay in PostgreSQL before they are archived."""
        return parse_interval(self.archive_retention, largest=RETENTION_CAP)

    @field_validator("rules_revision")
    @classmethod
    def _known_revision(cls, value: int) -> int:
        try:
            revision(value)
        except UnknownRevisionError as unknown:
            raise ValueError(str(unknown)) from None
        return value

    @field_validator("database_url")
    @classmethod
    def _postgresql_url(cls, value: SecretStr) -> SecretStr:
        url = value.get_secret_value()
        if url:
            parse_database_url(url)  # raises ValueError with a message free of the password
        return value

    @field_validator("kafka_bootstrap_servers")
    @classmethod
    def _brokers(cls, value: str) -> str:
        for broker in value.split(","):
            problem = _broker_problem(broker.strip())
            if problem:
                raise ValueError(f"{problem} (a comma-separated host:port list)")
        return value

    @field_validator("kafka_ssl_cafile", "kafka_ssl_certfile", "kafka_ssl_keyfile")
    @classmethod
    def _readable_file(cls, value: str) -> str:
        if value and not (os.path.isfile(value) and os.access(value, os.R_OK)):  # noqa: PTH113
            raise ValueError(f"no readable file {value!r}")
        return value

    @model_validator(mode="after")
    def _kafka_security_agrees(self) -> Settings:
        protocol = self.kafka_security_protocol
        sasl = protocol.startswith("SASL_")
        tls = protocol in ("SSL", "SASL_SSL")
        if sasl and not self.kafka_sasl_mechanism:
            raise ValueError(
                f"REFEREE_KAFKA_SASL_MECHANISM is needed with {protocol}: "
                "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
            )
        if sasl and not self.kafka_sasl_username:
            raise ValueError(f"REFEREE_KAFKA_SASL_USERNAME is needed with {protocol}")
        if not sasl and self.kafka_sasl_mechanism:
            raise ValueError(
                f"REFEREE_KAFKA_SASL_MECHANISM={self.kafka_sasl_mechanism} needs "
                f"REFEREE_KAFKA_SECURITY_PROTOCOL SASL_PLAINTEXT or SASL_SSL, not {protocol}"
            )
        if not tls and (self.kafka_ssl_certfile or self.kafka_ssl_keyfile):
            raise ValueError(
                "REFEREE_KAFKA_SSL_CERTFILE/REFEREE_KAFKA_SSL_KEYFILE need "
                f"REFEREE_KAFKA_SECURITY_PROTOCOL SSL or SASL_SSL, not {protocol}"
            )
        if bool(self.kafka_ssl_certfile) != bool(self.kafka_ssl_keyfile):
            raise ValueError(
                "REFEREE_KAFKA_SSL_CERTFILE and REFEREE_KAFKA_SSL_KEYFILE go together "
                "(the client certificate and its private key)"
            )
        if self.kafka_ssl_key_password.get_secret_value() and not self.kafka_ssl_keyfile:
            raise ValueError(
                "REFEREE_KAFKA_SSL_KEY_PASSWORD is set but no REFEREE_KAFKA_SSL_KEYFILE"
            )
        if tls:
            try:
                self.kafka_ssl_context()
            except (ssl.SSLError, OSError) as bad:
                raise ValueError(
                    "REFEREE_KAFKA_SSL_CAFILE/CERTFILE/KEYFILE/KEY_PASSWORD: cannot load them: "
                    f"{bad.strerror or bad}"
                ) from None
        return self

    def kafka_ssl_context(self) -> ssl.SSLContext:
        """Returns the TLS context for the brokers: their CA, and the client certificate if
        any (mutual TLS, e.g. a Strimzi ``KafkaUser`` of type ``tls``)."""
        context = ssl.create_default_context(cafile=self.kafka_ssl_cafile or None)
        if self.kafka_ssl_certfile:
            context.load_cert_chain(
                self.kafka_ssl_certfile,
                self.kafka_ssl_keyfile,
                self.kafka_ssl_key_password.get_secret_value() or None,
            )
        return context


def _broker_problem(broker: str) -> str:
    """Returns what is wrong with one ``host:port`` of the broker list (empty: nothing), as
    aiokafka reads it: ``[v6]:port``, a bare IPv6 address or host takes port 9092."""
    if not broker:
        return "an empty broker in the list"
    if broker.startswith("["):
        host, bracket, port = broker[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            return f"broker {broker!r} is not [IPv6 address]:port"
        port = port[1:] if port else "9092"
    elif ":" not in broker:
        host, port = broker, "9092"
    else:
        try:
            ipaddress.IPv6Address(broker)
        except ValueError:
            host, _, port = broker.rpartition(":")
        else:
            return ""
    if not host:
        return f"broker {broker!r} has no host"
    if not is_port(port):
        return f"broker {broker!r}: the port must be a number from 1 to {MAX_PORT}"
    return ""


SECRET_FIELDS = frozenset(
    name for name, field in Settings.model_fields.items() if field.annotation is SecretStr
)


def env_name(field: str) -> str:
    """Returns the environment variable of a setting."""
    return f"{PREFIX}{field.upper()}"


def load_settings(**overrides: Any) -> Settings:
    """Reads the settings from the environment; raises :class:`SettingsError` if one is bad."""
    try:
        return Settings(**overrides)
    except ValidationError as invalid:
        raise SettingsError(describe(invalid)) from None


def describe(invalid: ValidationError) -> str:
    """Returns what is wrong with each bad setting, naming its variable; never a secret."""
    lines = []
    for error in invalid.errors(include_url=False, include_input=False, include_context=True):
        message = str(error["msg"]).removeprefix("Value error, ")
        if not error["loc"]:  # a check across settings names its variables itself
            lines.append(message)
            continue
        field = str(error["loc"][0])
        name = env_name(field)
        raw = os.environ.get(name)
        shown = "" if raw is None or field in SECRET_FIELDS else f"={raw!r}"
        lines.append(f"{name}{shown}: {_plain(message)}")
    return "; ".join(lines)


def _plain(message: str) -> str:
    """Rewords pydantic's messages for an operator reading a variable."""
    return (
        message.replace("Input should be", "must be")
        .replace("greater than or equal to", "at least")
        .replace("less than or equal to", "at most")
    )
