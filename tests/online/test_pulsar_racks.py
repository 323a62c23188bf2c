"""The Pulsar rack resolver against a real ZooKeeper: Pulsar's ``/bookies`` document, as
``pulsar-admin bookies set-bookie-rack`` writes it, read, watched and changed."""

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
from tests.online.helpers import wait_until
from trimtab.cli import app
from trimtab.config import Config
from trimtab.config.loader import read_config
from trimtab.errors import ResolverError
from trimtab.systems.bookkeeper.placement_setup import make_policy, make_resolver
from trimtab.systems.pulsar.bookies import BOOKIES_PATH, PulsarRackResolver, parse_bookies_racks
from trimtab.systems.zookeeper import zk_servers
from trimtab.topology.table import RackChanges

_paths = itertools.count()


def racks(**bookies: str) -> bytes:
    """A ``BookiesRackConfiguration`` document: one group, ``host:port -> rack``."""
    group = {
        f"{host.replace('_', '.')}:3181": {"rack": rack, "hostname": host.replace("_", ".")}
        for host, rack in bookies.items()
    }
    return json.dumps({"default": group}).encode()


@pytest.fixture
def zk(zookeeper: ZooKeeperServer) -> Iterator[Any]:
    client = KazooClient(hosts=zookeeper.hosts)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def path() -> str:
    return f"/t{os.getpid()}-racks{next(_paths)}/bookies"


def test_reads_follows_and_reports_changes(zookeeper: ZooKeeperServer, zk: Any, path: str) -> None:
    zk.create(path, racks(bk1="/dc1/r1", bk2="/dc1/r2"), makepath=True)
    resolver = PulsarRackResolver(zookeeper.hosts, path=path)
    heard: list[RackChanges] = []
    resolver.add_listener(heard.append)
    try:
        assert resolver.resolve(["bk1", "bk2:3181", "bk3"]) == [
            "/dc1/r1",
            "/dc1/r2",
            "/default-rack",
        ]
        seen = resolver.version
        zk.set(path, racks(bk1="/dc1/r1", bk2="/dc1/r3", bk3="dc2/r1"))
        assert resolver.wait_for_version(seen + 1, 10)
        assert resolver.resolve(["bk2", "bk3"]) == ["/dc1/r3", "/dc2/r1"]
        assert heard[-1]["bk2"] == ("/dc1/r2", "/dc1/r3")
        assert heard[-1]["bk3:3181"] == (None, "/dc2/r1")
    finally:
        resolver.close()


def test_missing_deleted_and_unreadable_document(
    zookeeper: ZooKeeperServer, zk: Any, path: str
) -> None:
    resolver = PulsarRackResolver(zookeeper.hosts, path=path)
    try:
        assert resolver.resolve(["bk1"]) == ["/default-rack"]  # no znode yet: empty table
        seen = resolver.version
        zk.create(path, racks(bk1="/dc1/r1"), makepath=True)
        assert resolver.wait_for_version(seen + 1, 10)
        assert resolver.resolve(["bk1"]) == ["/dc1/r1"]
        seen = resolver.version
        zk.set(path, b"{not json")  # a bad hand edit keeps the last good table
        assert resolver.wait_for_version(seen + 1, 10)
        assert resolver.resolve(["bk1"]) == ["/dc1/r1"]
        seen = resolver.version
        zk.delete(path)
        assert resolver.wait_for_version(seen + 1, 10)
        assert resolver.resolve(["bk1"]) == ["/default-rack"]
    finally:
        resolver.close()


def test_selected_by_upstream_class_name_and_moves_policy_nodes(
    zookeeper: ZooKeeperServer, zk: Any
) -> None:
    """``reppDnsResolverClass`` naming Pulsar's class and ``zkServers``: the policy's nodes
    sit where ``/bookies`` says, and a change there relocates them (onBookieRackChange)."""
    zk.ensure_path(BOOKIES_PATH)
    zk.set(BOOKIES_PATH, racks(bk1="/dc1/r1", bk2="/dc1/r2"))
    config = Config.of(
        reppDnsResolverClass="org.apache.pulsar.bookie.rackawareness.BookieRackAffinityMapping",
        zkServers=zookeeper.hosts,
    )
    assert config.topology.dns_resolver_class == "pulsar"
    resolver = make_resolver(kind="pulsar", zk_servers=zk_servers(config), strict=True)
    assert isinstance(resolver, PulsarRackResolver)
    policy = make_policy(config, resolver=resolver)
    try:
        policy.on_cluster_changed(["bk1:3181", "bk2:3181"], [])
        assert policy.view.remembered_rack("bk2:3181") == "/dc1/r2"
        seen = resolver.version
        zk.set(BOOKIES_PATH, racks(bk1="/dc1/r1", bk2="/dc1/r9"))
        assert resolver.wait_for_version(seen + 1, 10)
        wait_until(lambda: policy.view.remembered_rack("bk2:3181") == "/dc1/r9", timeout=10)
    finally:
        resolver.close()
        zk.delete(BOOKIES_PATH)


def test_no_zookeeper_configured_falls_back_unless_enforced() -> None:
    """Upstream's start-up rule for any resolver: the default rack, or (with
    ``enforceMinNumRacksPerWriteQuorum``, here ``strict``) the error naming what is missing."""
    fallback = make_resolver(kind="pulsar", zk_servers=None)
    assert fallback.resolve(["bk1"]) == ["/default-rack"]
    with pytest.raises(ResolverError, match="zkServers"):
        make_resolver(kind="pulsar", zk_servers=None, strict=True)


def test_parse_keys_and_upstream_rack_rules() -> None:
    doc = {
        "g1": {"10.0.0.1:3181": {"rack": "r1", "hostname": "bk1.dc1"}},
        "g2": {"10.0.0.2:3181": {"rack": "/"}, "10.0.0.3:3181": {"rack": ""}},
    }
    assert parse_bookies_racks(json.dumps(doc)) == {
        "10.0.0.1:3181": "/r1",
        "10.0.0.1": "/r1",
        "bk1.dc1": "/r1",
    }
    with pytest.raises(ValueError):
        parse_bookies_racks("[1, 2]")


def test_topology_command_reads_racks_from_zookeeper(zookeeper: ZooKeeperServer, zk: Any) -> None:
    """``trimtab topology --pulsar-racks HOST:PORT``: locations from ``/bookies``, not from the
    inventory's columns; a bookie the map does not name goes to the default rack."""
    sample = Path(__file__).parents[2] / "src" / "trimtab" / "data" / "sample_inventory.csv"
    doc = {"default": {"bk01.us-east.example.net:3181": {"rack": "/zk-dc/zk-rack"}}}
    zk.ensure_path(BOOKIES_PATH)
    zk.set(BOOKIES_PATH, json.dumps(doc).encode())
    try:
        args = ["topology", "-i", str(sample), "--cluster", "bk-prod", "--json"]
        result = CliRunner().invoke(app, [*args, "--pulsar-racks", zookeeper.hosts])
    finally:
        zk.delete(BOOKIES_PATH)
    assert result.exit_code == 0, result.output
    nodes = {n["id"]: n["location"] for n in json.loads(result.output)["clusters"][0]["nodes"]}
    assert nodes["bk01.us-east.example.net:3181"] == "/zk-dc/zk-rack"
    assert nodes["bk02.us-east.example.net:3181"] == "/default-region/default-rack"


def test_watch_survives_a_zookeeper_restart(private_zookeeper: ZooKeeperServer) -> None:
    """The server restarts under the resolver: the last table is kept meanwhile, and a change
    written after the restart is still followed (kazoo re-arms the watch on reconnect)."""
    writer = KazooClient(hosts=private_zookeeper.hosts)
    writer.start(timeout=30)  # a loaded machine starts ZooKeeper slowly
    writer.create(BOOKIES_PATH, racks(bk1="/dc1/r1"), makepath=True)
    writer.stop()
    writer.close()
    resolver = PulsarRackResolver(private_zookeeper.hosts)
    try:
        assert resolver.resolve(["bk1"]) == ["/dc1/r1"]
        private_zookeeper.restart()
        assert resolver.resolve(["bk1"]) == ["/dc1/r1"]
        writer = KazooClient(hosts=private_zookeeper.hosts)
        writer.start(timeout=30)  # a loaded machine restarts slowly
        try:
            writer.set(BOOKIES_PATH, racks(bk1="/dc2/r5"))
            wait_until(lambda: resolver.resolve(["bk1"]) == ["/dc2/r5"], timeout=20)
        finally:
            writer.stop()
            writer.close()
    finally:
        resolver.close()


def test_a_broker_conf_switches_the_pulsar_resolver_on(
    zookeeper: ZooKeeperServer, zk: Any, tmp_path: Path
) -> None:
    """A broker.conf as Pulsar ships it (``bookkeeperClientRackawarePolicyEnabled=true``) with
    ``metadataStoreUrl=zk:HOST:PORT/chroot``: ``make_policy`` given ``zk_servers(config)``
    reads ``/bookies`` under that chroot, as the broker's BookKeeper client does."""
    chroot = f"/t{os.getpid()}-conf"
    zk.ensure_path(f"{chroot}{BOOKIES_PATH}")
    zk.set(f"{chroot}{BOOKIES_PATH}", racks(bk1="/dc1/r1", bk2="/dc1/r2"))
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "bookkeeperClientRackawarePolicyEnabled=true\n"
        f"metadataStoreUrl=zk:{zookeeper.hosts}{chroot}\n",
        encoding="utf-8",
    )
    config = read_config(conf).config
    policy = make_policy(config, zk_servers=zk_servers(config))
    try:
        policy.on_cluster_changed(["bk1:3181", "bk2:3181"], [])
        assert policy.view.remembered_rack("bk2:3181") == "/dc1/r2"
    finally:
        policy.close()  # ends the resolver's ZooKeeper session too
        zk.delete(chroot, recursive=True)


def test_pulsar_racks_placing_nobody_with_a_failing_script_is_one_warning(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    """``topology --resolver-script S --pulsar-racks Z`` with no ``/bookies`` map: every node
    on the default rack, one ``warning:`` line saying so and that the script is not asked,
    exit 0 (a KeyError: 'default-rack' before; issue 43)."""
    from tests.robustness.harness import invoke
    from tests.robustness.test_environment import failing_rack_script

    inventory = Path(__file__).parents[2] / "examples" / "shedding" / "inventory.csv"
    script = failing_rack_script(tmp_path)
    args = ["topology", "-i", str(inventory), "--resolver-script", str(script)]
    run = invoke([*args, "--pulsar-racks", zookeeper.hosts], watchdog=60)
    assert run.result.exit_code == 0, run.describe()
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("warning: Pulsar's rack map"), lines
    assert "all on the default rack" in lines[0] and str(script) in lines[0]
    assert "default-rack  6 nodes" in run.result.stdout


def test_wrong_depth_entries_are_skipped_with_one_warning(
    zookeeper: ZooKeeperServer, zk: Any
) -> None:
    """A ``/bookies`` map with a bookie one level too high and a rack of three levels among
    racks of two: ``topology`` still runs, says so in one ``warning:`` line, and places the
    bookies of the good entries where the map says."""
    sample = Path(__file__).parents[2] / "src" / "trimtab" / "data" / "sample_inventory.csv"
    doc = {
        "default": {
            "bk01.us-east.example.net:3181": {"rack": "/zk-dc/zk-rack"},
            "bk02.us-east.example.net:3181": "/zk-dc/zk-rack",
            "bk03.us-east.example.net:3181": {"rack": "/zk-dc/zk-rack/extra"},
        },
        "bk04.us-east.example.net:3181": {"rack": "/zk-dc/zk-rack"},
    }
    from tests.robustness.harness import invoke

    zk.ensure_path(BOOKIES_PATH)
    zk.set(BOOKIES_PATH, json.dumps(doc).encode())
    try:
        args = ["topology", "-i", str(sample), "--cluster", "bk-prod", "--json"]
        run = invoke([*args, "--pulsar-racks", zookeeper.hosts], watchdog=60)
    finally:
        zk.delete(BOOKIES_PATH)
    assert run.result.exit_code == 0, run.describe()
    clusters = json.loads(run.result.stdout)["clusters"]
    nodes = {n["id"]: n["location"] for n in clusters[0]["nodes"]}
    assert nodes["bk01.us-east.example.net:3181"] == "/zk-dc/zk-rack"
    assert nodes["bk03.us-east.example.net:3181"] == "/default-region/default-rack"
    warnings = [line for line in run.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "3 entries skipped" in warnings[0], run.stderr
