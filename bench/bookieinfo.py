"""Bookieinfo scan benchmark: GET_BOOKIE_INFO of 1,000 registered bookies over v3 on loopback.

Run ``.venv/bin/python -m bench.bookieinfo`` (``--quick``: 100 nodes, for a smoke run). It
starts a ZooKeeper from Debian's package (or uses ``--zk HOST:PORT``), registers the bookies
the BookKeeper way (ephemeral ``/ledgers/available/<id>``, 5 % under ``readonly``, each with a
``BookieServiceInfoFormat`` naming its ``bookie-rpc`` endpoint), and serves them from one helper
process: one v3 server per bookie, the agent's own :class:`BookieRpcServer` measuring its own
ledger directory with statvfs, all on one event loop (as the soak test keeps its agents in one
process). Then, in this process, it reads the registry once and times full scans through the
client ``trimtab bookieinfo`` uses: the first scan opens the connections, the next ones reuse
them. Last, it times ``trimtab bookieinfo --zk ... --json`` as a user runs it (Python start-up
included). Printed: seconds per scan (median, fastest, slowest of the warm scans, and the cold
one), nodes per second, how many answered, connections opened, and the concurrency bound.

Goal (issue 18): a full scan of 1,000 nodes under 2 s with bounded concurrency.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from kazoo.client import KazooClient

from trimtab.diskinfo import BookieInfo
from trimtab.systems.bookkeeper.bookieinfo.client import survey
from trimtab.systems.bookkeeper.bookieinfo.disk import measure_disks
from trimtab.systems.bookkeeper.bookieinfo.loop import LoopThread
from trimtab.systems.bookkeeper.bookieinfo.routing import RoutingBookieInfoClient
from trimtab.systems.bookkeeper.bookieinfo.v3client import DEFAULT_MAX_IN_FLIGHT
from trimtab.systems.bookkeeper.bookieinfo.v3server import BookieRpcServer
from trimtab.systems.bookkeeper.registry import encode_bookie_service_info, read_membership
from trimtab.systems.zookeeper import ZkTarget

__all__ = ["main"]

GOAL_SECONDS = 2.0
TIMEOUT_SECONDS = 5.0
CLI = (sys.executable, "-c", "from trimtab.cli import main; main()")


def bookie_id(index: int) -> str:
    return f"bench-bookie-{index:04d}.example:3181"


# -- the helper process: N v3 servers on one loop ----------------------------------------------


def serve(count: int, workdir: Path) -> None:
    """Serve ``count`` bookies, print their ports as one JSON line, run until stdin closes."""
    loop = LoopThread("bench-bookies")
    servers = []
    try:
        for index in range(count):
            ledgers = workdir / f"ledgers{index:04d}"
            ledgers.mkdir(parents=True, exist_ok=True)
            server = BookieRpcServer(_measurer(ledgers), loop=loop)
            server.start()
            servers.append(server)
        sys.stdout.write(json.dumps({"ports": [s.port for s in servers]}) + "\n")
        sys.stdout.flush()
        sys.stdin.read()
    finally:
        for server in servers:
            server.stop(grace=0)
        loop.close()


def _measurer(ledgers: Path) -> Callable[[], BookieInfo]:
    def measure() -> BookieInfo:
        return measure_disks((ledgers,)).info()  # what Agent.measure does

    return measure


@contextmanager
def helper(count: int, workdir: Path) -> Iterator[list[int]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.bookieinfo", "--serve", str(count), str(workdir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"bench helper exited with {proc.wait(timeout=30)}")
        yield list(json.loads(line)["ports"])
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=60)


@contextmanager
def zookeeper(hosts: str | None, workdir: Path) -> Iterator[str]:
    if hosts:
        yield hosts
        return
    from tests.online.conftest import ZooKeeperServer  # Debian's jar, as the online tests

    server = ZooKeeperServer(workdir / "zookeeper")
    server.start()
    try:
        yield server.hosts
    finally:
        server.stop()


def register(target: ZkTarget, ports: list[int], readonly_share: float) -> KazooClient:
    """Register every bookie as a 4.x bookie does; the session keeps the znodes alive."""
    client = KazooClient(hosts=target.hosts)
    client.start(timeout=30)
    client.ensure_path(target.readonly)
    readonly_every = round(1 / readonly_share) if readonly_share else 0
    pending = []
    for index, port in enumerate(ports):
        readonly = bool(readonly_every) and index % readonly_every == 0
        path = target.node_path(bookie_id(index), readonly=readonly)
        data = encode_bookie_service_info("127.0.0.1", port)
        pending.append(client.create_async(path, data, ephemeral=True))
    for result in pending:
        result.get(timeout=30)
    return client


# -- the bench ---------------------------------------------------------------------------------


def run(nodes: int, scans: int, max_in_flight: int, zk: str | None) -> None:
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-bkinfo-")))
        hosts = stack.enter_context(zookeeper(zk, workdir))
        target = ZkTarget(hosts, f"/bench-{int(time.time())}/ledgers")
        ports = stack.enter_context(helper(nodes, workdir))
        session = register(target, ports, readonly_share=0.05)
        stack.callback(session.close)
        stack.callback(session.stop)

        started = time.perf_counter()
        membership = read_membership(target, timeout=30)
        read_seconds = time.perf_counter() - started
        assert len(membership.members) == nodes, len(membership.members)

        client = RoutingBookieInfoClient(max_in_flight=max_in_flight)
        stack.callback(client.close)
        times: list[float] = []
        answered: list[int] = []
        for _ in range(scans + 1):
            started = time.perf_counter()
            rows = survey(membership, client, timeout=TIMEOUT_SECONDS)
            times.append(time.perf_counter() - started)
            answered.append(sum(isinstance(r.result, BookieInfo) for r in rows))
        cold, warm = times[0], times[1:]

        started = time.perf_counter()
        cli = subprocess.run(
            [*CLI, "bookieinfo", "--zk", hosts, "--ledgers-root", target.root, "--json"],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        cli_seconds = time.perf_counter() - started
        cli_answered = sum(r["error"] is None for r in json.loads(cli.stdout)["bookies"])

    median = statistics.median(warm)
    print(f"bookieinfo scan over BookKeeper v3 on loopback: {nodes} registered bookies")
    print(f"  registry read (ZooKeeper, {nodes} znodes)   {read_seconds:8.3f} s")
    print(f"  cold scan (opens the connections)      {cold:8.3f} s")
    print(
        f"  warm scans, median (fastest, slowest)  {median:8.3f} s "
        f"({min(warm):.3f}, {max(warm):.3f}) over {len(warm)} scans"
    )
    print(f"  throughput, warm median                {nodes / median:8.0f} nodes/s")
    print(f"  answered per scan                      {min(answered):8d} of {nodes}")
    print(f"  connections opened in all scans        {client.bookie_rpc.connects:8d}")
    print(f"  concurrency bound (max_in_flight)      {max_in_flight:8d}")
    print(
        f"  `trimtab bookieinfo --zk` end to end   {cli_seconds:8.3f} s ({cli_answered} answered)"
    )
    verdict = "met" if max(times) < GOAL_SECONDS else "MISSED"
    print(f"goal: every full scan under {GOAL_SECONDS:g} s: {verdict} (slowest {max(times):.3f} s)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--scans", type=int, default=5, help="warm scans after the cold one")
    parser.add_argument("--max-in-flight", type=int, default=DEFAULT_MAX_IN_FLIGHT)
    parser.add_argument("--zk", help="use this ZooKeeper instead of starting one")
    parser.add_argument("--quick", action="store_true", help="100 nodes, 2 warm scans")
    parser.add_argument("--serve", nargs=2, metavar=("COUNT", "WORKDIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(int(args.serve[0]), Path(args.serve[1]))
        return
    nodes, scans = (100, 2) if args.quick else (args.nodes, args.scans)
    run(nodes, scans, args.max_in_flight, args.zk)


if __name__ == "__main__":
    main()
