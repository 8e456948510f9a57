"""A tiny PKI for TLS tests, made with the ``openssl`` command: a CA, a server certificate for
localhost/127.0.0.1 and a client certificate (plain and password-protected key), and a
loopback TLS server that requires a client certificate and records whose it saw."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KEY_PASSWORD = "key-pass-123"
CLIENT_CN = "referee-user"


@dataclass(frozen=True)
class Pki:
    """The files of a test PKI."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    client_key_encrypted: Path


def _openssl(*args: str | Path, cwd: Path) -> None:
    openssl = shutil.which("openssl")
    assert openssl, "the openssl command is needed for the TLS tests (Debian: openssl)"
    subprocess.run([openssl, *map(str, args)], cwd=cwd, check=True, capture_output=True)


def make_pki(directory: Path) -> Pki:
    """Creates the CA, the server's and the client's certificates under ``directory``."""
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-subj",
             "/CN=test-ca", "-days", "2", cwd=directory)  # fmt: skip
    (directory / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for name, cn, ext in (("server", "localhost", True), ("client", CLIENT_CN, False)):
        _openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj",
                 f"/CN={cn}", cwd=directory)  # fmt: skip
        _openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.crt", "-days", "2",
            *(("-extfile", "server.ext") if ext else ()), cwd=directory,
        )  # fmt: skip
    _openssl("pkey", "-in", "client.key", "-aes256", "-passout", f"pass:{KEY_PASSWORD}",
             "-out", "client-encrypted.key", cwd=directory)  # fmt: skip
    return Pki(
        directory / "ca.crt",
        directory / "server.crt",
        directory / "server.key",
        directory / "client.crt",
        directory / "client.key",
        directory / "client-encrypted.key",
    )


@dataclass
class MutualTlsServer:
    """Accepts TLS connections on loopback that present a client certificate of the CA."""

    pki: Pki
    port: int = 0
    client_names: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=self.pki.ca)
        self.context.verify_mode = ssl.CERT_REQUIRED
        self.context.load_cert_chain(self.pki.server_cert, self.pki.server_key)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(20)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                with self.context.wrap_socket(conn, server_side=True) as tls:
                    peer: Any = tls.getpeercert() or {}
                    for rdn in peer.get("subject", ()):
                        for key, value in rdn:
                            if key == "commonName":
                                self.client_names.append(value)
            except (ssl.SSLError, OSError) as failed:
                self.failures.append(str(failed))

    def close(self) -> None:
        """Stops accepting."""
        self.sock.close()
        self.thread.join(timeout=5)
