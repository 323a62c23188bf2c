"""Real agent processes, real ZooKeeper, the watcher and the reader together on loopback."""

from __future__ import annotations

import json
import os
import random
import subprocess
import threading
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest

from tests.online.conftest import AgentProcess, free_port, trimtab_command
from tests.online.helpers import RecordingSink, wait_until
from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.diskinfo import BookieInfo, BookieInfoSink
from trimtab.placement.weights import DiskWeights
from trimtab.systems.bookkeeper.bookieinfo.client import GrpcBookieInfoClient
from trimtab.systems.bookkeeper.bookieinfo.feed import PolicyFeed
from trimtab.systems.bookkeeper.bookieinfo.info import FetchError, FetchErrorKind, FetchResult
from trimtab.systems.bookkeeper.bookieinfo.reader import BookieInfoReader
from trimtab.systems.bookkeeper.placement_setup import make_policy
from trimtab.systems.bookkeeper.registry import ZooKeeperWatcher
from trimtab.systems.zookeeper import ZkTarget

pytestmark = pytest.mark.server  # agents: in this process (gRPC) or as processes

RETRY_SECONDS = 1.0
TIMEOUT_SECONDS = 0.5


class RecordingClient(GrpcBookieInfoClient):
    """The real gRPC client, remembering which nodes each scan asked."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.asked: list[tuple[NodeId, ...]] = []

    def fetch_many(
        self, targets: Mapping[NodeId, str | None], *, timeout: float
    ) -> dict[NodeId, FetchResult]:
        with self.lock:
            self.asked.append(tuple(sorted(targets)))
        return super().fetch_many(targets, timeout=timeout)

    def scans_since(self, start: int) -> list[tuple[NodeId, ...]]:
        with self.lock:
            return self.asked[start:]


class Online:
    """Watcher -> reader -> recording sink, as a client process would wire them."""

    def __init__(self, target: ZkTarget) -> None:
        self.sink = RecordingSink()
        self.client = RecordingClient()
        self.reader = BookieInfoReader(
            self.sink,
            self.client,
            interval_seconds=3600,
            retry_interval_seconds=RETRY_SECONDS,
            timeout_seconds=TIMEOUT_SECONDS,
        )
        self.watcher = ZooKeeperWatcher(target, self.reader.on_membership, session_timeout=4.0)

    def start(self) -> Online:
        self.reader.start()
        self.watcher.start(timeout=10)
        return self

    def close(self) -> None:
        self.watcher.stop()
        self.reader.close()

    def info(self) -> dict[str, BookieInfo]:
        return self.sink.latest()

    def error(self, node: NodeId) -> FetchError | None:
        return self.reader.snapshot().errors.get(node)


@pytest.fixture
def online(zk_target: ZkTarget) -> Iterator[Online]:
    running = Online(zk_target).start()
    yield running
    running.close()


def statvfs_info(path: Path) -> BookieInfo:
    vfs = os.statvfs(path)
    return BookieInfo(vfs.f_blocks * vfs.f_frsize, vfs.f_bavail * vfs.f_frsize)


def close_to(seen: BookieInfo | None, expected: BookieInfo) -> bool:
    """Same capacity; free space within 1 % of capacity (other processes write meanwhile)."""
    return (
        seen is not None
        and seen.total_disk_bytes == expected.total_disk_bytes
        and abs(seen.free_disk_bytes - expected.free_disk_bytes) <= expected.total_disk_bytes // 100
    )


def start_agents(
    agents: list[AgentProcess], tmp_path: Path, target: ZkTarget | None, names: Iterable[str]
) -> list[AgentProcess]:
    new = [AgentProcess(tmp_path, name, target) for name in names]
    agents.extend(new)
    # start all first, then wait for each: the processes boot in parallel
    for agent in new:
        agent.start()
    return new


def test_nodes_join_leave_flap_and_go_readonly(
    online: Online, agents: list[AgentProcess], tmp_path: Path, zk_target: ZkTarget
) -> None:
    """The sink's map follows joins, clean leaves, a flap and a disk filling up."""
    a, b, c = start_agents(agents, tmp_path, zk_target, ["bk1:3181", "bk2:3181", "bk3:3181"])
    wait_until(lambda: set(online.info()) == {a.node, b.node, c.node}, what="three nodes known")
    for agent in (a, b, c):
        assert close_to(online.info()[agent.node], statvfs_info(agent.ledger_dir))
    assert online.sink.writable == {a.node, b.node, c.node}

    assert b.stop() == 0  # clean leave: znode removed at once
    wait_until(lambda: b.node not in online.info(), what="b purged")
    assert b.node not in online.sink.writable

    b.start()  # flap: back with a new gRPC port
    wait_until(lambda: b.node in online.info(), what="b back")
    assert online.reader.snapshot().membership.addresses[b.node] == b.address

    c.set_faults(free_bytes=0)  # its disk "fills": the agent turns itself read-only
    wait_until(lambda: c.node in online.sink.readonly, what="c read-only")
    assert c.node not in online.info(), "read-only nodes carry no weight"
    c.set_faults()
    wait_until(
        lambda: c.node in online.sink.writable and c.node in online.info(), what="c writable"
    )


def test_hanging_node_times_out_and_is_retried_alone(
    online: Online, agents: list[AgentProcess], tmp_path: Path, zk_target: ZkTarget
) -> None:
    """A node slower than the time-out loses its info; only it is asked again after the retry."""
    a, b = start_agents(agents, tmp_path, zk_target, ["bk1:3181", "bk2:3181"])
    wait_until(lambda: set(online.info()) == {a.node, b.node}, what="both known")
    b.set_faults(hang_seconds=30)
    mark = len(online.client.asked)
    online.reader.request_full_scan()
    error = wait_until(lambda: online.error(b.node), what="b timed out")
    assert error.kind is FetchErrorKind.TIMEOUT
    assert set(online.info()) == {a.node}
    retry = wait_until(
        lambda: len(scans := online.client.scans_since(mark)) >= 2 and scans[1], what="a retry"
    )
    assert retry == (b.node,), "only the failed node is retried"
    b.set_faults()
    wait_until(lambda: b.node in online.info(), what="b answers again")


def test_io_error_and_killed_nodes_lose_their_info(
    online: Online, agents: list[AgentProcess], tmp_path: Path, zk_target: ZkTarget
) -> None:
    """EIO gives a status error; a killed node fails until its session expires, then leaves."""
    a, b, c = start_agents(agents, tmp_path, zk_target, ["bk1:3181", "bk2:3181", "bk3:3181"])
    wait_until(lambda: len(online.info()) == 3, what="three known")
    b.set_faults(io_error=True)
    c.kill()
    online.reader.request_full_scan()
    b_error = wait_until(lambda: online.error(b.node), what="b fails")
    assert b_error.kind is FetchErrorKind.STATUS and "EIO" in b_error.detail
    c_error = online.error(c.node)
    assert c_error is not None and c_error.kind is FetchErrorKind.UNAVAILABLE
    assert set(online.info()) == {a.node}
    wait_until(lambda: c.node not in online.sink.writable, timeout=30, what="c's session expires")
    assert online.error(c.node) is None, "departed nodes are forgotten, errors included"


def test_bookieinfo_json_agrees_with_statvfs(
    agents: list[AgentProcess], tmp_path: Path, zk_target: ZkTarget
) -> None:
    """`trimtab bookieinfo --json` lists writable and read-only nodes with statvfs figures."""
    a, b = start_agents(agents, tmp_path, zk_target, ["bk1:3181", "bk2:3181"])
    r = AgentProcess(tmp_path, "bk3:3181", zk_target, "--readonly")
    agents.append(r)
    r.start()
    h = AgentProcess(tmp_path, "bk4:3181", zk_target)
    agents.append(h)
    h.start()
    h.set_faults(io_error=True)
    done = subprocess.run(
        [
            *trimtab_command(),
            "bookieinfo",
            "--zk",
            zk_target.hosts,
            "--zk-root",
            zk_target.root,
            "--timeout",
            "5",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    doc = json.loads(done.stdout)
    rows = {row["id"]: row for row in doc["bookies"]}
    assert {k: v["state"] for k, v in rows.items()} == {
        "bk1:3181": "writable",
        "bk2:3181": "writable",
        "bk3:3181": "readonly",
        "bk4:3181": "writable",
    }
    for agent in (a, b, r):
        row = rows[agent.node]
        seen = BookieInfo(row["total_bytes"], row["free_bytes"])
        assert close_to(seen, statvfs_info(agent.ledger_dir)) and row["error"] is None
    assert rows["bk4:3181"]["free_bytes"] is None and "EIO" in rows["bk4:3181"]["error"]
    answered = [rows[n] for n in ("bk1:3181", "bk2:3181", "bk3:3181")]
    assert doc["total_bytes"] == sum(r["total_bytes"] for r in answered)
    assert doc["total_free_bytes"] == sum(r["free_bytes"] for r in answered)
    human = subprocess.run(
        [*trimtab_command(), "bookieinfo", "--zk", zk_target.hosts, "--zk-root", zk_target.root],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "Total free disk space in the cluster" in human.stdout
    assert "3 of 4 nodes answered" in human.stdout


def test_bookieinfo_reads_a_static_registry(agents: list[AgentProcess], tmp_path: Path) -> None:
    """Without ZooKeeper, a registry file names the nodes and their agents' addresses."""
    (a,) = start_agents(agents, tmp_path, None, ["bk1:3181"])
    registry = tmp_path / "nodes.csv"
    registry.write_text(f"id,state,address\nbk1:3181,writable,{a.address}\nbk2:3181,readonly,\n")
    done = subprocess.run(
        [*trimtab_command(), "bookieinfo", "--registry", str(registry), "--timeout", "2", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    rows = {row["id"]: row for row in json.loads(done.stdout)["bookies"]}
    assert rows["bk1:3181"]["error"] is None
    assert rows["bk2:3181"]["state"] == "readonly" and rows["bk2:3181"]["error"]


def test_agent_refuses_bad_setups_in_one_line(
    agents: list[AgentProcess], tmp_path: Path, zk_target: ZkTarget
) -> None:
    """A missing ledger dir or a node id already registered: exit 2 with one error line."""
    missing = subprocess.run(
        [*trimtab_command(), "agent", "--id", "bk1:3181", "--ledger-dirs", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    (a,) = start_agents(agents, tmp_path, zk_target, ["bk1:3181"])
    impatient = tmp_path / "impatient.properties"
    impatient.write_text("zkTimeout=1000\n")  # waits 1.5 s for the held znode to expire
    twin = subprocess.run(
        [
            *trimtab_command(),
            "agent",
            "--id",
            "bk1:3181",
            "--ledger-dirs",
            str(a.ledger_dir),
            "--zk",
            zk_target.hosts,
            "--zk-root",
            zk_target.root,
            "--config",
            str(impatient),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert twin.returncode == 2 and "another agent" in twin.stderr
    assert len(twin.stderr.strip().splitlines()) == 1


def test_agent_and_watch_expose_prometheus_metrics(
    agents: list[AgentProcess], tmp_path: Path, zk_target: ZkTarget
) -> None:
    """The agent serves its disk gauges; `trimtab watch` serves per-node weights."""
    port = free_port()
    agent = AgentProcess(tmp_path, "bk1:3181", zk_target, "--metrics-port", str(port))
    agents.append(agent)
    agent.start()
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    assert "trimtab_agent_disk_free_bytes" in text and "trimtab_agent_registered 1.0" in text

    watch_port = free_port()
    watch = subprocess.Popen(
        [
            *trimtab_command(),
            "watch",
            "--zk",
            zk_target.hosts,
            "--zk-root",
            zk_target.root,
            "--metrics-port",
            str(watch_port),
            "--timeout",
            "2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def scrape() -> str | None:
            try:
                body = (
                    urllib.request.urlopen(f"http://127.0.0.1:{watch_port}/metrics", timeout=5)
                    .read()
                    .decode()
                )
            except OSError:
                return None
            return body if 'trimtab_bookie_weight{node="bk1:3181"}' in body else None

        body = wait_until(scrape, what="weights exported")
        assert 'trimtab_bookieinfo_scans_total{kind="full"}' in body
        assert 'trimtab_placement_pick_probability{node="bk1:3181"}' in body
    finally:
        watch.terminate()
        assert watch.wait(timeout=20) == 0


def test_real_placement_policy_takes_the_readers_feed(
    agents: list[AgentProcess], tmp_path: Path, zk_target: ZkTarget
) -> None:
    """A real disk-weighted policy as the sink: its weights follow the agents' free space,
    and it never places on a node that left."""
    config = Config.of(ensemblePlacementPolicy="default", diskWeightBasedPlacementEnabled=True)
    policy = make_policy(config, rng=random.Random(7))
    feed = PolicyFeed(policy, config.placement)
    sink: BookieInfoSink = feed  # the reader's protocol, forwarding to the policy
    reader = BookieInfoReader(
        sink,
        GrpcBookieInfoClient(),
        interval_seconds=3600,
        retry_interval_seconds=1.0,
        timeout_seconds=TIMEOUT_SECONDS,
    )
    watcher = ZooKeeperWatcher(zk_target, reader.on_membership, session_timeout=4.0)
    reader.start()
    watcher.start(timeout=10)
    try:
        a, b, c = start_agents(agents, tmp_path, zk_target, ["bk1:3181", "bk2:3181", "bk3:3181"])
        wait_until(lambda: set(policy.bookie_info) == {a.node, b.node, c.node}, what="policy fed")
        seen = policy.bookie_info[a.node]
        assert close_to(seen, statvfs_info(a.ledger_dir))
        weights = feed.weights()
        assert set(weights) == {a.node, b.node, c.node}
        for node in (a, b, c):
            weight, _ = weights[node.node]
            assert weight == policy.bookie_info[node.node].free_disk_bytes  # one disk: no cap bites
        assert sum(p for _, p in weights.values()) == pytest.approx(1.0)
        assert isinstance(policy.view.weights, DiskWeights)
        assert policy.view.weights.raw[a.node] == policy.bookie_info[a.node].free_disk_bytes
        b.stop()
        wait_until(lambda: b.node not in policy.bookie_info, what="b purged from the policy")
        wait_until(lambda: set(feed.weights()) == {a.node, c.node}, what="b's weight gone")
        for _ in range(200):
            assert b.node not in policy.new_ensemble(2, 2, 2).ensemble
    finally:
        watcher.stop()
        reader.close()
