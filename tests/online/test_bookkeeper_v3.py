"""GET_BOOKIE_INFO in BookKeeper's v3 protocol: the bytes, the answering rules, client and server.

The wire bytes are checked against a frame built here by hand from upstream's field numbers
(``BookkeeperProtocol.proto``), not from trimtab's generated code, so a wrong field number in
``bookkeeper_v3.proto`` fails here.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.online.faults import FaultFile, FaultyBookieRpcServer
from tests.online.helpers import RecordingSink, pb_field, wait_until
from trimtab.cluster import NodeId
from trimtab.diskinfo import BookieInfo
from trimtab.systems.bookkeeper.bookieinfo.info import FetchError, FetchResult
from trimtab.systems.bookkeeper.bookieinfo.loop import LoopThread
from trimtab.systems.bookkeeper.bookieinfo.proto import bookieinfo_pb2 as pb
from trimtab.systems.bookkeeper.bookieinfo.proto import bookkeeper_v3_pb2 as v3
from trimtab.systems.bookkeeper.bookieinfo.reader import BookieInfoReader
from trimtab.systems.bookkeeper.bookieinfo.routing import RoutingBookieInfoClient
from trimtab.systems.bookkeeper.bookieinfo.server import BookieInfoServer
from trimtab.systems.bookkeeper.bookieinfo.v3 import (
    AUTH_DISABLED_PLUGIN,
    MAX_FRAME_BYTES,
    frame,
    get_bookie_info_request,
    respond,
    result_of,
)
from trimtab.systems.bookkeeper.bookieinfo.v3client import BookieRpcClient
from trimtab.systems.bookkeeper.bookieinfo.v3server import BookieRpcServer
from trimtab.systems.bookkeeper.registry import Membership

DISK = BookieInfo(total_disk_bytes=4_000, free_disk_bytes=1_500)
A, B, C = NodeId("bk1:3181"), NodeId("bk2:3181"), NodeId("bk3:3181")


def _disk() -> BookieInfo:
    return DISK


# -- protobuf by hand, from upstream's field numbers -------------------------------------------


def _upstream_request(txn: int, *, version: int = 3, operation: int = 8) -> bytes:
    """Request{header(1){version(1), operation(2), txnId(3)}, getBookieInfoRequest(105)
    {requested(1) = TOTAL_DISK_CAPACITY(1) | FREE_DISK_SPACE(2)}}, framed."""
    header = pb_field(1, version) + pb_field(2, operation) + pb_field(3, txn)
    body = pb_field(1, header) + pb_field(105, pb_field(1, 1 | 2))
    return struct.pack(">I", len(body)) + body


def test_request_bytes_are_upstreams() -> None:
    """trimtab's GET_BOOKIE_INFO frame is byte for byte the one upstream's layout gives."""
    assert frame(get_bookie_info_request(7)) == _upstream_request(7)
    assert _upstream_request(7).hex() == "0000000d0a0608031008180" + "7ca06020803"


def _read_frame(sock: socket.socket) -> bytes:
    head = _recv_exactly(sock, 4)
    return _recv_exactly(sock, struct.unpack(">I", head)[0])


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


@pytest.fixture
def faults(tmp_path: Path) -> Path:
    return tmp_path / "faults.json"


@pytest.fixture
def server(faults: Path) -> Iterator[BookieRpcServer]:
    running = FaultyBookieRpcServer(_disk, faults=FaultFile(faults))
    running.start()
    yield running
    running.stop(grace=0)


def _host_port(running: BookieRpcServer) -> tuple[str, int]:
    return "127.0.0.1", running.port


def test_agent_answers_a_hand_built_request_on_a_plain_socket(server: BookieRpcServer) -> None:
    """No handshake (authentication off): the first frame is answered, header repeated."""
    with socket.create_connection(_host_port(server), timeout=5) as sock:
        for txn in (41, 42):  # one connection, two requests
            sock.sendall(_upstream_request(txn))
            response = v3.Response.FromString(_read_frame(sock))
            assert (response.header.txnId, response.header.operation) == (txn, v3.GET_BOOKIE_INFO)
            assert response.header.version == v3.VERSION_THREE
            assert response.status == pb.EOK
            gbi = response.getBookieInfoResponse
            assert (gbi.status, gbi.totalDiskCapacity, gbi.freeDiskSpace) == (pb.EOK, 4_000, 1_500)
    assert server.answer_counts() == {"EOK": 2}


@pytest.mark.parametrize(
    ("version", "operation", "status", "part"),
    [
        (2, v3.GET_BOOKIE_INFO, pb.EBADVERSION, "getBookieInfoResponse"),
        (3, v3.READ_ENTRY, pb.EBADREQ, None),
        (3, v3.AUTH, pb.EOK, "authResponse"),
    ],
    ids=["GET_BOOKIE_INFO of VERSION_TWO", "READ_ENTRY", "AUTH"],
)
def test_answering_rules_follow_upstream(
    version: int, operation: int, status: int, part: str | None
) -> None:
    """EBADVERSION for another version, EBADREQ for an operation not served, AUTH answered by
    the auth-disabled plugin (GetBookieInfoProcessorV3, BookieRequestProcessor)."""
    request = v3.Request.FromString(_upstream_request(9, version=version, operation=operation)[4:])
    response = respond(request, _disk)
    assert (response.status, response.header.txnId, response.header.operation) == (
        status,
        9,
        operation,
    )
    fields = {f.name for f, _ in response.ListFields()} - {"header", "status"}
    assert fields == ({part} if part else set())
    if part == "authResponse":
        assert response.authResponse.authPluginName == AUTH_DISABLED_PLUGIN
    if part == "getBookieInfoResponse":
        assert response.getBookieInfoResponse.status == pb.EBADVERSION


@pytest.mark.parametrize(
    ("response", "kind", "detail"),
    [
        (v3.Response(header=get_bookie_info_request(1).header, status=pb.EUA), "status", "EUA"),
        (v3.Response(header=get_bookie_info_request(1).header, status=pb.EOK), "bad-response", ""),
        (
            v3.Response(
                header=v3.BKPacketHeader(version=v3.VERSION_THREE, operation=v3.READ_LAC, txnId=1),
                status=pb.EOK,
            ),
            "bad-response",
            "READ_LAC",
        ),
    ],
    ids=["EUA alone", "EOK without the answer", "another operation"],
)
def test_unusable_responses_are_that_nodes_error(
    response: v3.Response, kind: str, detail: str
) -> None:
    """A refusal or an incomplete answer is a FetchError naming what came, never a crash."""
    result = result_of(response)
    assert isinstance(result, FetchError) and result.kind.value == kind and detail in result.detail


@pytest.mark.parametrize(
    "junk",
    [struct.pack(">II", 4, 0x02010000), struct.pack(">I", MAX_FRAME_BYTES + 1)],
    ids=["a v2 request", "an oversized frame"],
)
def test_server_closes_connections_that_do_not_speak_v3(
    server: BookieRpcServer, junk: bytes
) -> None:
    """trimtab speaks no v2 and reads no frame above the bound: the connection just ends."""
    with socket.create_connection(_host_port(server), timeout=5) as sock:
        sock.sendall(junk)
        assert sock.recv(16) == b""
    assert server.answer_counts() == {}


def _fetch(client: BookieRpcClient, targets: dict[NodeId, str], timeout: float = 2.0):
    return client.fetch_many(targets, timeout=timeout)


def _kind(result: FetchResult) -> str:
    return result.kind.value if isinstance(result, FetchError) else "ok"


def test_client_keeps_one_connection_per_bookie_across_scans(server: BookieRpcServer) -> None:
    """Three scans, one TCP connection; retain([]) closes it."""
    client = BookieRpcClient()
    try:
        for _ in range(3):
            assert _fetch(client, {A: f"bookie-rpc://{server.address}"}) == {A: DISK}
        assert (server.connections_accepted, client.connects, client.open_connections) == (1, 1, 1)
        client.retain([])
        assert client.open_connections == 0
    finally:
        client.close()


@pytest.mark.server
def test_refusal_hang_and_closed_connection_are_each_that_bookies_error(
    tmp_path: Path,
) -> None:
    """EUA, a hang and a closed connection fail only their own node; the next scan recovers."""
    loop = LoopThread("test-bookies")
    files = {n: tmp_path / f"{n.replace(':', '_')}.json" for n in (A, B, C)}
    servers = {
        n: FaultyBookieRpcServer(_disk, faults=FaultFile(f), loop=loop) for n, f in files.items()
    }
    healthy = BookieRpcServer(_disk, loop=loop)
    client = BookieRpcClient()
    try:
        for running in [*servers.values(), healthy]:
            running.start()
        files[A].write_text(json.dumps({"status": "EUA"}))
        files[B].write_text(json.dumps({"hang_seconds": 30}))
        files[C].write_text(json.dumps({"close_connection": True}))
        ok = NodeId("bk4:3181")
        targets = {n: s.address for n, s in servers.items()} | {ok: healthy.address}
        results = _fetch(client, targets, timeout=0.5)
        assert {n: _kind(r) for n, r in results.items()} == {
            A: "status",
            B: "timeout",
            C: "unavailable",
            ok: "ok",
        }
        assert "EUA" in str(results[A]) and "closed the connection" in str(results[C])
        for path in files.values():
            path.write_text("{}")
        assert _fetch(client, targets) == dict.fromkeys(targets, DISK)
        assert servers[A].connections_accepted == 1, "a refusal keeps the connection"
        assert servers[B].connections_accepted == 2, "a timed-out connection is replaced"
    finally:
        client.close()
        for running in [*servers.values(), healthy]:
            running.stop(grace=0)
        loop.close()


def test_nothing_listening_and_bad_addresses_are_errors_not_exceptions() -> None:
    """Refused, unresolvable, unparsable or missing addresses each give a typed error."""
    client = BookieRpcClient()
    try:
        results = _fetch(
            client,
            {
                A: "127.0.0.1:1",
                B: "bookie-rpc://no-such-host.invalid:3181",
                C: "http://x:1",
                NodeId("bk4:3181"): "",
            },
        )
        assert {n: _kind(r) for n, r in results.items()} == {
            A: "unavailable",
            B: "unavailable",
            C: "no-address",
            "bk4:3181": "no-address",
        }
    finally:
        client.close()
    closed = _fetch(client, {A: "127.0.0.1:1"})[A]
    assert isinstance(closed, FetchError) and "closed" in closed.detail


class RawBookie:
    """A socket server answering each request with whatever ``reply(payload)`` returns."""

    def __init__(self, reply: Callable[[bytes], bytes]) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self._reply = reply
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            try:
                while True:
                    conn.sendall(self._reply(_read_frame(conn)))
            except OSError:
                return

    def close(self) -> None:
        self.sock.close()
        self._thread.join(5)


def _answer_with_txn(txn_of: Callable[[int], int]) -> Callable[[bytes], bytes]:
    def reply(payload: bytes) -> bytes:
        request = v3.Request.FromString(payload)
        response = respond(request, _disk)
        response.header.txnId = txn_of(request.header.txnId)
        return frame(response)

    return reply


@pytest.mark.server
@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (lambda _: struct.pack(">I", 3) + b"\xff\xff\xff", "bad-response"),
        (lambda _: struct.pack(">I", MAX_FRAME_BYTES + 1), "bad-response"),
        (_answer_with_txn(lambda txn: txn + 1000), "timeout"),
    ],
    ids=["junk bytes", "an oversized frame", "an answer to another request"],
)
def test_client_survives_a_bookie_talking_nonsense(
    reply: Callable[[bytes], bytes], kind: str
) -> None:
    """Junk and oversized frames are a bad response; an answer nobody asked for is dropped."""
    bookie = RawBookie(reply)
    client = BookieRpcClient()
    try:
        assert _kind(_fetch(client, {A: bookie.address}, timeout=0.5)[A]) == kind
    finally:
        client.close()
        bookie.close()


@pytest.mark.server
def test_concurrency_is_bounded(tmp_path: Path) -> None:
    """With max_in_flight=2, never more than two requests are at the bookies at once."""
    lock = threading.Lock()
    now = [0]
    peak = [0]
    release = threading.Event()

    def slow_disk() -> BookieInfo:
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        release.wait(0.1)
        with lock:
            now[0] -= 1
        return DISK

    loop = LoopThread("test-bookies")
    servers = [BookieRpcServer(slow_disk, loop=loop) for _ in range(6)]
    client = BookieRpcClient(max_in_flight=2)
    try:
        for running in servers:
            running.start()
        targets = {NodeId(f"bk{i}:3181"): s.address for i, s in enumerate(servers)}
        assert _fetch(client, targets, timeout=5) == dict.fromkeys(targets, DISK)
        assert peak[0] <= 2
    finally:
        client.close()
        for running in servers:
            running.stop(grace=0)
        loop.close()


def test_routing_client_asks_each_node_in_its_registered_protocol(
    server: BookieRpcServer,
) -> None:
    """A bare address is gRPC (a trimtab agent), bookie-rpc:// is v3 (a bookie), in one scan."""
    grpc_server = BookieInfoServer(lambda: BookieInfo(9_000, 3_000))
    grpc_server.start()
    client = RoutingBookieInfoClient()
    try:
        targets = {A: grpc_server.address, B: f"bookie-rpc://{server.address}", C: None}
        results = client.fetch_many(targets, timeout=2)
        assert results[A] == BookieInfo(9_000, 3_000) and results[B] == DISK
        assert _kind(results[C]) == "no-address"
        client.retain([])
        wait_until(lambda: client.bookie_rpc.open_connections == 0, what="v3 connection closed")
    finally:
        client.close()
        grpc_server.stop(grace=0)


def test_reader_weighs_bookies_asked_over_v3(server: BookieRpcServer) -> None:
    """The reader `watch` runs, fed a membership of bookies, pushes their v3 answers and reuses
    the connection from scan to scan."""
    sink = RecordingSink()
    client = RoutingBookieInfoClient()
    # A long time-out: a scan that timed out on a loaded machine drops its connection on purpose,
    # and reuse is what this test is about.
    reader = BookieInfoReader(sink, client, interval_seconds=0.05, timeout_seconds=30)
    reader.on_membership(
        Membership.of(writable=[A], addresses={A: f"bookie-rpc://{server.address}"})
    )
    reader.start()
    try:
        wait_until(lambda: sink.updates >= 3 and sink.latest() == {A: DISK}, what="three scans")
    finally:
        reader.close()
    assert server.connections_accepted == 1
