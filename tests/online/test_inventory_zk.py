"""``trimtab inventory --zk`` against the real ZooKeeper of the online tests (issue 42).

Bookies are registered the way a 4.x bookie registers (``ZKRegistrationManager``: ephemeral
``<root>/available/<bookieId>`` and ``<root>/available/readonly/<bookieId>`` holding a
``BookieServiceInfoFormat``, or nothing for a pre-4.12 bookie whose id is its address) and
answered by stand-in bookies: trimtab's BookKeeper v3 server (the agent's bookie port) with a
fixed disk each, in plaintext or TLS. Racks are Pulsar's ``/bookies`` document; brokers are
``LocalBrokerData`` reports under ``/loadbalance/brokers``, the shipped example reports. Each test
runs the command a user types (``CliRunner``) under a chroot of its own, and reads the written
inventory back with ``topology``, ``place`` and ``shed``.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from typer.testing import CliRunner

from tests.online.conftest import ZooKeeperServer
from tests.tls_certs import TlsFiles
from trimtab.cli import app
from trimtab.diskinfo import BookieInfo
from trimtab.systems.bookkeeper.bookieinfo.tls import ServerTls
from trimtab.systems.bookkeeper.bookieinfo.v3server import BookieRpcServer
from trimtab.systems.bookkeeper.registry import encode_bookie_service_info

pytestmark = pytest.mark.server
runner = CliRunner()
EXAMPLES = Path(__file__).parents[2] / "examples"
REPORTS = EXAMPLES / "shedding" / "load-reports"
_chroots = itertools.count()
GB = 10**9


class Cluster:
    """A chroot of the session ZooKeeper laid out as a Pulsar-managed BookKeeper's."""

    def __init__(self, zookeeper: ZooKeeperServer) -> None:
        self.chroot = f"/inv{os.getpid()}-{next(_chroots)}"
        self.zk = f"{zookeeper.hosts}{self.chroot}"
        self.client = KazooClient(hosts=zookeeper.hosts)  # the session of the bookies' znodes
        self.client.start(timeout=30)
        self.client.ensure_path(f"{self.chroot}/ledgers/available/readonly")
        self.servers: list[BookieRpcServer] = []

    def bookie(
        self,
        bookie_id: str,
        free_gb: int,
        total_gb: int,
        *,
        readonly: bool = False,
        tls: ServerTls | None = None,
        legacy: bool = False,
    ) -> BookieRpcServer:
        """A stand-in bookie answering GET_BOOKIE_INFO, registered under ``bookie_id`` (a
        legacy bookie's id is its address and its znode is empty)."""
        disk = BookieInfo.checked(total_gb * GB, free_gb * GB)
        server = BookieRpcServer(lambda: disk, tls=tls)
        server.start()
        self.servers.append(server)
        if legacy:
            bookie_id, data = f"127.0.0.1:{server.port}", b""
        else:
            extensions = ("tls",) if tls else ()
            data = encode_bookie_service_info("127.0.0.1", server.port, extensions=extensions)
        self.register(bookie_id, data, readonly=readonly)
        return server

    def register(self, bookie_id: str, data: bytes, *, readonly: bool = False) -> None:
        side = "available/readonly" if readonly else "available"
        self.client.create(f"{self.chroot}/ledgers/{side}/{bookie_id}", data, ephemeral=True)

    def racks(self, table: dict[str, str]) -> None:
        doc = {"default": {b: {"rack": r, "hostname": b.split(":")[0]} for b, r in table.items()}}
        self.client.create(f"{self.chroot}/bookies", json.dumps(doc).encode())

    def brokers(self) -> list[str]:
        """The shipped example reports as the brokers' ``/loadbalance/brokers`` znodes."""
        names = []
        for report in sorted(REPORTS.glob("*.json")):
            self.report(report.stem, report.read_bytes())
            names.append(report.stem)
        return names

    def report(self, broker: str, data: bytes) -> None:
        path = f"{self.chroot}/loadbalance/brokers/{broker}"
        self.client.create(path, data, ephemeral=True, makepath=True)

    def close(self) -> None:
        for server in self.servers:
            server.stop(0)
        self.client.stop()
        self.client.close()


@pytest.fixture
def cluster(zookeeper: ZooKeeperServer) -> Iterator[Cluster]:
    made = Cluster(zookeeper)
    yield made
    made.close()


def _inventory(*args: str) -> Any:
    return runner.invoke(app, ["inventory", *args])


def _json(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _defaults(tmp_path: Path) -> Path:
    path = tmp_path / "defaults.csv"
    path.write_text("node,cores,memory_bytes,nic_bps\n,16,68719476736,25000000000\n")
    return path


def _bookkeeper(cluster: Cluster) -> None:
    """Four writable bookies on two racks (one legacy, one that does not answer), one
    read-only bookie."""
    cluster.bookie("bk1.dc1:3181", 400, 1000)
    cluster.bookie("bk2.dc1:3181", 100, 2000)
    cluster.bookie("bk3.dc1:3181", 50, 500, readonly=True)
    cluster.bookie("legacy", 700, 1000, legacy=True)
    cluster.register("bk9.dc1:3181", encode_bookie_service_info("127.0.0.1", 1))
    cluster.racks({"bk1.dc1:3181": "/dc1/r1", "bk2.dc1:3181": "/dc1/r2", "bk3.dc1:3181": "/dc1/r2"})


def test_bookies_from_the_registry_with_disks_racks_and_read_only_marked(
    cluster: Cluster,
) -> None:
    """Every bookie of the registry: disks from GET_BOOKIE_INFO, racks from /bookies, the
    read-only one marked, the unreachable one listed with its reason, the legacy one by its
    address."""
    _bookkeeper(cluster)
    doc = _json(_inventory("--zk", cluster.zk, "--timeout", "3", "--json"))
    assert doc["system"] == "bookkeeper"
    nodes = {n["node"]: n for n in doc["nodes"]}
    legacy = f"127.0.0.1:{cluster.servers[3].port}"
    assert set(nodes) == {"bk1.dc1:3181", "bk2.dc1:3181", "bk3.dc1:3181", legacy, "bk9.dc1:3181"}
    one = nodes["bk1.dc1:3181"]
    assert (one["disk_total_bytes"], one["disk_free_bytes"]) == (1000 * GB, 400 * GB)
    where = (one["region"], one["rack"], one["state"], one["role"])
    assert where == ("dc1", "r1", "writable", "bookie")
    assert one["sources"]["disk_free_bytes"] == "measured" and one["problems"] == []
    assert nodes["bk3.dc1:3181"]["state"] == "readonly"
    assert nodes[legacy]["disk_total_bytes"] == 1000 * GB and "rack" not in nodes[legacy]
    down = nodes["bk9.dc1:3181"]
    assert "disk_total_bytes" not in down and down["state"] == "writable"
    assert down["problems"] == ["GET_BOOKIE_INFO: unavailable: connection refused"]
    assert any("/bookies" in note for note in doc["summary"])


def test_read_back_by_topology_and_place(cluster: Cluster, tmp_path: Path) -> None:
    """The written inventory is one `topology` shows with its racks and one `place` places
    ensembles on: rack-aware, never on the read-only bookie, weighted by free disk."""
    _bookkeeper(cluster)
    out = tmp_path / "bookies.csv"
    args = ["--zk", cluster.zk, "--timeout", "3", "--defaults", str(_defaults(tmp_path))]
    result = _inventory(*args, "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "bk9.dc1:3181: GET_BOOKIE_INFO: unavailable: connection refused" in result.stdout
    shown = _json(runner.invoke(app, ["topology", "-i", str(out), "--json"]))
    racks = shown["clusters"][0]["racks"]
    assert "/dc1/r1" in racks and "/dc1/r2" in racks
    placed = _json(
        runner.invoke(
            app,
            [
                *("place", "-i", str(out), "-E", "2", "-W", "2", "-A", "2"),
                *("--policy", "rackaware", "--weights", "disk", "-n", "400", "--json"),
            ],
        )
    )
    assert "bk3.dc1:3181" not in {b for e in placed["ensembles"] for b in e}
    assert placed["inclusion"]["bk1.dc1:3181"] > placed["inclusion"]["bk2.dc1:3181"]


def test_bookies_over_tls_with_the_readers_options(cluster: Cluster, tls_files: TlsFiles) -> None:
    """Bookies that want TLS (mutual): answered with --tls-ca/--tls-cert/--tls-key; without a
    client certificate each is listed with the reason, not dropped."""
    tls = ServerTls(
        cert=tls_files.server_cert, key=tls_files.server_key, ca=tls_files.ca, client_auth=True
    )
    cluster.bookie("bk1.dc1:3181", 400, 1000, tls=tls)
    cluster.bookie("bk2.dc1:3181", 100, 2000, tls=tls)
    base = ["--zk", cluster.zk, "--timeout", "3", "--json"]
    secured = _json(
        _inventory(
            *base,
            "--tls-ca",
            str(tls_files.ca),
            "--tls-cert",
            str(tls_files.client_cert),
            "--tls-key",
            str(tls_files.client_key),
        )
    )
    assert [n["disk_total_bytes"] for n in secured["nodes"]] == [1000 * GB, 2000 * GB]
    refused = _json(_inventory(*base, "--tls-ca", str(tls_files.ca)))
    assert len(refused["nodes"]) == 2
    for node in refused["nodes"]:
        assert "disk_total_bytes" not in node
        assert node["problems"][0].startswith("GET_BOOKIE_INFO: tls:"), node


def test_pulsar_brokers_from_loadbalance_and_both_systems(cluster: Cluster, tmp_path: Path) -> None:
    """Only brokers: their limits. Bookies and brokers together: both written (role column)
    and the summary says so; --system picks one."""
    brokers = cluster.brokers()
    only = _json(_inventory("--zk", cluster.zk, "--json"))
    assert only["system"] == "pulsar"
    assert sorted(n["node"] for n in only["nodes"]) == brokers
    assert only["nodes"][0]["cores"] == 4 and only["nodes"][0]["role"] == "broker"
    cluster.bookie("bk1.dc1:3181", 400, 1000)
    both = _json(_inventory("--zk", cluster.zk, "--json"))
    assert both["system"] == "both"
    assert {n["role"] for n in both["nodes"]} == {"bookie", "broker"}
    assert any("both written" in note for note in both["summary"])
    picked = _json(_inventory("--zk", cluster.zk, "--system", "bookkeeper", "--json"))
    assert [n["node"] for n in picked["nodes"]] == ["bk1.dc1:3181"]
    typo = _inventory("--zk", cluster.zk, "--system", "bookeeper")
    assert typo.exit_code == 2 and "did you mean 'bookkeeper'" in typo.output


def test_brokers_read_back_by_shed(cluster: Cluster, tmp_path: Path) -> None:
    """The brokers' inventory is the one `shed` takes beside the metrics tables."""
    metrics = EXAMPLES / "shedding" / "node_metrics.csv"
    names = sorted({line.split(",")[2] for line in metrics.read_text().splitlines()[1:]})
    report = (REPORTS / "broker1:8080.json").read_bytes()
    for name in names:
        cluster.report(name, report)
    out = tmp_path / "brokers.csv"
    defaults = tmp_path / "disks.csv"
    defaults.write_text("node,disk_total_bytes\n,500000000000\n")
    args = ["--zk", cluster.zk, "--cluster", "pulsar-eu", "--defaults", str(defaults)]
    assert _inventory(*args, "-o", str(out)).exit_code == 0
    shed = runner.invoke(
        app,
        [
            *("shed", "-i", str(out), "--brokers", str(metrics)),
            *("--bundles", str(EXAMPLES / "shedding" / "bundle_metrics.csv"), "--json"),
        ],
    )
    assert shed.exit_code == 0, shed.output
    assert json.loads(shed.stdout)


def test_unreachable_zookeeper_and_an_empty_one_are_one_error_line(cluster: Cluster) -> None:
    """Nothing listening: one error line naming the address. A ZooKeeper with neither a
    registry nor brokers: one line naming both paths."""
    down = _inventory("--zk", "127.0.0.1:1", "--timeout", "2")
    assert down.exit_code == 2
    assert down.output.count("error:") == 1 and "127.0.0.1:1" in down.output
    empty = _inventory("--zk", cluster.zk, "--ledgers-root", "/elsewhere", "--timeout", "3")
    assert empty.exit_code == 2
    assert "/elsewhere/available" in empty.output and "/loadbalance/brokers" in empty.output
