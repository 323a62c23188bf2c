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
same number of bookies with TLS (a test CA's certificate from ``tests/tls_certs.py``: trustme, ECDSA
P-256 keys; mutual TLS required), registered under a second root with the ``tls`` endpoint extension
as upstream's bookies write it; the same scans and the same CLI run go through START_TLS and a
handshake per new connection (the reader gives its client certificate). ``--reps`` repetitions
alternate plaintext and TLS (the machine is shared: figures from one repetition are compared with
figures from the same repetition). Each repetition, for each of the two: a cold scan (a new client:
every connection a full handshake), warm scans (connections kept, as ``watch`` keeps them), a
reconnect scan (every connection closed first: the same client opens new ones, resuming the TLS
sessions it kept), the same without resumption, and ``trimtab bookieinfo --zk --json`` (a new
process: full handshakes). Printed: the median of each figure and the median of the repetitions'
TLS/plaintext ratios; the client's CPU seconds per scan (this process) and the bookies' (the
helper's, read from ``/proc``), so the handshake CPU each side pays is separated from the wall time
the shared cores give; the client CPU per new TLS connection beyond plaintext, full and resumed.
Goal: at most 1.5x the plaintext figure.
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
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
from tests.tls_certs import TlsFiles, make_tls_files

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
def helper(count: int, workdir: Path) -> Iterator[tuple[list[int], list[int], int]]:
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
        yield list(doc["ports"]), list(doc["tls_ports"]), proc.pid
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
    """One run's figures (plaintext or TLS): wall and client CPU seconds per scan."""

    read_seconds: float
    times: list[float]
    cpu: list[float]
    answered: list[int]
    connects: int
    reconnect: float
    reconnect_cpu: float
    resumed: int
    server_cpu: float  # the helper's CPU seconds during the cold scan
    reconnect_server_cpu: float  # ... and during the reconnect scan
    unresumed: float  # a reconnect scan offering no session
    unresumed_cpu: float
    cli_seconds: float = 0.0
    cli_answered: int = 0

    @property
    def cold(self) -> float:
        return self.times[0]

    @property
    def warm(self) -> list[float]:
        return self.times[1:]


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    target: ZkTarget,
    nodes: int,
    scans: int,
    max_in_flight: int,
    tls: ClientTls | None,
    server_pid: int,
) -> Figures:
    """Read the registry, scan it ``scans + 1`` times (the first one cold), then drop every
    connection and scan once more (a reconnect: TLS resumes the sessions it kept)."""
    started = time.perf_counter()
    membership = read_membership(target, timeout=30)
    read_seconds = time.perf_counter() - started
    assert len(membership.members) == nodes, len(membership.members)
    client = RoutingBookieInfoClient(max_in_flight=max_in_flight, tls=tls)
    times: list[float] = []
    cpu: list[float] = []
    answered: list[int] = []
    server_cpu = 0.0

    def scan() -> None:
        started, cpu_started = time.perf_counter(), time.process_time()
        rows = survey(membership, client, timeout=TIMEOUT_SECONDS)
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
        answered.append(sum(isinstance(r.result, BookieInfo) for r in rows))

    try:
        for index in range(scans + 1):
            server_started = _cpu_of(server_pid)
            scan()
            if index == 0:
                server_cpu = _cpu_of(server_pid) - server_started
        client.bookie_rpc.retain(())  # every connection closed; the TLS sessions kept
        server_started = _cpu_of(server_pid)
        scan()
        reconnect_server_cpu = _cpu_of(server_pid) - server_started
        client.bookie_rpc.retain(())
        client.bookie_rpc.forget_tls_sessions()  # the same reconnect, full handshakes
        scan()
        unresumed, unresumed_cpu = times.pop(), cpu.pop()
        reconnect, reconnect_cpu = times.pop(), cpu.pop()
        connects, resumed = client.bookie_rpc.connects, client.bookie_rpc.resumed
    finally:
        client.close()
    return Figures(
        read_seconds,
        times,
        cpu,
        answered,
        connects,
        reconnect,
        reconnect_cpu,
        resumed,
        server_cpu,
        reconnect_server_cpu,
        unresumed,
        unresumed_cpu,
    )


def measure_cli(target: ZkTarget, tls: ClientTls | None) -> tuple[float, int]:
    """``trimtab bookieinfo --zk ... --json`` as a user runs it: seconds, bookies answered."""
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
    seconds = time.perf_counter() - started
    return seconds, sum(r["error"] is None for r in json.loads(cli.stdout)["bookies"])


def _handshake(
    server: ssl.SSLContext, client: ssl.SSLContext, session: ssl.SSLSession | None
) -> tuple[float, float, ssl.SSLObject]:
    """One mutual-TLS handshake and one message each way over memory BIOs: each side's CPU."""
    s_in, s_out, c_in, c_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    bookie = server.wrap_bio(s_in, s_out, server_side=True)
    reader = client.wrap_bio(c_in, c_out, server_hostname="localhost", session=session)
    steps: list[tuple[ssl.SSLObject, ssl.MemoryBIO, ssl.MemoryBIO, Callable[[], object]]] = [
        (reader, c_out, s_in, reader.do_handshake),
        (bookie, s_out, c_in, bookie.do_handshake),
    ]
    spent = [0.0, 0.0]
    done = [False, False]
    while not all(done):
        for side, (_, out, peer, step) in enumerate(steps):
            started = time.thread_time()
            if not done[side]:
                try:
                    step()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
            peer.write(out.read())
            spent[side] += time.thread_time() - started
    for side, (obj, out, peer, _) in enumerate(steps):  # a message each way: tickets are read
        started = time.thread_time()
        obj.write(b"x")
        peer.write(out.read())
        other = steps[1 - side][0]
        other.read()
        spent[side] += time.thread_time() - started
    return spent[0], spent[1], reader


def openssl_only(files: TlsFiles, count: int = 300) -> dict[str, float]:
    """ms of CPU per handshake in OpenSSL alone (no sockets, no asyncio), with the bench's
    certificates and the contexts the reader and the agent build: full and resumed."""
    server = ServerTls(cert=files.server_cert, key=files.server_key, ca=files.ca, client_auth=True)
    client = ClientTls(ca=files.ca, cert=files.client_cert, key=files.client_key)
    bookie_context, reader_context = server.build(), client.build()
    figures: dict[str, float] = {}
    session = None
    for kind in ("full", "resumed"):
        spent = [0.0, 0.0]
        for _ in range(count):
            c, s, reader = _handshake(
                bookie_context, reader_context, session if kind == "resumed" else None
            )
            spent[0] += c
            spent[1] += s
            session = reader.session
        figures[f"client {kind}"] = 1000 * spent[0] / count
        figures[f"bookie {kind}"] = 1000 * spent[1] / count
    return figures


def run(nodes: int, scans: int, max_in_flight: int, zk: str | None, reps: int) -> None:
    """``reps`` alternating plaintext/TLS repetitions against the same helper; the report gives
    the median of each figure and of each repetition's ratio."""
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-bkinfo-")))
        files = make_tls_files(workdir / "tls")
        hosts = stack.enter_context(zookeeper(zk, workdir))
        stamp = int(time.time())
        target = ZkTarget(hosts, f"/bench-{stamp}/ledgers")
        tls_target = ZkTarget(hosts, f"/bench-{stamp}-tls/ledgers")
        ports, tls_ports, pid = stack.enter_context(helper(nodes, workdir))
        for where, its_ports, tls in ((target, ports, False), (tls_target, tls_ports, True)):
            session = register(where, its_ports, readonly_share=0.05, tls=tls)
            stack.callback(session.close)
            stack.callback(session.stop)
        client_tls = ClientTls(ca=files.ca, cert=files.client_cert, key=files.client_key)
        runs: list[tuple[Figures, Figures]] = []
        for _ in range(reps):
            plain = measure(target, nodes, scans, max_in_flight, None, pid)
            secured = measure(tls_target, nodes, scans, max_in_flight, client_tls, pid)
            plain.cli_seconds, plain.cli_answered = measure_cli(target, None)
            secured.cli_seconds, secured.cli_answered = measure_cli(tls_target, client_tls)
            runs.append((plain, secured))
        alone = openssl_only(files)
    report(nodes, max_in_flight, runs)
    shown = ", ".join(f"{k} {v:.2f} ms" for k, v in alone.items())
    print(f"  OpenSSL alone per handshake (memory BIOs, no sockets, no asyncio): {shown}")


def _median(
    runs: list[tuple[Figures, Figures]], figure: Callable[[Figures], float]
) -> tuple[float, float, float]:
    """Median plaintext figure, median TLS figure, median of the repetitions' ratios."""
    return (
        statistics.median(figure(p) for p, _ in runs),
        statistics.median(figure(t) for _, t in runs),
        statistics.median(figure(t) / figure(p) for p, t in runs),
    )


def report(nodes: int, max_in_flight: int, runs: list[tuple[Figures, Figures]]) -> None:
    def row(label: str, figure: Callable[[Figures], float], unit: str = "s") -> float:
        a, b, ratio = _median(runs, figure)
        print(f"  {label:<44} {a:8.3f} {unit}  {b:8.3f} {unit}  {ratio:6.2f}x")
        return ratio

    print(
        f"bookieinfo scan over BookKeeper v3 on loopback: {nodes} registered bookies; "
        f"{len(runs)} alternating repetitions, medians (ratio: median of the repetitions' ratios)"
    )
    print(
        "  certificates: trustme's test CA, ECDSA P-256 keys (server and client), TLS 1.3; "
        f"{ssl.OPENSSL_VERSION}; bookies in a helper process on the same cores"
    )
    print(f"  {'':<44} {'plaintext':>10}  {'mutual TLS':>10}  {'ratio':>7}")
    row(f"registry read (ZooKeeper, {nodes} znodes)", lambda f: f.read_seconds)
    cold = row("cold scan (opens the connections)", lambda f: f.cold)
    row("  client CPU in the cold scan", lambda f: f.cpu[0])
    row("  bookies' CPU in the cold scan (helper)", lambda f: f.server_cpu)
    warm = row("warm scans, median (connections kept)", lambda f: statistics.median(f.warm))
    row("  client CPU per warm scan", lambda f: statistics.median(f.cpu[1:]))
    again = row("reconnect scan (new connections, same client)", lambda f: f.reconnect)
    row("  client CPU in the reconnect scan", lambda f: f.reconnect_cpu)
    row("  bookies' CPU in the reconnect scan", lambda f: f.reconnect_server_cpu)
    row("reconnect scan without resumption", lambda f: f.unresumed)
    row("  client CPU in it", lambda f: f.unresumed_cpu)
    cli = row("`trimtab bookieinfo --zk --json` end to end", lambda f: f.cli_seconds)
    plain, tls = runs[-1]
    fewest = [min(min(f.answered) for f in figures) for figures in zip(*runs, strict=True)]
    fewest_cli = [min(f.cli_answered for f in figures) for figures in zip(*runs, strict=True)]
    print(
        f"  {'answered, fewest in any scan':<44} {fewest[0]:10d}  {fewest[1]:10d}  "
        f"(of {nodes}; CLI {fewest_cli[0]}, {fewest_cli[1]})"
    )
    print(f"  {'connections opened per repetition':<44} {plain.connects:10d}  {tls.connects:10d}")
    print(f"  {'TLS sessions resumed in the reconnect scan':<44} {'':10}  {tls.resumed:10d}")
    print(f"  {'concurrency bound (max_in_flight)':<44} {max_in_flight:10d}")
    slowest = max(max(p.times) for p, _ in runs)
    verdict = "met" if slowest < GOAL_SECONDS else "MISSED"
    print(
        f"goal: every plaintext full scan under {GOAL_SECONDS:g} s: {verdict} "
        f"(slowest {slowest:.3f} s)"
    )
    ratios = {"cold scan": cold, "warm scan": warm, "reconnect scan": again, "CLI run": cli}
    shown = ", ".join(
        f"{k} {v:.2f}x {'met' if v <= TLS_GOAL_RATIO else 'MISSED'}" for k, v in ratios.items()
    )
    print(f"goal: TLS at most {TLS_GOAL_RATIO:g}x plaintext: {shown}")
    per_client = statistics.median((t.cpu[0] - p.cpu[0]) / nodes for p, t in runs)
    per_server = statistics.median((t.server_cpu - p.server_cpu) / nodes for p, t in runs)
    per_resumed = statistics.median((t.reconnect_cpu - p.reconnect_cpu) / nodes for p, t in runs)
    server_resumed = statistics.median(
        (t.reconnect_server_cpu - p.reconnect_server_cpu) / nodes for p, t in runs
    )
    print(
        "  CPU per new TLS connection beyond plaintext (START_TLS + mutual-TLS handshake): "
        f"client {1000 * per_client:.2f} ms full, {1000 * per_resumed:.2f} ms resumed; "
        f"bookie side {1000 * per_server:.2f} ms full, {1000 * server_resumed:.2f} ms resumed "
        "(on the same cores here; on its own machine in a cluster)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--scans", type=int, default=5, help="warm scans after the cold one")
    parser.add_argument("--max-in-flight", type=int, default=DEFAULT_MAX_IN_FLIGHT)
    parser.add_argument("--zk", help="use this ZooKeeper instead of starting one")
    parser.add_argument("--reps", type=int, default=3, help="alternating repetitions")
    parser.add_argument("--quick", action="store_true", help="100 nodes, 2 warm scans")
    parser.add_argument("--serve", nargs=2, metavar=("COUNT", "WORKDIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(int(args.serve[0]), Path(args.serve[1]))
        return
    nodes, scans = (100, 2) if args.quick else (args.nodes, args.scans)
    run(nodes, scans, args.max_in_flight, args.zk, args.reps)


if __name__ == "__main__":
    main()
