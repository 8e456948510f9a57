"""Settings are checked when they are read: Literal enums, ranges, URLs, files and secrets;
the Kafka TLS settings (mutual TLS too) are wired into the broker and the tail reader."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiokafka.client import AIOKafkaClient
from aiokafka.errors import KafkaConnectionError

from referee.service.kafka_options import consumer_options, kafka_security
from referee.service.settings import Settings, SettingsError, load_settings
from tests.tls import CLIENT_CN, KEY_PASSWORD, MutualTlsServer, Pki, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("REFEREE_"):
            monkeypatch.delenv(name)


def refused(monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_the_defaults_are_valid() -> None:
    settings = load_settings()
    assert settings.kafka_security_protocol == "PLAINTEXT"
    assert kafka_security(settings) is None


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"REFEREE_HTTP_PORT": "99999"}, "REFEREE_HTTP_PORT='99999': must be at most 65535"),
        ({"REFEREE_HTTP_PORT": "http"}, "REFEREE_HTTP_PORT='http': must be a valid integer"),
        ({"REFEREE_LOG_LEVEL": "verbose"}, "REFEREE_LOG_LEVEL='verbose'"),
        ({"REFEREE_HTTP_MAX_CLIENTS": "0"}, "REFEREE_HTTP_MAX_CLIENTS='0': must be at least 1"),
        ({"REFEREE_HTTP_REQUEST_SECONDS": "0"}, "REFEREE_HTTP_REQUEST_SECONDS='0': must be"),
        ({"REFEREE_HTTP_REQUEST_SECONDS": "301"}, "must be at most 300"),
        ({"REFEREE_KAFKA_SECURITY_PROTOCOL": "TLS"}, "Kafka calls TLS 'SSL'"),
        ({"REFEREE_KAFKA_SASL_MECHANISM": "OAUTHBEARER"}, "REFEREE_KAFKA_SASL_MECHANISM="),
        ({"REFEREE_MAX_EVENT_BYTES": str(64 * 1024 * 1024 + 1)}, "must be at most 67108864"),
        ({"REFEREE_BATCH_SIZE": "100001"}, "REFEREE_BATCH_SIZE='100001': must be at most 100000"),
        ({"REFEREE_INPUT_TOPIC": ""}, "REFEREE_INPUT_TOPIC=''"),
        (
            {
                "REFEREE_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
                "REFEREE_KAFKA_SASL_MECHANISM": "PLAIN",
            },
            "REFEREE_KAFKA_SASL_USERNAME is needed with SASL_SSL",
        ),
        (
            {"REFEREE_KAFKA_SASL_MECHANISM": "PLAIN"},
            "needs REFEREE_KAFKA_SECURITY_PROTOCOL SASL_PLAINTEXT or SASL_SSL, not PLAINTEXT",
        ),
        ({"REFEREE_KAFKA_SSL_CAFILE": "/nonexistent/ca.crt"}, "REFEREE_KAFKA_SSL_CAFILE="),
        (
            {"REFEREE_DB_LOCK_TIMEOUT_SECONDS": "60"},
            "REFEREE_DB_LOCK_TIMEOUT_SECONDS=60.0 must be below REFEREE_DB_STATEMENT_TIMEOUT",
        ),
        (
            {"REFEREE_DB_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS": "-1"},
            "REFEREE_DB_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS='-1': must be at least 0",
        ),
    ],
)
def test_a_bad_setting_is_named(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], says: str
) -> None:
    assert says in refused(monkeypatch, **env)


def test_serve_s_sessions_carry_the_three_limits_in_milliseconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert load_settings().session_limits.server_settings() == {
        "statement_timeout": "60000",
        "lock_timeout": "30000",
        "idle_in_transaction_session_timeout": "30000",
    }
    monkeypatch.setenv("REFEREE_DB_STATEMENT_TIMEOUT_SECONDS", "0")  # no limit: any lock wait
    monkeypatch.setenv("REFEREE_DB_LOCK_TIMEOUT_SECONDS", "2.5")
    limits = load_settings().session_limits.server_settings()
    assert (limits["statement_timeout"], limits["lock_timeout"]) == ("0", "2500")


def test_every_bad_setting_is_named_on_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    message = refused(monkeypatch, REFEREE_HTTP_PORT="0", REFEREE_LOG_LEVEL="loud")
    assert "REFEREE_HTTP_PORT" in message
    assert "REFEREE_LOG_LEVEL" in message


def test_secrets_are_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(
        database_url="postgresql://u:db-secret@h/d",
        kafka_security_protocol="SASL_SSL",
        kafka_sasl_mechanism="PLAIN",
        kafka_sasl_username="u",
        kafka_sasl_password="kafka-secret",
    )
    for text in (repr(settings), str(settings), settings.model_dump_json()):
        assert "db-secret" not in text
        assert "kafka-secret" not in text
    message = refused(monkeypatch, REFEREE_DATABASE_URL="mysql://u:db-secret@h/d")
    assert "db-secret" not in message
    assert "REFEREE_DATABASE_URL: mysql://" in message


def test_enum_like_settings_are_read_in_any_case() -> None:
    settings = Settings(
        kafka_security_protocol="sasl_ssl",
        kafka_sasl_mechanism="scram-sha-512",
        kafka_sasl_username="u",
        log_level="debug",
    )
    assert settings.kafka_security_protocol == "SASL_SSL"
    assert settings.kafka_sasl_mechanism == "SCRAM-SHA-512"
    assert settings.log_level == "DEBUG"


def test_libpq_urls_are_accepted() -> None:
    url = "postgres://u:pw@db/referee?sslmode=require&connect_timeout=5"
    assert Settings(database_url=url).database_url.get_secret_value() == url


def mtls(pki: Pki, protocol: str = "SSL", **more: Any) -> Settings:
    return Settings(
        kafka_security_protocol=protocol,
        kafka_ssl_cafile=str(pki.ca),
        kafka_ssl_certfile=str(pki.client_cert),
        kafka_ssl_keyfile=str(pki.client_key),
        **more,
    )


def test_a_client_certificate_needs_its_key_and_tls(
    pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = str(pki.client_cert), str(pki.client_key)
    env = {"REFEREE_KAFKA_SECURITY_PROTOCOL": "SSL", "REFEREE_KAFKA_SSL_CERTFILE": cert}
    assert "go together" in refused(monkeypatch, **env)
    monkeypatch.setenv("REFEREE_KAFKA_SSL_KEYFILE", key)
    monkeypatch.setenv("REFEREE_KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("REFEREE_KAFKA_SASL_MECHANISM", "PLAIN")
    monkeypatch.setenv("REFEREE_KAFKA_SASL_USERNAME", "u")
    assert "need REFEREE_KAFKA_SECURITY_PROTOCOL SSL or SASL_SSL" in refused(monkeypatch)


def test_an_encrypted_key_needs_its_password(pki: Pki, monkeypatch: pytest.MonkeyPatch) -> None:
    base = {
        "REFEREE_KAFKA_SECURITY_PROTOCOL": "SSL",
        "REFEREE_KAFKA_SSL_CAFILE": str(pki.ca),
        "REFEREE_KAFKA_SSL_CERTFILE": str(pki.client_cert),
        "REFEREE_KAFKA_SSL_KEYFILE": str(pki.client_key_encrypted),
        "REFEREE_KAFKA_SSL_KEY_PASSWORD": "wrong",
    }
    message = refused(monkeypatch, **base)
    assert "cannot load them" in message
    assert "wrong" not in message
    monkeypatch.setenv("REFEREE_KAFKA_SSL_KEY_PASSWORD", KEY_PASSWORD)
    assert load_settings().kafka_ssl_key_password.get_secret_value() == KEY_PASSWORD


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_the_broker_and_the_tail_reader_share_the_tls_context(pki: Pki, protocol: str) -> None:
    sasl = {"kafka_sasl_mechanism": "SCRAM-SHA-512", "kafka_sasl_username": "u",
            "kafka_sasl_password": "p"} if protocol == "SASL_SSL" else {}  # fmt: skip
    settings = mtls(pki, protocol, **sasl)
    security = kafka_security(settings)
    assert security is not None
    assert security.use_ssl
    assert security.ssl_context is not None
    options = consumer_options(settings, security)
    assert options["security_protocol"] == protocol
    assert options["ssl_context"] is security.ssl_context
    if sasl:
        assert options["sasl_mechanism"] == "SCRAM-SHA-512"
        assert options["sasl_plain_password"] == "p"


def test_aiokafka_presents_the_client_certificate(pki: Pki) -> None:
    """A Strimzi-style TLS user: the client certificate reaches a server that requires one.

    The server speaks TLS, not Kafka, so the bootstrap fails after the handshake; what it
    checks is whose certificate the handshake carried.
    """
    for key, password in ((pki.client_key, ""), (pki.client_key_encrypted, KEY_PASSWORD)):
        server = MutualTlsServer(pki)
        settings = Settings(
            kafka_bootstrap_servers=f"localhost:{server.port}",
            kafka_security_protocol="SSL",
            kafka_ssl_cafile=str(pki.ca),
            kafka_ssl_certfile=str(pki.client_cert),
            kafka_ssl_keyfile=str(key),
            kafka_ssl_key_password=password,
        )

        async def bootstrap(settings: Settings = settings) -> None:
            client = AIOKafkaClient(
                **consumer_options(settings, kafka_security(settings)), request_timeout_ms=1000
            )
            try:
                await client.bootstrap()
            finally:
                await client.close()

        try:
            with pytest.raises(KafkaConnectionError):
                asyncio.run(bootstrap())
        finally:
            server.close()
        assert CLIENT_CN in server.client_names, server.failures


def test_without_the_certificate_the_server_refuses(pki: Pki, tmp_path: Path) -> None:
    server = MutualTlsServer(pki)
    settings = Settings(
        kafka_bootstrap_servers=f"localhost:{server.port}",
        kafka_security_protocol="SSL",
        kafka_ssl_cafile=str(pki.ca),
    )

    async def bootstrap() -> None:
        client = AIOKafkaClient(
            **consumer_options(settings, kafka_security(settings)), request_timeout_ms=1000
        )
        try:
            await client.bootstrap()
        finally:
            await client.close()

    try:
        with pytest.raises(KafkaConnectionError):
            asyncio.run(bootstrap())
    finally:
        server.close()
    assert server.client_names == []
    assert server.failures, "the server saw a handshake without a certificate and refused it"
