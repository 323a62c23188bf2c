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

The TLS run (issue 41) sits next to the plaintext one in the same run: the helper also serves the
same number of bookies with TLS (a test CA's certificate from ``tests/tls_certs.py``, mutual TLS
required), registered under a second root with the ``tls`` endpoint extension as upstream's
bookies write it; the same scans and the same CLI run go through START_TLS and a handshake per
connection (the reader gives its client certificate). Printed: each figure for both runs and the
TLS/plaintext ratio. Goal: the cold scan and the CLI run, where every connection pays its
handshake, at most 1.5x the plaintext ones (warm scans reuse their TLS connections).
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
from dataclasses import dataclass
from pathlib import Path

from kazoo.client import KazooClient
from tests.tls_certs import make_tls_files

from trimtab.diskinfo import BookieInfo
from trimtab.systems.bookkeeper.bookieinfo.client import survey
from trimtab.systems.bookkeeper.bookieinfo.disk import measure_disks
from trimtab.systems.bookkeeper.bookieinfo.loop import LoopThread
from trimtab.systems.bookkeeper.bookieinfo.routing import RoutingBookieInfoClient
from trimtab.systems.bookkeeper.bookieinfo.tls import ClientTls, ServerTls
from trimtab.systems.bookkeeper.bookieinfo.v3client import DEFAULT_MAX_IN_FLIGHT
from trimtab.systems.bookkeeper.bookieinfo.v3server import BookieRpcServer
from trimtab.systems.bookkeeper.registry import encode_bookie_service_info, read_membership
from trimtab.systems.zookeeper import ZkTarget

__all__ = ["main"]

GOAL_SECONDS = 2.0
TLS_GOAL_RATIO = 1.5
TIMEOUT_SECONDS = 5.0
CLI = (sys.executable, "-c", "from trimtab.cli import main; main()")


def bookie_id(index: int) -> str:
    return f"bench-bookie-{index:04d}.example:3181"


# -- the helper process: N v3 servers on one loop ----------------------------------------------


def serve(count: int, workdir: Path) -> None:
    """Serve ``count`` plaintext bookies and ``count`` mutual-TLS ones (certificates under
    ``workdir/tls``), print their ports as one JSON line, run until stdin closes."""
    loop = LoopThread("bench-bookies")
    servers = []
    tls_dir = workdir / "tls"
    tls = ServerTls(
        cert=tls_dir / "server.pem",
        key=tls_dir / "server.key",
        ca=tls_dir / "ca.pem",
        client_auth=True,
    )
    try:
        for index in range(2 * count):
            ledgers = workdir / f"ledgers{index % count:04d}"
            ledgers.mkdir(parents=True, exist_ok=True)
            server = BookieRpcServer(
                _measurer(ledgers), loop=loop, tls=tls if index >= count else None
            )
            server.start()
            servers.append(server)
        ports = [s.port for s in servers]
        doc = {"ports": ports[:count], "tls_ports": ports[count:]}
        sys.stdout.write(json.dumps(doc) + "\n")
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
def helper(count: int, workdir: Path) -> Iterator[tuple[list[int], list[int]]]:
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
        doc = json.loads(line)
        yield list(doc["ports"]), list(doc["tls_ports"])
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


def register(
    target: ZkTarget, ports: list[int], readonly_share: float, *, tls: bool = False
) -> KazooClient:
    """Register every bookie as a 4.x bookie does (the ``tls`` extension when it has TLS); the
    session keeps the znodes alive."""
    client = KazooClient(hosts=target.hosts)
    client.start(timeout=30)
    client.ensure_path(target.readonly)
    readonly_every = round(1 / readonly_share) if readonly_share else 0
    pending = []
    for index, port in enumerate(ports):
        readonly = bool(readonly_every) and index % readonly_every == 0
        path = target.node_path(bookie_id(index), readonly=readonly)
        data = encode_bookie_service_info("127.0.0.1", port, extensions=("tls",) if tls else ())
        pending.append(client.create_async(path, data, ephemeral=True))
    for result in pending:
        result.get(timeout=30)
    return client


# -- the bench ---------------------------------------------------------------------------------


@dataclass
class Figures:
    """One run's figures (plaintext or TLS)."""

    read_seconds: float
    times: list[float]
    answered: list[int]
    connects: int
    cli_seconds: float
    cli_answered: int

    @property
    def cold(self) -> float:
        return self.times[0]

    @property
    def warm(self) -> list[float]:
        return self.times[1:]


def measure(
    target: ZkTarget, nodes: int, scans: int, max_in_flight: int, tls: ClientTls | None
) -> Figures:
    """Read the registry, scan it ``scans + 1`` times, then run the CLI once."""
    started = time.perf_counter()
    membership = read_membership(target, timeout=30)
    read_seconds = time.perf_counter() - started
    assert len(membership.members) == nodes, len(membership.members)
    client = RoutingBookieInfoClient(max_in_flight=max_in_flight, tls=tls)
    times: list[float] = []
    answered: list[int] = []
    try:
        for _ in range(scans + 1):
            started = time.perf_counter()
            rows = survey(membership, client, timeout=TIMEOUT_SECONDS)
            times.append(time.perf_counter() - started)
            answered.append(sum(isinstance(r.result, BookieInfo) for r in rows))
        connects = client.bookie_rpc.connects
    finally:
        client.close()
    options = []
    if tls is not None:
        options = ["--tls-ca", str(tls.ca), "--tls-cert", str(tls.cert), "--tls-key", str(tls.key)]
    started = time.perf_counter()
    cli = subprocess.run(
        [
            *CLI,
            "bookieinfo",
            "--zk",
            target.hosts,
            "--ledgers-root",
            target.root,
            "--json",
            *options,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    cli_seconds = time.perf_counter() - started
    cli_answered = sum(r["error"] is None for r in json.loads(cli.stdout)["bookies"])
    return Figures(read_seconds, times, answered, connects, cli_seconds, cli_answered)


def run(nodes: int, scans: int, max_in_flight: int, zk: str | None) -> None:
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-bkinfo-")))
        files = make_tls_files(workdir / "tls")
        hosts = stack.enter_context(zookeeper(zk, workdir))
        stamp = int(time.time())
        target = ZkTarget(hosts, f"/bench-{stamp}/ledgers")
        tls_target = ZkTarget(hosts, f"/bench-{stamp}-tls/ledgers")
        ports, tls_ports = stack.enter_context(helper(nodes, workdir))
        for where, its_ports, tls in ((target, ports, False), (tls_target, tls_ports, True)):
            session = register(where, its_ports, readonly_share=0.05, tls=tls)
            stack.callback(session.close)
            stack.callback(session.stop)
        plain = measure(target, nodes, scans, max_in_flight, None)
        client_tls = ClientTls(ca=files.ca, cert=files.client_cert, key=files.client_key)
        secured = measure(tls_target, nodes, scans, max_in_flight, client_tls)
    report(nodes, max_in_flight, plain, secured)


def report(nodes: int, max_in_flight: int, plain: Figures, tls: Figures) -> None:
    def row(label: str, a: float, b: float, unit: str = "s") -> None:
        print(f"  {label:<40} {a:8.3f} {unit}  {b:8.3f} {unit}  {b / a:6.2f}x")

    print(f"bookieinfo scan over BookKeeper v3 on loopback: {nodes} registered bookies")
    print(f"  {'':<40} {'plaintext':>10}  {'mutual TLS':>10}  {'ratio':>7}")
    row(f"registry read (ZooKeeper, {nodes} znodes)", plain.read_seconds, tls.read_seconds)
    row("cold scan (opens the connections)", plain.cold, tls.cold)
    pm, tm = statistics.median(plain.warm), statistics.median(tls.warm)
    row(f"warm scans, median of {len(plain.warm)}", pm, tm)
    print(
        f"  {'warm scans, fastest / slowest':<40} {min(plain.warm):.3f}/{max(plain.warm):.3f}"
        f"   {min(tls.warm):.3f}/{max(tls.warm):.3f}"
    )
    print(f"  {'throughput, warm median (nodes/s)':<40} {nodes / pm:10.0f}  {nodes / tm:10.0f}")
    print(
        f"  {'answered per scan':<40} {min(plain.answered):10d}  {min(tls.answered):10d}"
        f"  (of {nodes})"
    )
    print(f"  {'connections opened in all scans':<40} {plain.connects:10d}  {tls.connects:10d}")
    print(f"  {'concurrency bound (max_in_flight)':<40} {max_in_flight:10d}")
    row("`trimtab bookieinfo --zk` end to end", plain.cli_seconds, tls.cli_seconds)
    print(f"  {'  answered':<40} {plain.cli_answered:10d}  {tls.cli_answered:10d}")
    slowest = max(plain.times)
    verdict = "met" if slowest < GOAL_SECONDS else "MISSED"
    print(
        f"goal: every plaintext full scan under {GOAL_SECONDS:g} s: {verdict} "
        f"(slowest {slowest:.3f} s; with TLS {max(tls.times):.3f} s)"
    )
    ratios = {"cold scan": tls.cold / plain.cold, "CLI run": tls.cli_seconds / plain.cli_seconds}
    worst = max(ratios.values())
    verdict = "met" if worst <= TLS_GOAL_RATIO else "MISSED"
    shown = ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items())
    print(f"goal: TLS at most {TLS_GOAL_RATIO:g}x plaintext: {verdict} ({shown})")
    handshake_ms = 1000 * (tls.cold - plain.cold) / nodes
    print(
        f"  (each new TLS connection costs about {handshake_ms:.1f} ms more: START_TLS and a "
        f"mutual-TLS handshake; warm scans reuse them: {tm / pm:.2f}x)"
    )


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
