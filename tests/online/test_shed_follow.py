"""``trimtab shed --zk … --follow --json`` as a real process against a real ZooKeeper.

Five brokers write ``LocalBrokerData`` to ``/loadbalance/brokers/<host:port>`` (a thread of
the test stands in for them, refreshing ``lastUpdate`` as brokers do). The test then makes
one broker hot, removes another's report and lets a third go stale; each change shows in the
loop's JSON lines with upstream's reasons and timers, and SIGTERM ends the process cleanly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from tests.online.conftest import ZooKeeperServer, read_json_line, trimtab_command
from tests.shedding.pulsar_reports import broker_report, document
from trimtab.systems.pulsar.watcher import BROKERS_PATH

BROKERS = [f"broker{i}:8080" for i in range(1, 6)]
TTL_S = 4


class Brokers:
    """The brokers' side: each live broker rewrites its report every 0.2 s."""

    def __init__(self, client: KazooClient, root: str) -> None:
        self.client = client
        self.root = root
        self.cpu = dict.fromkeys(BROKERS, 0.05)
        self.live = set(BROKERS)
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def path(self, broker: str) -> str:
        return f"{self.root}{BROKERS_PATH}/{broker}"

    def write(self, broker: str) -> None:
        bundles = {f"tenant/{broker.split(':')[0]}/0x{k:08x}_0x{k + 1:08x}": 1e6 for k in range(4)}
        report = broker_report(broker, cpu=self.cpu[broker], bundles=bundles, last_update=0.0)
        data = document(replace(report, last_update=time.time()))
        path = self.path(broker)
        if self.client.exists(path):
            self.client.set(path, data)
        else:
            self.client.create(path, data, makepath=True)

    def _run(self) -> None:
        while not self.stop.wait(0.2):
            with self.lock:
                for broker in sorted(self.live):
                    try:
                        self.write(broker)
                    except KazooException:  # ZooKeeper down: brokers retry, as Pulsar's do
                        break

    def change(self, action: Callable[[], None]) -> None:
        with self.lock:
            action()


@pytest.fixture
def brokers(zookeeper: ZooKeeperServer) -> Iterator[Brokers]:
    yield from _brokers(zookeeper)


@pytest.fixture
def private_brokers(private_zookeeper: ZooKeeperServer) -> Iterator[Brokers]:
    yield from _brokers(private_zookeeper)


def _brokers(zookeeper: ZooKeeperServer) -> Iterator[Brokers]:
    client = KazooClient(hosts=zookeeper.hosts, connection_retry={"max_tries": -1, "max_delay": 1})
    client.start(timeout=10)
    side = Brokers(client, f"/pulsar-{os.getpid()}")
    for broker in BROKERS:
        side.write(broker)
    side.thread.start()
    yield side
    side.stop.set()
    side.thread.join(timeout=5)
    client.stop()
    client.close()


def until(proc: subprocess.Popen[str], what: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The first cycle line that satisfies ``what`` (within 30 s)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = read_json_line(proc, timeout=10)
        if what(line):
            return line
    raise AssertionError("no cycle showed the change within 30 s")


def start_loop(
    zookeeper: ZooKeeperServer, brokers: Brokers, tmp_path: Path
) -> subprocess.Popen[str]:
    """``trimtab shed --zk … --follow --json`` with short timers, as a real process."""
    config = tmp_path / "broker.conf"
    config.write_text(
        f"loadBalancerBrokerLoadDataTTLInSeconds={TTL_S}\n"
        "loadBalancerSheddingConditionHitCountThreshold=1\n"
        "loadBalanceSheddingDelayInSeconds=1\n"
        "loadBalancerHistoryResourcePercentage=0.5\n"
        "zkTimeout=4000\n"
    )
    out = tmp_path / "unloads.txt"
    args = ["shed", "--zk", f"{zookeeper.hosts}{brokers.root}", "--follow", "--interval", "0.3"]
    return subprocess.Popen(
        [*trimtab_command(), *args, "--json", "--config", str(config), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )


def stop_loop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM: the loop ends after the cycle under way, with status 0 and no traceback."""
    proc.send_signal(signal.SIGTERM)
    _, errors = proc.communicate(timeout=15)
    assert proc.returncode == 0, errors
    assert "Traceback" not in errors


def test_shed_follow_on_real_zookeeper(
    zookeeper: ZooKeeperServer, brokers: Brokers, tmp_path: Path
) -> None:
    proc = start_loop(zookeeper, brokers, tmp_path)
    out = tmp_path / "unloads.txt"
    try:
        first = until(proc, lambda c: len(c["brokers"]) == 5)
        assert first["registry"] == "ok" and first["outcome"]["reason"] == "HitCount"

        brokers.change(lambda: brokers.cpu.__setitem__("broker5:8080", 0.95))
        hit = until(proc, lambda c: c["timers"]["hit_count"] >= 1)
        assert hit["outcome"] == {
            "label": "Skip",
            "reason": "HitCount",
            "note": "shedding condition hit 1 time in a row; it acts at 2 in a row "
            "(loadBalancerSheddingConditionHitCountThreshold 1, exclusive)",
        }
        moved = until(proc, lambda c: bool(c["transfers"]))
        (transfer,) = moved["transfers"]
        assert (transfer["source"], transfer["reason"]) == ("broker5:8080", "Overloaded")
        assert transfer["command"].startswith("pulsar-admin namespaces unload tenant/broker5 ")
        assert transfer["rest"].startswith("PUT /admin/v2/namespaces/tenant/broker5/0x")
        assert moved["timers"]["cooldown_s"] == {"broker5:8080": 1.0}
        assert moved["timers"]["grace_s"] == {transfer["bundle"]: 1800.0}
        assert moved["timers"]["hit_count"] == 0

        def leave() -> None:
            brokers.live.discard("broker4:8080")
            brokers.client.delete(brokers.path("broker4:8080"))

        brokers.change(leave)
        left = until(proc, lambda c: "broker4:8080" in c["left"])
        assert "broker4:8080" not in left["brokers"]

        brokers.change(lambda: brokers.live.discard("broker3:8080"))
        stale = until(proc, lambda c: c["stale"] == ["broker3:8080"])
        assert "broker3:8080" in stale["brokers"]  # still registered, its data too old to use
    finally:
        stop_loop(proc)
    assert out.read_text().count("pulsar-admin namespaces unload") >= 1


def test_shed_follow_survives_a_zookeeper_outage(
    private_zookeeper: ZooKeeperServer, private_brokers: Brokers, tmp_path: Path
) -> None:
    """While ZooKeeper is down every cycle fails (Failure/Unknown, as upstream's leader that
    cannot read the registry); once it is back the loop resumes on fresh reports."""
    proc = start_loop(private_zookeeper, private_brokers, tmp_path)
    try:
        until(proc, lambda c: len(c["brokers"]) == 5)
        private_zookeeper.stop()
        down = until(proc, lambda c: c["registry"] == "unreadable")
        assert (down["outcome"]["label"], down["outcome"]["reason"]) == ("Failure", "Unknown")
        assert down["transfers"] == []
        private_zookeeper.start()
        back = until(proc, lambda c: c["registry"] == "ok")
        assert len(back["brokers"]) == 5 and back["stale"] == []
    finally:
        stop_loop(proc)
