"""TLS cases that need no agent process: in-process servers on both protocols, the registry's TLS
hints, the exchange on the wire, and BookKeeper's TLS keys in the config layer."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterator

import pytest

from tests.tls_certs import TlsFiles
from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.diskinfo import BookieInfo
from trimtab.systems.bookkeeper.bookieinfo import (
    BookieInfoServer,
    BookieRpcServer,
    RoutingBookieInfoClient,
)
from trimtab.systems.bookkeeper.bookieinfo.info import FetchError, FetchErrorKind
from trimtab.systems.bookkeeper.bookieinfo.proto import bookieinfo_pb2 as pb
from trimtab.systems.bookkeeper.bookieinfo.proto import bookkeeper_v3_pb2 as v3
from trimtab.systems.bookkeeper.bookieinfo.tls import ClientTls, ServerTls, TlsSettingsError
from trimtab.systems.bookkeeper.bookieinfo.tls_setup import client_tls, server_tls
from trimtab.systems.bookkeeper.bookieinfo.v3 import frame, get_bookie_info_request
from trimtab.systems.bookkeeper.registry import (
    encode_bookie_service_info,
    registration_address,
    split_address,
)
from trimtab.systems.bookkeeper.registry.model import WireProtocol, wants_tls


def _measure() -> BookieInfo:
    return BookieInfo.checked(1000, 400)


Servers = tuple[BookieInfoServer, BookieRpcServer]


@pytest.fixture
def servers(request: pytest.FixtureRequest, tls_files: TlsFiles) -> Iterator[Servers]:
    """Both protocols' servers with the certificate named by the test's parameter."""
    tls = _server(tls_files, request.param)
    grpc_server = BookieInfoServer(_measure, tls=tls)
    bookie = BookieRpcServer(_measure, tls=tls)
    grpc_server.start()
    bookie.start()
    yield grpc_server, bookie
    grpc_server.stop(0)
    bookie.stop(0)


def _scan(servers: Servers, tls: ClientTls | None) -> list[object]:
    client = RoutingBookieInfoClient(tls=tls)
    try:
        found = client.fetch_many(
            {
                NodeId("a:1"): f"127.0.0.1:{servers[0].port}",
                NodeId("b:1"): f"bookie-rpc://127.0.0.1:{servers[1].port}",
            },
            timeout=5,
        )
    finally:
        client.close()
    return [found[NodeId("a:1")], found[NodeId("b:1")]]


def _server(files: TlsFiles, which: str) -> ServerTls:
    return ServerTls(
        cert=getattr(files, f"{which}_cert"), key=getattr(files, f"{which}_key"), ca=files.ca
    )


@pytest.mark.server
@pytest.mark.parametrize("servers", ["wrong_host"], indirect=True)
def test_host_name_mismatch_names_the_host_and_the_fix(
    servers: Servers, tls_files: TlsFiles
) -> None:
    """A certificate for another name is refused on both ports with the name asked for."""
    for result in _scan(servers, ClientTls(ca=tls_files.ca)):
        assert isinstance(result, FetchError) and result.kind is FetchErrorKind.TLS
        assert "certificate is not for 127.0.0.1: reissue it with 127.0.0.1" in result.detail


@pytest.mark.server
@pytest.mark.parametrize("servers", ["wrong_host"], indirect=True)
def test_hostname_verification_off_checks_the_ca_only_on_bookie_ports(
    servers: Servers, tls_files: TlsFiles
) -> None:
    """`tlsHostnameVerificationEnabled=false`: a bookie port's certificate for another name is
    taken when the CA signs it; gRPC, which has no such switch, still checks the name; a
    certificate from another CA is refused either way."""
    tls = client_tls(Config.of(tlsHostnameVerificationEnabled=False).tls, ca=tls_files.ca)
    assert tls is not None and not tls.check_hostname
    grpc_result, bookie_result = _scan(servers, tls)
    assert isinstance(bookie_result, BookieInfo)
    assert isinstance(grpc_result, FetchError) and "certificate is not for" in grpc_result.detail
    other = ClientTls(ca=tls_files.other_ca, check_hostname=False)
    assert all(isinstance(r, FetchError) for r in _scan(servers, other))


@pytest.mark.server
@pytest.mark.parametrize("servers", ["server"], indirect=True)
def test_wrong_ca_on_the_client_side_says_which_ca_file(
    servers: Servers, tls_files: TlsFiles
) -> None:
    """Checking the nodes against another CA names that file and the option to fix."""
    for result in _scan(servers, ClientTls(ca=tls_files.other_ca)):
        assert isinstance(result, FetchError) and result.kind is FetchErrorKind.TLS
        assert f"is not signed by the CA in {tls_files.other_ca}" in result.detail
        assert "--tls-ca" in result.detail
    assert all(isinstance(r, BookieInfo) for r in _scan(servers, ClientTls(ca=tls_files.ca)))


@pytest.mark.server
def test_start_tls_exchange_on_the_wire(tls_files: TlsFiles) -> None:
    """Byte for byte as upstream: START_TLS in the clear, EOK with a StartTLSResponse in the
    clear, then the handshake; before it, GET_BOOKIE_INFO is answered EUA."""
    server = BookieRpcServer(_measure, tls=_server(tls_files, "server"))
    server.start()

    async def talk() -> tuple[v3.Response, v3.Response, v3.Response]:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)

        async def answer() -> v3.Response:
            (length,) = struct.unpack(">I", await reader.readexactly(4))
            return v3.Response.FromString(await reader.readexactly(length))

        writer.write(frame(get_bookie_info_request(1)))
        refused = await answer()
        start = v3.Request(
            header=v3.BKPacketHeader(version=v3.VERSION_THREE, operation=v3.START_TLS, txnId=2),
            startTLSRequest=v3.StartTLSRequest(),
        )
        writer.write(frame(start))
        started = await answer()
        raw = writer.transport
        await writer.start_tls(ClientTls(ca=tls_files.ca).build(), server_hostname="127.0.0.1")
        writer.write(frame(get_bookie_info_request(3)))
        served = await answer()
        writer.close()
        raw.close()
        return refused, started, served

    try:
        refused, started, served = asyncio.run(talk())
    finally:
        server.stop(0)
    assert refused.status == pb.EUA and refused.header.txnId == 1
    assert started.status == pb.EOK and started.HasField("startTLSResponse")
    assert started.header.operation == v3.START_TLS and started.header.txnId == 2
    assert served.status == pb.EOK and served.getBookieInfoResponse.freeDiskSpace == 400


def test_registry_tls_hints_from_agents_and_bookies() -> None:
    """A bookie endpoint listing the ``tls`` extension (upstream's publishInfo) and an agent's
    ``grpc+tls://`` registration both read as TLS; plain ones do not."""
    bookie = encode_bookie_service_info("10.0.0.1", 3181, extensions=("tls",))
    address = registration_address(NodeId("10.0.0.1:3181"), bookie)
    assert address == "bookie-rpc+tls://10.0.0.1:3181" and wants_tls(address)
    assert split_address(address) == (WireProtocol.BOOKIE_RPC, "10.0.0.1:3181")
    plain = registration_address(
        NodeId("10.0.0.1:3181"), encode_bookie_service_info("10.0.0.1", 3181)
    )
    assert plain == "bookie-rpc://10.0.0.1:3181" and not wants_tls(plain)
    agent = WireProtocol.GRPC.address("10.0.0.2:3182", tls=True)
    assert agent == "grpc+tls://10.0.0.2:3182"
    assert split_address(agent) == (WireProtocol.GRPC, "10.0.0.2:3182")
    assert not wants_tls("10.0.0.2:3182")


def test_upstream_tls_keys_configure_both_sides(tls_files: TlsFiles) -> None:
    """BookKeeper's key names reach the server and client settings; options win over keys."""
    config = Config.of(
        tlsProviderFactoryClass="org.apache.bookkeeper.tls.TLSContextFactory",
        tlsProvider="OpenSSL",
        tlsCertificatePath=str(tls_files.server_cert),
        tlsKeyStore=str(tls_files.server_key),
        tlsKeyStoreType="PEM",
        tlsTrustStore=str(tls_files.ca),
        tlsTrustStoreType="PEM",
        tlsClientAuthentication="true",
    )
    server = server_tls(config.tls)
    assert server == ServerTls(
        cert=tls_files.server_cert, key=tls_files.server_key, ca=tls_files.ca, client_auth=True
    )
    client = client_tls(config.tls, cert=tls_files.client_cert, key=tls_files.client_key)
    assert client is not None and client.everywhere and client.cert == tls_files.client_cert
    assert client_tls(Config().tls) is None and server_tls(Config().tls) is None


@pytest.mark.parametrize(
    ("keys", "needle"),
    [
        pytest.param({"tlsKeyStoreType": "JKS"}, "tlsKeyStoreType=JKS", id="JKS keystore"),
        pytest.param(
            {"tlsKeyStorePasswordPath": "/etc/pw"},
            "tlsKeyStorePasswordPath=/etc/pw",
            id="encrypted key",
        ),
    ],
)
def test_what_trimtab_cannot_read_is_refused_naming_the_key(
    tls_files: TlsFiles, keys: dict[str, str], needle: str
) -> None:
    """Non-PEM stores and encrypted keys get one sentence naming the key and the conversion."""
    config = Config.of(
        tlsCertificatePath=str(tls_files.server_cert), tlsKeyStore=str(tls_files.server_key), **keys
    )
    with pytest.raises(TlsSettingsError, match=needle.replace("/", ".")):
        server_tls(config.tls)
