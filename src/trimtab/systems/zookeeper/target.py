"""Which ZooKeeper, and where BookKeeper keeps its node registry in it.

Layout (BookKeeper's ``ZKRegistrationManager``, root ``zkLedgersRootPath``, default ``/ledgers``)::

    /ledgers/available/<host:port>             ephemeral, one per writable node
    /ledgers/available/readonly                persistent
    /ledgers/available/readonly/<host:port>    ephemeral, one per read-only node

A bookie id is ``host:port`` or, since BookKeeper 4.12, any name. An ephemeral znode lives as
long as its owner's ZooKeeper session, so a node that dies leaves the registry within the
session time-out with nobody cleaning up (sessions: :mod:`trimtab.systems.zookeeper.session`;
what a registration znode holds: :mod:`trimtab.systems.zookeeper.znode`).

ZooKeeper is named either by ``zkServers`` plus ``zkLedgersRootPath`` or by a
``metadataServiceUri`` such as ``zk+hierarchical://zk1:2181;zk2:2181/ledgers`` (which wins).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from trimtab.config import BookieInfoConfig, Config
from trimtab.config.bookkeeper import zk_hosts
from trimtab.errors import MembershipError
from trimtab.systems.zookeeper.security import NO_SECURITY, ZkSecurity

__all__ = ["READONLY", "ZkTarget", "zk_servers", "zk_target"]

READONLY = "readonly"


@dataclass(frozen=True, slots=True)
class ZkTarget:
    """A ZooKeeper ensemble (``host:port,host:port``), the registry root in it, and how
    sessions to it log in and protect what they create (none by default)."""

    hosts: str
    root: str = "/ledgers"
    security: ZkSecurity = field(default=NO_SECURITY, compare=False, repr=False)

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
    config: BookieInfoConfig,
    *,
    hosts: str | None = None,
    root: str | None = None,
    security: ZkSecurity = NO_SECURITY,
) -> ZkTarget:
    """The target from explicit flags first, then ``metadataServiceUri``, then ``zkServers``;
    ``security`` is :func:`~trimtab.systems.zookeeper.security.zk_security` of the whole
    configuration (a command that dials ZooKeeper passes it)."""
    uri = config.metadata_service_uri
    uri_hosts, uri_root = _parse_uri(uri) if uri else (None, None)
    chosen_hosts = hosts or uri_hosts or config.zk_servers
    if not chosen_hosts:
        raise MembershipError(
            "no ZooKeeper servers given: use --zk HOST:PORT, zkServers or metadataServiceUri"
        )
    return ZkTarget(chosen_hosts, root or uri_root or config.zk_ledgers_root_path, security)


def zk_servers(config: Config) -> str | None:
    """The ZooKeeper a ``/bookies`` rack map is read from (broker.conf's ``metadataStoreUrl``
    or ``zookeeperServers``, else ``metadataServiceUri`` or ``zkServers``), or None when none
    is configured (the resolver then says so). Pass it to
    :func:`~trimtab.systems.bookkeeper.placement_setup.make_policy` as ``zk_servers``."""
    if config.topology.metadata_store_url is not None:
        return zk_hosts(config.topology.metadata_store_url)
    try:
        return zk_target(config.bookie_info).hosts
    except MembershipError:
        return None


def _parse_uri(uri: str) -> tuple[str, str]:
    parts = urlsplit(uri)
    if not parts.scheme.startswith("zk") or not parts.netloc:
        raise MembershipError(
            f"bad metadataServiceUri {uri!r}: expected zk+hierarchical://host:port[;host:port]/root"
        )
    return parts.netloc.replace(";", ","), parts.path or "/ledgers"
