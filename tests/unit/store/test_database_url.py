"""Database URLs as operators paste them (libpq style), mapped to asyncpg's arguments."""

from __future__ import annotations

import socket
import ssl

import pytest

from referee.store.database import DatabaseUrlError, parse_database_url
from tests.tls import KEY_PASSWORD, MutualTlsServer, Pki, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.mark.parametrize(
    "scheme", ["postgresql", "postgres", "postgresql+asyncpg", "postgresql+psycopg"]
)
def test_postgresql_schemes_become_asyncpg(scheme: str) -> None:
    target = parse_database_url(f"{scheme}://u:pw@db:5433/referee")
    assert target.url.drivername == "postgresql+asyncpg"
    assert (target.url.host, target.url.port, target.url.database) == ("db", 5433, "referee")
    assert target.url.password == "pw"
    assert target.shown == f"{scheme}://u:***@db:5433/referee"
    assert target.connect_args == {"server_settings": {"jit": "off"}}


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("mysql://u:hunter2@h/x", "mysql:// is not PostgreSQL"),
        ("sqlite:///x.db", "sqlite:// is not PostgreSQL"),
        ("examples/tournament.jsonl", "not a database URL"),
        ("postgresql://u:hunter2@h/x?sslmode=on", "sslmode='on'"),
        ("postgresql://u:hunter2@h/x?pool=3", "unknown URL parameter 'pool'"),
        ("postgresql://u:hunter2@h/x?sslmode=require&sslmode=disable", "more than once"),
        ("postgresql://u:hunter2@h/x?connect_timeout=soon", "not a number of seconds"),
        ("postgresql://u:hunter2@h/x?connect_timeout=0", "must be positive"),
        ("postgresql://u:hunter2@h/x?sslmode=require&ssl=true", "not both"),
        ("postgresql://u:hunter2@h/x?sslrootcert=/nonexistent&sslmode=verify-ca", "no such file"),
    ],
)
def test_what_cannot_be_honoured_is_refused_without_the_password(url: str, says: str) -> None:
    with pytest.raises(DatabaseUrlError) as caught:
        parse_database_url(url)
    assert says in str(caught.value)
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize("mode", ["disable", "allow", "prefer", "require"])
def test_plain_sslmodes_are_asyncpgs_own(mode: str) -> None:
    target = parse_database_url(f"postgresql://u@h/d?sslmode={mode}")
    assert target.connect_args == {"ssl": mode, "server_settings": {"jit": "off"}}
    assert "sslmode" not in target.url.query, "asyncpg never sees libpq's keyword"


def test_verify_full_checks_the_chain_and_the_host_name(pki: Pki) -> None:
    target = parse_database_url(f"postgresql://u@h/d?sslmode=verify-full&sslrootcert={pki.ca}")
    context = target.connect_args["ssl"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "test-ca"),),)]


def test_verify_ca_checks_the_chain_only(pki: Pki) -> None:
    context = parse_database_url(
        f"postgresql://u@h/d?sslmode=verify-ca&sslrootcert={pki.ca}"
    ).connect_args["ssl"]
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert not context.check_hostname


def test_verify_full_without_a_root_certificate_uses_the_system_cas() -> None:
    for url in ("postgresql://u@h/d?sslmode=verify-full",
                "postgresql://u@h/d?sslmode=verify-full&sslrootcert=system"):  # fmt: skip
        context = parse_database_url(url).connect_args["ssl"]
        default = ssl.create_default_context()
        assert isinstance(context, ssl.SSLContext)
        assert context.verify_mode == ssl.CERT_REQUIRED
        assert context.check_hostname
        assert len(context.get_ca_certs()) == len(default.get_ca_certs())


def test_require_with_a_root_certificate_verifies_the_chain_as_libpq_does(pki: Pki) -> None:
    context = parse_database_url(
        f"postgresql://u@h/d?sslmode=require&sslrootcert={pki.ca}"
    ).connect_args["ssl"]
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert not context.check_hostname


def test_a_client_certificate_is_presented(pki: Pki) -> None:
    """The context made from sslcert/sslkey shows the certificate to a server that asks."""
    for key, password in ((pki.client_key, ""), (pki.client_key_encrypted, KEY_PASSWORD)):
        url = (
            f"postgresql://u@localhost/d?sslmode=verify-full&sslrootcert={pki.ca}"
            f"&sslcert={pki.client_cert}&sslkey={key}"
        ) + (f"&sslpassword={password}" if password else "")
        target = parse_database_url(url)
        assert KEY_PASSWORD not in target.shown
        server = MutualTlsServer(pki)
        try:
            with (
                socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw,
                target.connect_args["ssl"].wrap_socket(raw, server_hostname="localhost"),
            ):
                pass
        finally:
            server.close()
        assert server.client_names == ["referee-user"], server.failures


def test_a_certificate_needs_a_mode_that_requires_tls(pki: Pki) -> None:
    for mode in ("", "&sslmode=prefer", "&sslmode=allow", "&sslmode=disable"):
        with pytest.raises(DatabaseUrlError, match="need sslmode=require"):
            parse_database_url(
                f"postgresql://u@h/d?sslcert={pki.client_cert}&sslkey={pki.client_key}{mode}"
            )


def test_a_key_without_its_certificate_or_a_wrong_password_is_refused(pki: Pki) -> None:
    with pytest.raises(DatabaseUrlError, match="sslkey= needs sslcert="):
        parse_database_url(f"postgresql://u@h/d?sslmode=require&sslkey={pki.client_key}")
    with pytest.raises(DatabaseUrlError, match="cannot load the TLS files"):
        parse_database_url(
            f"postgresql://u@h/d?sslmode=require&sslcert={pki.client_cert}"
            f"&sslkey={pki.client_key_encrypted}&sslpassword=wrong"
        )


def test_other_libpq_parameters_become_asyncpg_arguments() -> None:
    target = parse_database_url(
        "postgresql://u@h/d?connect_timeout=7&application_name=referee-ops&host=/run/pg"
    )
    assert target.connect_args == {
        "timeout": 7.0,
        "server_settings": {"jit": "off", "application_name": "referee-ops"},
    }
    assert dict(target.url.query) == {"host": "/run/pg"}  # the dialect reads it itself


def test_a_key_password_is_hidden_like_the_password(pki: Pki) -> None:
    target = parse_database_url(
        f"postgresql://u:pw@h/d?sslmode=require&sslcert={pki.client_cert}"
        f"&sslkey={pki.client_key_encrypted}&sslpassword={KEY_PASSWORD}"
    )
    assert KEY_PASSWORD not in target.shown
    assert target.shown.endswith("&sslpassword=%2A%2A%2A")  # ***, URL-quoted
    assert ":pw@" not in target.shown
