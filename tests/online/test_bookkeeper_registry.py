"""BookKeeper's registry as bookies really lay it out, read by the watcher and `bookieinfo --zk`.

The znodes are written here the way a 4.x bookie writes them (``ZKRegistrationManager``):
ephemeral ``<root>/available/<bookieId>`` and ``<root>/available/readonly/<bookieId>`` holding
a serialized ``BookieServiceInfoFormat`` encoded by hand from upstream's field numbers
(``DataFormats.proto``), or nothing for a pre-4.12 bookie. trimtab agents stand in for the
bookies, answering GET_BOOKIE_INFO on their v3 port.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from tests.online.conftest import AgentProcess, trimtab_command
from tests.online.helpers import pb_field
from trimtab.cluster import NodeId
from trimtab.systems.bookkeeper.registry import read_membership, registration_address
from trimtab.systems.bookkeeper.registry.proto import bookie_service_info_pb2 as bsi
from trimtab.systems.zookeeper import ZkTarget, encode_node_data

# -- BookieServiceInfoFormat by hand, from upstream's field numbers ----------------------------


def _endpoint(endpoint_id: str, port: int, host: str, protocol: str) -> bytes:
    """Endpoint{id(1), port(2), host(3), protocol(4)}; auth(5) and extensions(6) empty."""
    return pb_field(1, endpoint_id) + pb_field(2, port) + pb_field(3, host) + pb_field(4, protocol)


def service_info(*endpoints: bytes, properties: dict[str, str] | None = None) -> bytes:
    """BookieServiceInfoFormat{endpoints(6)..., properties(7) as map entries {key(1), value(2)}}."""
    body = b"".join(pb_field(6, e) for e in endpoints)
    for key, value in (properties or {}).items():
        body += pb_field(7, pb_field(1, key) + pb_field(2, value))
    return body


# Upstream's ``BookieServiceInfoTest`` (bookkeeper-server, ``org.apache.bookkeeper.discover``),
# seen from trimtab's side: trimtab needs only the address of the ``bookie-rpc`` endpoint.


def test_testSerializeDeserializeBookieServiceInfo() -> None:  # noqa: N802 (upstream's name)
    """Two endpoints and a property: the bytes parse, and the bookie-rpc one is chosen."""
    data = service_info(
        _endpoint("1", 1281, "localhost", "bookie-rpc"),
        _endpoint("2", 1281, "localhost", "bookie-http"),
        properties={"test": "value"},
    )
    parsed = bsi.BookieServiceInfoFormat.FromString(data)
    assert [(e.id, e.port, e.host, e.protocol) for e in parsed.endpoints] == [
        ("1", 1281, "localhost", "bookie-rpc"),
        ("2", 1281, "localhost", "bookie-http"),
    ]
    assert dict(parsed.properties) == {"test": "value"}
    assert parsed.SerializeToString() == data, "same field numbers as upstream"
    node = NodeId("127.0.0.1:3181")
    assert registration_address(node, data) == "bookie-rpc://localhost:1281"


def test_testDeserializeBookieServiceInfo() -> None:  # noqa: N802 (upstream's name)
    """No data or empty data: the legacy info, the bookie id is the bookie-rpc address."""
    node = NodeId("127.0.0.1:3181")
    assert registration_address(node, None) == "bookie-rpc://127.0.0.1:3181"
    assert registration_address(node, b"") == "bookie-rpc://127.0.0.1:3181"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (encode_node_data("127.0.0.1:7"), "127.0.0.1:7"),
        (service_info(_endpoint("http", 8080, "h", "http")), None),
        (service_info(_endpoint("bookie", 3181, "::1", "bookie-rpc")), "bookie-rpc://[::1]:3181"),
        (b"\xff\xfe not protobuf", None),
    ],
    ids=["a trimtab agent's JSON", "no bookie-rpc endpoint", "an IPv6 host", "junk"],
)
def test_registration_data_says_where_and_how_to_ask(data: bytes, expected: str | None) -> None:
    """JSON is gRPC (bare address), BookieServiceInfoFormat is v3 at its bookie-rpc endpoint."""
    assert registration_address(NodeId("bk1:3181"), data) == expected


# -- a registry laid out the BookKeeper way ----------------------------------------------------


@pytest.fixture
def zk(zk_target: ZkTarget) -> Iterator[KazooClient]:
    """The test's own session: the 'bookies' ephemeral znodes live as long as it does."""
    client = KazooClient(hosts=zk_target.hosts)
    client.start(timeout=10)
    root = zk_target.root
    client.ensure_path(f"{root}/available/readonly")
    client.create(
        f"{root}/LAYOUT", b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1"
    )
    client.create(f"{root}/INSTANCEID", b"d3e1c6e6-0000-4000-8000-000000000000")
    yield client
    client.stop()
    client.close()


def register(
    zk: KazooClient, target: ZkTarget, bookie_id: str, data: bytes, *, readonly: bool = False
) -> None:
    """What ZKRegistrationManager does: an ephemeral znode named by the bookie id, plus a cookie."""
    zk.create(target.node_path(bookie_id, readonly=readonly), data, ephemeral=True)
    zk.create(f"{target.root}/cookies/{bookie_id}", b"5\nbookieHost: ...", makepath=True)


def _bsi(port: int) -> bytes:
    """A bookie that also publishes an HTTP endpoint first: the bookie-rpc one must be picked."""
    return service_info(
        _endpoint("http", 8000, "127.0.0.1", "http"),
        _endpoint("bookie", port, "127.0.0.1", "bookie-rpc"),
    )


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def _statvfs(path: Path) -> tuple[int, int]:
    vfs = os.statvfs(path)
    return vfs.f_blocks * vfs.f_frsize, vfs.f_bavail * vfs.f_frsize


def _bookieinfo(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [*trimtab_command(), "bookieinfo", "--json", "--timeout", "2", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def test_bookieinfo_sees_a_bookkeeper_registry_and_each_bookies_own_failure(
    zk: KazooClient, zk_target: ZkTarget, agents: list[AgentProcess], tmp_path: Path
) -> None:
    """Every writable and read-only bookie with its real statvfs figures; a bookie that answers
    EUA, one that hangs and one that closes the connection each show as that bookie's error."""
    names = ("healthy1", "healthy2", "eua", "hang", "close")
    started = {n: AgentProcess(tmp_path, f"{n}.agent:3181", None).start() for n in names}
    agents.extend(started.values())
    started["eua"].set_faults(status="EUA")
    started["hang"].set_faults(hang_seconds=30)
    started["close"].set_faults(close_connection=True)
    v3_port = {n: _port(a.ready["bookie_address"]) for n, a in started.items()}

    legacy = f"127.0.0.1:{v3_port['healthy2']}"  # a pre-4.12 bookie: id = address, no data
    register(zk, zk_target, "bookie-w1.example:3181", _bsi(v3_port["healthy1"]))
    register(zk, zk_target, legacy, b"")
    register(zk, zk_target, "bookie-r1.example:3181", _bsi(v3_port["healthy2"]), readonly=True)
    register(zk, zk_target, "agent-g1.example:3181", encode_node_data(started["healthy1"].address))
    register(zk, zk_target, "bookie-eua.example:3181", _bsi(v3_port["eua"]))
    register(zk, zk_target, "bookie-hang.example:3181", _bsi(v3_port["hang"]))
    register(zk, zk_target, "bookie-close.example:3181", _bsi(v3_port["close"]))
    no_rpc = service_info(_endpoint("http", 8000, "127.0.0.1", "http"))
    register(zk, zk_target, "bookie-nortp.example:3181", no_rpc)
    # children that are not bookies: a persistent leftover and a name that is no id
    zk.create(f"{zk_target.available}/stale.example:3181", b"")
    zk.create(f"{zk_target.available}/not a bookie!", b"")

    membership = read_membership(zk_target)
    writable = {
        "bookie-w1.example:3181",
        legacy,
        "agent-g1.example:3181",
        "bookie-eua.example:3181",
        "bookie-hang.example:3181",
        "bookie-close.example:3181",
        "bookie-nortp.example:3181",
    }
    assert membership.writable == writable
    assert membership.readonly == {"bookie-r1.example:3181"}
    assert membership.addresses[NodeId("agent-g1.example:3181")] == started["healthy1"].address
    assert membership.addresses[NodeId(legacy)] == f"bookie-rpc://{legacy}"

    doc = _bookieinfo("--zk", zk_target.hosts, "--ledgers-root", zk_target.root)
    rows = {row["id"]: row for row in doc["bookies"]}
    assert set(rows) == writable | {"bookie-r1.example:3181"}
    assert {i: r["state"] for i, r in rows.items()} == dict.fromkeys(writable, "writable") | {
        "bookie-r1.example:3181": "readonly"
    }
    serving = {
        "bookie-w1.example:3181": "healthy1",
        "agent-g1.example:3181": "healthy1",  # asked over gRPC, as it registered
        legacy: "healthy2",
        "bookie-r1.example:3181": "healthy2",
    }
    for bookie, agent in serving.items():
        total, free = _statvfs(started[agent].ledger_dir)
        row = rows[bookie]
        assert row["error"] is None, row
        assert row["total_bytes"] == total
        assert abs(row["free_bytes"] - free) <= total // 100, "free space moves a little"
    assert rows["bookie-eua.example:3181"]["error"] == "status: node answered EUA"
    assert rows["bookie-hang.example:3181"]["error"].startswith("timeout:")
    assert rows["bookie-close.example:3181"]["error"] == (
        "unavailable: the node closed the connection"
    )
    assert rows["bookie-nortp.example:3181"]["error"].startswith("no-address:")
    assert doc["total_bytes"] == sum(rows[b]["total_bytes"] for b in serving)

    listed = _bookieinfo(
        "--bookies",
        f"127.0.0.1:{v3_port['healthy1']},127.0.0.1:{v3_port['eua']},127.0.0.1:1",
    )
    errors = {row["id"]: row["error"] for row in listed["bookies"]}
    assert errors == {
        f"127.0.0.1:{v3_port['healthy1']}": None,
        f"127.0.0.1:{v3_port['eua']}": "status: node answered EUA",
        "127.0.0.1:1": "unavailable: connection refused",
    }
    assert {row["state"] for row in listed["bookies"]} == {"writable"}
