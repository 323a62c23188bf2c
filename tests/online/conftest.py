"""Real ZooKeeper and real agent processes on loopback for the online tests.

ZooKeeper comes from Debian's ``zookeeper`` package (``make test`` installs it when missing):
each server here runs ``ZooKeeperServerMain`` from ``/usr/share/java/zookeeper.jar`` on a free
127.0.0.1 port with its own temporary data directory. The session-scoped ``zookeeper`` serves
most tests, each under its own registry root; tests that restart the server take a private one.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trimtab.cluster import NodeId
from trimtab.systems.zookeeper import ZkTarget

ZK_JAR = Path("/usr/share/java/zookeeper.jar")
ZK_CONF = Path("/etc/zookeeper/conf")
#: Netty's codec: ZooKeeper's Netty connection factory needs it, Debian's manifest omits it.
NETTY_CODEC = Path("/usr/share/java/netty-codec.jar")
#: sessions negotiated down to at most this, so a killed agent leaves the registry quickly
ZK_MAX_SESSION_MS = 4000


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ZooKeeperServer:
    """One standalone ZooKeeper on 127.0.0.1; start, stop and restart keep its data.

    Secured (issue 41) on request, the default server unchanged: ``sasl_users`` (user ->
    password) turns on SASL DIGEST-MD5 (a JAAS ``Server`` section with the
    ``DigestLoginModule``, ``authProvider.1 = SASLAuthenticationProvider``); ``tls_key_store``
    (a PEM file with the key and certificate chain) and ``tls_trust_store`` (the CA) open a
    TLS port, :attr:`secure_port`, on Netty (Debian's classpath lacks ``netty-codec``: added);
    ``tls_client_auth`` ``need`` asks clients for a certificate from that CA (mutual TLS).
    """

    def __init__(
        self,
        workdir: Path,
        *,
        sasl_users: dict[str, str] | None = None,
        tls_key_store: Path | None = None,
        tls_trust_store: Path | None = None,
        tls_client_auth: str = "none",
    ) -> None:
        if not ZK_JAR.exists() or shutil.which("java") is None:
            pytest.fail(
                f"{ZK_JAR} or java is missing: `make test` installs Debian's zookeeper package "
                "(apt-get install zookeeper)"
            )
        self.workdir = workdir
        self.port = free_port()
        (workdir / "data").mkdir(parents=True, exist_ok=True)
        self.cfg = workdir / "zoo.cfg"
        self.cfg.write_text(
            "\n".join(
                [
                    "tickTime=250",
                    f"dataDir={workdir / 'data'}",
                    f"clientPort={self.port}",
                    "clientPortAddress=127.0.0.1",
                    "admin.enableServer=false",
                    "maxClientCnxns=0",
                    f"maxSessionTimeout={ZK_MAX_SESSION_MS}",
                    "4lw.commands.whitelist=ruok",
                    *self._secure_lines(sasl_users, tls_key_store, tls_trust_store),
                    *([f"ssl.clientAuth={tls_client_auth}"] if tls_key_store else []),
                ]
            )
            + "\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def _secure_lines(
        self, users: dict[str, str] | None, key_store: Path | None, trust_store: Path | None
    ) -> list[str]:
        self.jaas: Path | None = None
        self.secure_port: int | None = None
        lines: list[str] = []
        if users:
            self.jaas = self.workdir / "server-jaas.conf"
            entries = "".join(f'\n  user_{name}="{pw}"' for name, pw in users.items())
            self.jaas.write_text(
                f"Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required"
                f"{entries};\n}};\n"
            )
            lines.append(
                "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
            )
        if key_store is not None:
            self.secure_port = free_port()
            lines += [
                f"secureClientPort={self.secure_port}",
                "secureClientPortAddress=127.0.0.1",
                "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
                f"ssl.keyStore.location={key_store}",
                "ssl.keyStore.type=PEM",
                f"ssl.trustStore.location={trust_store}",
                "ssl.trustStore.type=PEM",
            ]
        return lines

    @property
    def secure_hosts(self) -> str:
        assert self.secure_port is not None, "started without a TLS port"
        return f"127.0.0.1:{self.secure_port}"

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        classpath = f"{ZK_CONF}:{ZK_JAR}" if ZK_CONF.exists() else str(ZK_JAR)
        flags: list[str] = []
        if self.jaas is not None:
            flags.append(f"-Djava.security.auth.login.config={self.jaas}")
        if self.secure_port is not None:
            classpath += f":{NETTY_CODEC}"
        with (self.workdir / "server.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    "java",
                    "-Xmx256m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    *flags,
                    "-cp",
                    classpath,
                    "org.apache.zookeeper.server.ZooKeeperServerMain",
                    str(self.cfg),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log_text = (self.workdir / "server.log").read_text(errors="replace")[-2000:]
                pytest.fail(f"ZooKeeper exited with {self.proc.returncode}:\n{log_text}")
            if self._ruok():
                return
            time.sleep(0.1)
        self.stop()
        pytest.fail("ZooKeeper did not answer ruok within 60 s")

    def _ruok(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"ruok")
                return sock.recv(16) == b"imok"
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=15)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def private_zookeeper(tmp_path: Path) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tmp_path / "zookeeper")
    server.start()
    yield server
    server.stop()


_roots = itertools.count()


@pytest.fixture
def zk_target(zookeeper: ZooKeeperServer) -> ZkTarget:
    """A registry root of its own for each test: ``/t<N>/ledgers``."""
    return ZkTarget(zookeeper.hosts, f"/t{os.getpid()}-{next(_roots)}/ledgers")


def trimtab_command() -> list[str]:
    script = Path(sys.executable).with_name("trimtab")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from trimtab.cli import main; main()"]


def read_json_line(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    """The next stdout line of ``proc`` as JSON, waiting at most ``timeout`` seconds."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise AssertionError(f"no output from agent within {timeout} s")
    line = proc.stdout.readline()
    if not line:
        raise AssertionError(f"agent exited with {proc.wait(timeout=10)} before answering")
    doc: dict[str, Any] = json.loads(line)
    return doc


class AgentProcess:
    """A real ``trimtab agent`` process on loopback, with a faults file the test can rewrite."""

    def __init__(self, workdir: Path, node: str, zk: ZkTarget | None, *extra: str) -> None:
        self.node = NodeId(node)
        self.workdir = workdir
        self.ledger_dir = workdir / f"ledgers-{node.replace(':', '_')}"
        self.ledger_dir.mkdir(parents=True, exist_ok=True)
        self.faults = workdir / f"faults-{node.replace(':', '_')}.json"
        self.config = workdir / "agent.properties"
        self.config.write_text(f"zkTimeout={ZK_MAX_SESSION_MS}\n")
        self.zk = zk
        self.extra = extra
        self.proc: subprocess.Popen[str] | None = None
        self.address = ""
        self.ready: dict[str, Any] = {}

    def start(self) -> AgentProcess:
        args = [
            sys.executable,
            str(Path(__file__).with_name("faults.py")),  # `trimtab agent` with test faults
            "agent",
            "--id",
            self.node,
            "--ledger-dirs",
            str(self.ledger_dir),
            "--disk-check-seconds",
            "0.2",
            "--config",
            str(self.config),
            "--json",
            *self.extra,
        ]
        if self.zk is not None:
            args += ["--zk", self.zk.hosts, "--zk-root", self.zk.root]
        env = {**os.environ, "TRIMTAB_AGENT_FAULTS": str(self.faults)}
        with (self.workdir / f"agent-{self.node.replace(':', '_')}.log").open("a") as log:
            self.proc = subprocess.Popen(
                args,
                stdout=subprocess.PIPE,
                stderr=log,
                stdin=subprocess.DEVNULL,
                text=True,
                env=env,
            )
        self.ready = read_json_line(self.proc, timeout=30)
        assert self.ready["event"] == "ready", self.ready
        self.address = self.ready["address"]
        return self

    def set_faults(self, **faults: Any) -> None:
        tmp = self.faults.with_suffix(".tmp")
        tmp.write_text(json.dumps(faults))
        tmp.replace(self.faults)

    def stop(self) -> int:
        """SIGTERM and wait; returns the exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=20)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None
        return code

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=20)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[list[AgentProcess]]:
    """Agents the test starts are appended here and stopped (or killed) at the end."""
    started: list[AgentProcess] = []
    yield started
    for agent in started:
        if agent.proc is not None:
            with contextlib.suppress(Exception):
                agent.stop()
        if agent.proc is not None:
            agent.kill()


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Every thread a test starts (kazoo, gRPC, reader, watcher) must end with the test.

    A leftover kazoo thread would keep reconnecting and drawing from the global ``random``
    module, which breaks Hypothesis tests that run later in the same session.
    """
    before = {t.ident for t in threading.enumerate()}
    yield
    deadline = time.monotonic() + 10
    left: list[str] = []
    while time.monotonic() < deadline:
        left = [t.name for t in threading.enumerate() if t.ident not in before and t.is_alive()]
        if not left:
            return
        time.sleep(0.05)
    pytest.fail(f"threads left running after the test: {left}")
