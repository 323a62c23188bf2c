"""Certificates for the TLS tests, made fresh in each test session by ``trustme`` (never committed).

One module for every TLS test (the agent's ports, the readers, ZooKeeper's secure port): a CA, a
server certificate for ``localhost``/``127.0.0.1`` and a client certificate both signed by it; a
second CA with its own client certificate (the wrong CA); an expired server certificate and one for
another host. :func:`make_tls_files` writes them as PEM files; the ``tls_files`` fixture (session
scope, registered by ``tests/conftest.py``) hands them to tests.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme

__all__ = ["TlsFiles", "issue_server", "make_tls_files", "tls_files"]

HOSTS = ("localhost", "127.0.0.1")


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """PEM files: ``ca`` signs ``server_*`` and ``client_*``; ``other_ca`` signs ``other_client_*``;
    ``expired_*`` is ``ca``'s but out of date; ``wrong_host_*`` is ``ca``'s for another name."""

    directory: Path
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path
    other_client_cert: Path
    other_client_key: Path
    expired_cert: Path
    expired_key: Path
    wrong_host_cert: Path
    wrong_host_key: Path


def _write(cert: trustme.LeafCert, directory: Path, name: str) -> tuple[Path, Path]:
    chain, key = directory / f"{name}.pem", directory / f"{name}.key"
    cert.private_key_pem.write_to_path(str(key))
    chain.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    key.chmod(0o600)
    return chain, key


def issue_server(ca: trustme.CA, directory: Path, name: str, **kwargs: object) -> tuple[Path, Path]:
    """A server certificate for :data:`HOSTS` from ``ca`` (``not_after=`` etc. passed on)."""
    return _write(ca.issue_cert(*HOSTS, **kwargs), directory, name)  # type: ignore[arg-type]


def make_tls_files(directory: Path) -> TlsFiles:
    """Write a fresh set of :class:`TlsFiles` under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, other = trustme.CA(), trustme.CA()
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    other.cert_pem.write_to_path(str(directory / "other-ca.pem"))
    server = issue_server(ca, directory, "server")
    client = _write(ca.issue_cert("trimtab-client"), directory, "client")
    other_client = _write(other.issue_cert("intruder"), directory, "other-client")
    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=30)
    expired = issue_server(
        ca,
        directory,
        "expired",
        not_before=long_ago,
        not_after=long_ago + dt.timedelta(days=1),
    )
    wrong_host = _write(ca.issue_cert("elsewhere.example"), directory, "wrong-host")
    return TlsFiles(
        directory,
        directory / "ca.pem",
        *server,
        *client,
        directory / "other-ca.pem",
        *other_client,
        *expired,
        *wrong_host,
    )


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """One set of certificates for the whole session."""
    return make_tls_files(tmp_path_factory.mktemp("tls"))
