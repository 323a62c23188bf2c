"""The agent on each storage node: answer GetBookieInfo, stay registered, turn read-only when full.

One :class:`Agent` owns four things and their threads:

* the gRPC :class:`~trimtab.systems.bookkeeper.bookieinfo.server.BookieInfoServer`, which measures
  the ledger directories on every request (as upstream, no cache: the answer is as fresh as the
  call);
* a :class:`~trimtab.systems.bookkeeper.bookieinfo.v3server.BookieRpcServer` answering
  GET_BOOKIE_INFO in BookKeeper's own v3 protocol on a second port, so the agent can stand in for a
  bookie;
* a :class:`~trimtab.systems.bookkeeper.registry.registrar.ZooKeeperRegistrar`, when ZooKeeper is
  given, which keeps the node's ephemeral znode (writable or read-only) alive across session expiry;
* a disk monitor thread that measures every ``diskCheckInterval`` and applies the read-only
  rule of :func:`~trimtab.systems.bookkeeper.bookieinfo.disk.next_readonly` (``--readonly``
  pins read-only).

With ``tls`` both ports speak only TLS (the v3 port after START_TLS, as a bookie) with the same
certificate, renewed files are picked up at the next connection, and the registration says so
(``grpc+tls://host:port``), so readers know to start TLS.

Startup is all-or-nothing: a missing ledger directory, an address in use or a registration held
by another live agent raises :class:`~trimtab.errors.AgentError` and leaves nothing running.
Shutdown unregisters first (clients stop choosing the node), then lets requests in progress
finish, then stops the metrics endpoint.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from trimtab.cluster import NodeId
from trimtab.diskinfo import BookieInfo
from trimtab.errors import AgentError
from trimtab.systems.bookkeeper.bookieinfo.disk import (
    DiskUsage,
    measure_disks,
    next_readonly,
)
from trimtab.systems.bookkeeper.bookieinfo.server import BookieInfoServer
from trimtab.systems.bookkeeper.bookieinfo.tls import ServerTls
from trimtab.systems.bookkeeper.bookieinfo.v3server import BookieRpcServer
from trimtab.systems.bookkeeper.registry.model import WireProtocol
from trimtab.systems.bookkeeper.registry.registrar import ZooKeeperRegistrar
from trimtab.systems.zookeeper import ZkTarget

__all__ = ["Agent", "AgentOptions", "AgentStatus", "advertised_address"]

_log = logging.getLogger(__name__)
_WILDCARDS = ("", "0.0.0.0", "[::]", "::")


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentOptions:
    """Everything an agent needs; ``zk=None`` runs it without registration (static registry)."""

    node_id: NodeId
    ledger_dirs: tuple[Path, ...]
    listen: str = "127.0.0.1:0"
    advertise: str | None = None
    #: where the v3 (bookie-rpc) port listens; ``None``: the gRPC host, a free port
    bookie_listen: str | None = None
    zk: ZkTarget | None = None
    force_readonly: bool = False
    disk_usage_threshold: float = 0.95
    disk_usage_lwm_threshold: float = 0.90
    disk_check_seconds: float = 10.0
    session_timeout_seconds: float = 10.0
    #: TLS (and mutual TLS) on both ports; ``None``: plaintext (issue 41, part 1)
    tls: ServerTls | None = None


@dataclass(frozen=True, slots=True)
class AgentStatus:
    """What the agent reports about itself (metrics, the startup line, tests)."""

    node_id: NodeId
    address: str
    bookie_address: str
    readonly: bool
    usage: DiskUsage | None
    disk_error: str | None
    answers: Mapping[str, int]
    registered: bool | None  # None: no ZooKeeper
    registrations: int
    sessions_lost: int


def advertised_address(listen_host: str, port: int, node_id: NodeId, advertise: str | None) -> str:
    """The address clients should use: ``advertise``, else the listen host (or, for a
    wildcard listen address, the node's own host name) with the bound port."""
    if advertise:
        return advertise
    host = node_id.host if listen_host in _WILDCARDS else listen_host
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


class Agent:
    """A GetBookieInfo agent; :meth:`start`, then :meth:`close` once."""

    def __init__(self, options: AgentOptions) -> None:
        if not options.ledger_dirs:
            raise AgentError("no ledger directories given: use --ledger-dirs DIR[,DIR]")
        for directory in options.ledger_dirs:
            if not directory.is_dir():
                raise AgentError(f"ledger directory {directory} does not exist")
        self.options = options
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._usage: DiskUsage | None = None
        self._disk_error: str | None = None
        self._readonly = options.force_readonly
        self._server = BookieInfoServer(self.measure, listen=options.listen, tls=options.tls)
        listen_host = options.listen.rsplit(":", 1)[0]
        self.address = advertised_address(
            listen_host, self._server.port, options.node_id, options.advertise
        )
        bookie_listen = options.bookie_listen or f"{listen_host}:0"
        try:
            self._bookie_server = BookieRpcServer(
                self.measure, listen=bookie_listen, tls=options.tls
            )
        except AgentError:
            self._server.stop(grace=0)
            raise
        self.bookie_address = advertised_address(
            bookie_listen.rsplit(":", 1)[0], self._bookie_server.port, options.node_id, None
        )
        self._registrar: ZooKeeperRegistrar | None = None
        self._monitor: threading.Thread | None = None

    @property
    def registered_address(self) -> str:
        """What the registration says: the gRPC address, ``grpc+tls://`` when TLS is on."""
        if self.options.tls is None:
            return self.address
        return WireProtocol.GRPC.address(self.address, tls=True)

    # -- measuring ---------------------------------------------------------------------------

    def usage(self) -> DiskUsage:
        """Measure the ledger directories now."""
        return measure_disks(self.options.ledger_dirs)

    def measure(self) -> BookieInfo:
        """What GetBookieInfo answers; raises ``OSError`` (answered as EIO)."""
        return self.usage().info()

    def check_disks(self) -> bool:
        """One disk check: measure, apply the read-only rule, tell ZooKeeper; returns readonly."""
        try:
            usage = self.usage()
        except OSError as exc:
            with self._lock:
                self._disk_error = str(exc)
                return self._readonly
        with self._lock:
            self._usage, self._disk_error = usage, None
            readonly = self.options.force_readonly or next_readonly(
                self._readonly,
                usage,
                threshold=self.options.disk_usage_threshold,
                lwm_threshold=self.options.disk_usage_lwm_threshold,
            )
            changed, self._readonly = readonly != self._readonly, readonly
        if changed:
            _log.warning(
                "%s turns %s: disks %.1f%% used (threshold %.0f%%)",
                self.options.node_id,
                "read-only" if readonly else "writable",
                100 * (1 - usage.free_bytes / usage.total_bytes) if usage.total_bytes else 0.0,
                100 * self.options.disk_usage_threshold,
            )
        if self._registrar is not None:
            self._registrar.set_readonly(readonly)
        return readonly

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        try:
            self.usage()
        except OSError as exc:
            self._server.stop(grace=0)
            self._bookie_server.stop(grace=0)
            raise AgentError(f"cannot measure the ledger directories: {exc}") from None
        self.check_disks()
        self._server.start()
        self._bookie_server.start()
        if self.options.zk is not None:
            registrar = ZooKeeperRegistrar(
                self.options.zk,
                self.options.node_id,
                self.registered_address,
                readonly=self.status().readonly,
                session_timeout=self.options.session_timeout_seconds,
            )
            try:
                registrar.start(timeout=self.options.session_timeout_seconds)
            except AgentError:
                registrar.stop()
                self._server.stop(grace=0)
                self._bookie_server.stop(grace=0)
                raise
            self._registrar = registrar
        self._monitor = threading.Thread(target=self._run, name="agent-disk-check", daemon=True)
        self._monitor.start()

    def _run(self) -> None:
        while not self._stop.wait(self.options.disk_check_seconds):
            self.check_disks()

    def close(self, grace: float = 1.0) -> None:
        """Unregister, finish requests in progress (``grace`` seconds), stop; idempotent."""
        self._stop.set()
        if self._monitor is not None:
            self._monitor.join(timeout=5.0)
            self._monitor = None
        if self._registrar is not None:
            self._registrar.stop()
            self._registrar = None
        self._server.stop(grace)
        self._bookie_server.stop(grace)

    def status(self) -> AgentStatus:
        registrar = self._registrar
        registered = None if registrar is None else registrar.registered  # asks ZooKeeper
        answers = self._server.answer_counts()
        for name, count in self._bookie_server.answer_counts().items():
            answers[name] = answers.get(name, 0) + count
        with self._lock:
            return AgentStatus(
                node_id=self.options.node_id,
                address=self.address,
                bookie_address=self.bookie_address,
                readonly=self._readonly,
                usage=self._usage,
                disk_error=self._disk_error,
                answers=MappingProxyType(answers),
                registered=registered,
                registrations=0 if registrar is None else registrar.registrations,
                sessions_lost=0 if registrar is None else registrar.sessions_lost,
            )
