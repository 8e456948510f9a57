"""Configuration of the live service, read from ``REFEREE_*`` environment variables."""

from __future__ import annotations

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every knob of ``referee serve``, ``referee migrate`` and ``referee audit``."""

    model_config = SettingsConfigDict(env_prefix="REFEREE_", extra="ignore")

    database_url: str = Field(
        default="",
        description="SQLAlchemy URL of PostgreSQL, e.g. "
        "postgresql+asyncpg://referee:pw@db/referee. "
        "Empty means the embedded PostgreSQL (pgserver, the 'embedded' extra) under data_dir.",
    )
    data_dir: str = Field(default=".referee", description="Where the embedded PostgreSQL lives.")
    db_pool_size: int = Field(default=5, ge=1, description="Connections kept in the pool.")
    db_max_overflow: int = Field(default=5, ge=0, description="Extra connections under load.")

    kafka_bootstrap_servers: str = Field(
        default="localhost:9092", description="Comma-separated host:port list of Kafka brokers."
    )
    kafka_security_protocol: str = Field(
        default="PLAINTEXT", description="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."
    )
    kafka_sasl_mechanism: str = Field(
        default="", description="PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (empty: no SASL)."
    )
    kafka_sasl_username: str = Field(default="", description="SASL user name.")
    kafka_sasl_password: str = Field(default="", description="SASL password.")
    kafka_ssl_cafile: str = Field(default="", description="CA bundle to verify the brokers.")

    input_topic: str = Field(default="domino.game-events", description="Topic of game events.")
    verdict_topic: str = Field(
        default="domino.referee-verdicts", description="Topic the verdicts are published to."
    )
    dlq_topic: str = Field(
        default="domino.game-events.dlq", description="Topic of rejected input (EventRejected)."
    )
    group_id: str = Field(default="referee", description="Kafka consumer group id.")
    relay_transactional_id: str = Field(
        default="",
        description="transactional.id of the relay's Kafka producer, the same on every "
        "instance of a deployment (a new leader's producer fences the previous one with it). "
        "Empty means referee-relay.<group_id>.",
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
    batch_size: int = Field(default=2000, ge=1, description="Most records in one processing step.")
    batch_linger_ms: int = Field(
        default=50, ge=0, description="How long to wait for a batch to fill, in milliseconds."
    )
    max_event_bytes: int = Field(
        default=65536, ge=1, description="Largest accepted input event; larger is too_large."
    )
    cache_games: int = Field(
        default=100_000, ge=1, description="Most game states kept in the hot cache."
    )
    http_host: str = Field(default="0.0.0.0", description="Address of /healthz, /readyz, /metrics.")  # noqa: S104
    http_port: int = Field(default=8080, description="Port of /healthz, /readyz and /metrics.")
    log_level: str = Field(default="INFO", description="DEBUG, INFO, WARNING or ERROR.")
    ready_requires_partition: bool = Field(
        default=True,
        description="Whether /readyz also needs at least one input partition assigned to this "
        "instance. Turn it off where instances can outnumber the partitions (autoscaling, a "
        "surge pod in a rolling update): an instance with no partition is healthy but idle.",
    )
