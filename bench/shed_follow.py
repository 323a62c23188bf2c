"""The live loop's benchmark: from a load report changing in ZooKeeper to the decision printed.

Run with ``.venv/bin/python -m bench.shed_follow`` (1,000 brokers, 100,000 bundles; a real
ZooKeeper from Debian's package is started on loopback, or ``--zk HOST:PORT`` names one;
``--brokers 50`` for a smoke run). Prints:

1. the time to write every broker's ``LocalBrokerData`` and for the loop to hold them all;
2. one cycle of ``shed --follow`` (goal < 100 ms): the follower's whole cycle on the reports
   held (snapshot, shedder, destinations), and the shedder's part of it;
3. report-to-decision latency (goal < 1 s): a broker's report turns hot in ZooKeeper; the
   watch fires, the report is read and checked, a cycle runs on it and its JSON line is
   written. This is the path when the cycle is due; the loop itself runs on its interval.

Timings depend on the machine and its load; the script prints them, it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from tests.shedding.pulsar_reports import broker_report

from trimtab.config import Config
from trimtab.shedding import LoadModel, ShedderState, shedder_for
from trimtab.systems.pulsar.cycle_json import tick_json
from trimtab.systems.pulsar.follow import Follower
from trimtab.systems.pulsar.load_reports import LoadReport, to_document
from trimtab.systems.pulsar.watcher import BROKERS_PATH, ZkReports

ROOT = "/bench"


def report(broker: int, bundles: int, cpu: float, now: float) -> LoadReport:
    """Broker ``broker``'s report: ``bundles`` bundles of equal traffic, ``cpu`` busy."""
    tput = 2e5 * (1 + broker % 7)
    names = [f"tenant{broker % 50}/ns{broker}/0x{k:08x}_0x{k + 1:08x}" for k in range(bundles)]
    return broker_report(
        f"broker-{broker:05d}:8080", cpu=cpu, bundles=dict.fromkeys(names, tput), last_update=now
    )


def data(broker: int, bundles: int, cpu: float) -> bytes:
    return json.dumps(to_document(report(broker, bundles, cpu, time.time()))).encode()


@contextmanager
def zookeeper(hosts: str | None) -> Iterator[str]:
    if hosts is not None:
        yield hosts
        return
    from tests.online.conftest import ZooKeeperServer

    with tempfile.TemporaryDirectory() as workdir:
        server = ZooKeeperServer(Path(workdir))
        server.start()
        try:
            yield server.hosts
        finally:
            server.stop()


def write_all(client: KazooClient, brokers: int, bundles: int) -> None:
    client.ensure_path(f"{ROOT}{BROKERS_PATH}")
    pending = []
    for b in range(brokers):
        path = f"{ROOT}{BROKERS_PATH}/broker-{b:05d}:8080"
        cpu = 0.05 + 0.8 * (b % 10) / 10
        pending.append(client.create_async(path, data(b, bundles, cpu)))
    for p in pending:
        p.get(timeout=60)


def run(hosts: str, brokers: int, bundles: int, trials: int) -> None:
    # Act on the first triggered cycle, take each report as it is (no smoothing) and need no
    # cooldown: the latency measured is the machinery's, not the policy's timers.
    cfg = Config.of(
        loadBalancerSheddingConditionHitCountThreshold=0,
        loadBalancerHistoryResourcePercentage=0.0,
        loadBalanceSheddingDelayInSeconds=0,
    ).shedding
    client = KazooClient(hosts=hosts)
    client.start(timeout=30)
    client.delete(ROOT, recursive=True)
    started = time.perf_counter()
    write_all(client, brokers, bundles)
    written = time.perf_counter() - started
    changed: dict[str, threading.Event] = {}

    def on_change(name: str) -> None:
        if name in changed:
            changed[name].set()

    source = ZkReports(f"{hosts}{ROOT}", on_change=on_change)
    started = time.perf_counter()
    source.start(timeout=30)
    while len(source.read().entries) < brokers:
        time.sleep(0.01)
    loaded = time.perf_counter() - started
    print(f"1. {brokers:,} brokers, {brokers * bundles:,} bundles in ZooKeeper")
    print(f"   written in {written:.2f} s; read, parsed and held by the loop in {loaded:.2f} s")

    follower = Follower(shedder_for(cfg), LoadModel.of(cfg))
    follower.cycle(source.read(), time.time())  # checks every report once
    cycle_ms, shed_ms = [], []
    for _ in range(trials):
        follower.state = ShedderState()  # every cycle decides: no cooldown from the last one
        t0 = time.perf_counter()
        tick = follower.cycle(source.read(), time.time())
        t1 = time.perf_counter()
        assert tick.built is not None
        follower.shedder.cycle(tick.built.snapshot, ShedderState(), now=tick.now)
        cycle_ms.append((t1 - t0) * 1e3)
        shed_ms.append((time.perf_counter() - t1) * 1e3)
    print(f"2. one cycle (median of {trials}; goal < 100 ms): {statistics.median(cycle_ms):.0f} ms")
    print(f"   of which the shedder itself {statistics.median(shed_ms):.0f} ms")

    latencies: list[float] = []
    decided = 0
    sink = Path("/dev/null").open("w")  # noqa: SIM115 (the line's cost, not the terminal's)
    for k in range(trials):
        hot = k % brokers
        name = f"broker-{hot:05d}:8080"
        changed[name] = threading.Event()
        follower.state = ShedderState()  # no cooldown from the last trial: this change decides
        t0 = time.perf_counter()
        client.set(f"{ROOT}{BROKERS_PATH}/{name}", data(hot, bundles, 0.99))
        changed[name].wait(timeout=30)
        tick = follower.cycle(source.read(), time.time())
        line: dict[str, Any] = tick_json(tick, follower, Config(shedding=cfg))
        sink.write(json.dumps(line) + "\n")
        sink.flush()
        latencies.append(time.perf_counter() - t0)
        decided += any(t["source"] == name for t in line["transfers"])
        client.set(f"{ROOT}{BROKERS_PATH}/{name}", data(hot, bundles, 0.2))
    sink.close()
    print(
        f"3. report change -> decision printed (goal < 1 s): median "
        f"{statistics.median(latencies) * 1e3:.0f} ms, max {max(latencies) * 1e3:.0f} ms "
        f"over {trials} changes; {decided} of them unloaded from the hot broker at once"
    )
    source.close()
    client.delete(ROOT, recursive=True)
    client.stop()
    client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zk", help="an existing ZooKeeper HOST:PORT (default: start one)")
    parser.add_argument("--brokers", type=int, default=1000)
    parser.add_argument("--bundles-per-broker", type=int, default=100)
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    with zookeeper(args.zk) as hosts:
        run(hosts, args.brokers, args.bundles_per_broker, args.trials)


if __name__ == "__main__":
    main()
