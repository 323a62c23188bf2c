"""Where BookKeeper keeps its node registry in ZooKeeper, and how trimtab talks to it.

Layout (BookKeeper's ``ZKRegistrationManager``, root ``zkLedgersRootPath``, default ``/ledgers``)::

    /ledgers/available/<host:port>             ephemeral, one per writable node
    /ledgers/available/readonly                persistent
    /ledgers/available/readonly/<host:port>    ephemeral, one per read-only node

A bookie id is ``host:port`` or, since BookKeeper 4.12, any name. An ephemeral znode lives as
long as its owner's ZooKeeper session, so a node that dies leaves the registry within the
session time-out with nobody cleaning up. trimtab agents put their gRPC GetBookieInfo address
in the znode's data as a small JSON document, ``{"bookieinfo": "127.0.0.1:3182"}``; a bookie
puts its ``BookieServiceInfoFormat`` there, or nothing (before 4.12); how each is read is
:mod:`trimtab.membership.service_info`.

ZooKeeper is named either by ``zkServers`` plus ``zkLedgersRootPath`` or by a
``metadataServiceUri`` such as ``zk+hierarchical://zk1:2181;zk2:2181/ledgers`` (which wins).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kazoo.client import KazooClient

from trimtab.config import BookieInfoConfig
from trimtab.errors import MembershipError

__all__ = [
    "READONLY",
    "ZkTarget",
    "decode_node_data",
    "encode_node_data",
    "end_session",
    "make_client",
    "zk_target",
]

READONLY = "readonly"
_DATA_KEY = "bookieinfo"


@dataclass(frozen=True, slots=True)
class ZkTarget:
    """A ZooKeeper ensemble (``host:port,host:port``) and the registry root in it."""

    hosts: str
    root: str = "/ledgers"

    def __post_init__(self) -> None:
        if not self.hosts.strip():
            raise MembershipError("no ZooKeeper servers given: use --zk HOST:PORT or zkServers")
        root = self.root.rstrip("/")
        if not root.startswith("/") or "//" in root:
            raise MembershipError(
                f"bad ZooKeeper root {self.root!r}: an absolute path such as /ledgers"
            )
        object.__setattr__(self, "root", root)

    @property
    def available(self) -> str:
        return f"{self.root}/available"

    @property
    def readonly(self) -> str:
        return f"{self.root}/available/{READONLY}"

    def node_path(self, node: str, *, readonly: bool) -> str:
        return f"{self.readonly if readonly else self.available}/{node}"


def zk_target(
    config: BookieInfoConfig, *, hosts: str | None = None, root: str | None = None
) -> ZkTarget:
    """The target from explicit flags first, then ``metadataServiceUri``, then ``zkServers``."""
    uri = config.metadata_service_uri
    uri_hosts, uri_root = _parse_uri(uri) if uri else (None, None)
    chosen_hosts = hosts or uri_hosts or config.zk_servers
    if not chosen_hosts:
        raise MembershipError(
            "no ZooKeeper servers given: use --zk HOST:PORT, zkServers or metadataServiceUri"
        )
    return ZkTarget(chosen_hosts, root or uri_root or config.zk_ledgers_root_path)


def _parse_uri(uri: str) -> tuple[str, str]:
    parts = urlsplit(uri)
    if not parts.scheme.startswith("zk") or not parts.netloc:
        raise MembershipError(
            f"bad metadataServiceUri {uri!r}: expected zk+hierarchical://host:port[;host:port]/root"
        )
    return parts.netloc.replace(";", ","), parts.path or "/ledgers"


def encode_node_data(address: str) -> bytes:
    return json.dumps({_DATA_KEY: address}, sort_keys=True).encode()


def decode_node_data(data: bytes | None) -> str | None:
    """The GetBookieInfo address in a registration znode, or ``None`` if it has none."""
    if not data:
        return None
    try:
        doc: Any = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    address = doc.get(_DATA_KEY) if isinstance(doc, dict) else None
    return address if isinstance(address, str) and address else None


def make_client(hosts: str, *, session_timeout: float) -> Any:
    """A kazoo client that reconnects quickly and forever (until stopped).

    The connection retry never gives up, because an agent or a watcher must outlive a
    ZooKeeper restart; its delay is capped at one second so a restarted server is found again
    quickly. Commands are retried a few times over a short connection loss.
    """
    return KazooClient(
        hosts=hosts,
        timeout=session_timeout,
        connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
        command_retry={"max_tries": 3, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
    )


def end_session(
    stop: threading.Event, wake: threading.Event, thread: threading.Thread | None, client: Any
) -> None:
    """Stop a worker thread that follows ZooKeeper, then close its session, so the session's
    ephemeral znodes go at once (a registered node leaves without waiting for the timeout)."""
    stop.set()
    wake.set()
    if thread is not None:
        thread.join(timeout=10.0)
    client.stop()
    client.close()
