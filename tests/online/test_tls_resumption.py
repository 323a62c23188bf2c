"""TLS session resumption on the readers' bookie-port connections (issue 41's cost of TLS).

A reader that connects to a node again offers the session its previous connection got, so the
reconnect skips the certificate exchange. What must not change: a resumed connection is only
made with the files the session was made with (renewed files start afresh, so a client
certificate renewed to another CA is refused at once), and a failed handshake leaves no session.
Servers are the agent's own v3 bookie server in this process, with mutual TLS required.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tls_certs import TlsFiles
from trimtab.cluster import NodeId
from trimtab.diskinfo import BookieInfo
from trimtab.systems.bookkeeper.bookieinfo import BookieRpcServer, RoutingBookieInfoClient
from trimtab.systems.bookkeeper.bookieinfo.info import FetchError, FetchErrorKind
from trimtab.systems.bookkeeper.bookieinfo.tls import ClientTls, ServerTls

NODES = (NodeId("bk1:3181"), NodeId("bk2:3181"))


def _measure() -> BookieInfo:
    return BookieInfo.checked(1000, 400)


@pytest.fixture
def bookies(tls_files: TlsFiles) -> Iterator[dict[NodeId, str | None]]:
    """Two mutual-TLS bookie ports; ``node -> address`` as the registry gives them."""
    tls = ServerTls(
        cert=tls_files.server_cert, key=tls_files.server_key, ca=tls_files.ca, client_auth=True
    )
    servers = [BookieRpcServer(_measure, tls=tls) for _ in NODES]
    for server in servers:
        server.start()
    yield {n: f"bookie-rpc+tls://127.0.0.1:{s.port}" for n, s in zip(NODES, servers, strict=True)}
    for server in servers:
        server.stop(0)


def _reader_files(tls_files: TlsFiles, directory: Path, *, other_ca: bool = False) -> None:
    """Put a client certificate and key in ``directory`` (renewed in place as operators do)."""
    prefix = "other_client" if other_ca else "client"
    for name, source in (
        ("reader.key", getattr(tls_files, f"{prefix}_key")),
        ("reader.pem", getattr(tls_files, f"{prefix}_cert")),
    ):
        staged = directory / f"{name}.new"
        shutil.copy(source, staged)
        staged.replace(directory / name)


@pytest.mark.server
def test_a_reconnect_resumes_each_nodes_session(
    bookies: dict[NodeId, str | None], tls_files: TlsFiles
) -> None:
    """Connections dropped between scans: the next scan opens new ones, each resuming the
    session its node gave, and both nodes answer."""
    tls = ClientTls(ca=tls_files.ca, cert=tls_files.client_cert, key=tls_files.client_key)
    client = RoutingBookieInfoClient(tls=tls)
    try:
        first = client.fetch_many(bookies, timeout=5)
        assert client.bookie_rpc.resumed == 0
        client.bookie_rpc.retain(())
        second = client.fetch_many(bookies, timeout=5)
        assert client.bookie_rpc.connects == 4
        assert client.bookie_rpc.resumed == 2
    finally:
        client.close()
    for results in (first, second):
        assert all(isinstance(r, BookieInfo) for r in results.values()), results


@pytest.mark.server
def test_a_client_certificate_renewed_to_another_ca_is_not_resumed_past(
    bookies: dict[NodeId, str | None], tls_files: TlsFiles, tmp_path: Path
) -> None:
    """The reader's files change between scans (here to a certificate the bookies do not
    trust): the old sessions are forgotten, the next connections make a full handshake with the
    new certificate, and the bookies refuse it; put back, the good one is served again."""
    _reader_files(tls_files, tmp_path)
    tls = ClientTls(ca=tls_files.ca, cert=tmp_path / "reader.pem", key=tmp_path / "reader.key")
    client = RoutingBookieInfoClient(tls=tls)
    try:
        served = client.fetch_many(bookies, timeout=5)
        assert all(isinstance(r, BookieInfo) for r in served.values()), served
        client.bookie_rpc.retain(())
        _reader_files(tls_files, tmp_path, other_ca=True)
        refused = client.fetch_many(bookies, timeout=5)
        assert client.bookie_rpc.resumed == 0
        for result in refused.values():
            assert isinstance(result, FetchError) and result.kind is FetchErrorKind.TLS, result
            assert "refused our client certificate" in result.detail
        _reader_files(tls_files, tmp_path)
        served = client.fetch_many(bookies, timeout=5)
        assert all(isinstance(r, BookieInfo) for r in served.values()), served
    finally:
        client.close()


@pytest.mark.server
def test_without_sessions_kept_every_connection_is_a_full_handshake(
    bookies: dict[NodeId, str | None], tls_files: TlsFiles
) -> None:
    """A new client knows no session: its first connections are full handshakes (the cold
    scan's cost), resumption starts with its own second connections."""
    tls = ClientTls(ca=tls_files.ca, cert=tls_files.client_cert, key=tls_files.client_key)
    for _ in range(2):
        client = RoutingBookieInfoClient(tls=tls)
        try:
            client.fetch_many(bookies, timeout=5)
            assert client.bookie_rpc.connects == 2 and client.bookie_rpc.resumed == 0
        finally:
            client.close()
