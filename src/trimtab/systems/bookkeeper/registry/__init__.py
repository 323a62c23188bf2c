"""Who is in the cluster: writable and read-only nodes, from ZooKeeper or from a file.

* :class:`Membership` is the snapshot every source hands its listeners.
* :class:`StaticRegistry` reads a node table from a file (the embedded default, no ZooKeeper).
* :class:`ZooKeeperWatcher` follows BookKeeper's registry (``/ledgers/available``...) and
  :class:`ZooKeeperRegistrar` keeps an agent registered in it.
"""

from __future__ import annotations

from trimtab.systems.bookkeeper.registry.model import (
    EMPTY,
    TLS_SUFFIX,
    Membership,
    MembershipListener,
    WireProtocol,
    split_address,
    wants_tls,
)
from trimtab.systems.bookkeeper.registry.registrar import ZooKeeperRegistrar
from trimtab.systems.bookkeeper.registry.service_info import (
    bookie_rpc_endpoint,
    encode_bookie_service_info,
    registration_address,
)
from trimtab.systems.bookkeeper.registry.static import (
    REGISTRY_TABLE,
    RegistryFile,
    StaticRegistry,
    read_registry,
)
from trimtab.systems.bookkeeper.registry.watcher import (
    WatcherStats,
    ZooKeeperWatcher,
    read_membership,
)

__all__ = [
    "EMPTY",
    "REGISTRY_TABLE",
    "TLS_SUFFIX",
    "Membership",
    "MembershipListener",
    "RegistryFile",
    "StaticRegistry",
    "WatcherStats",
    "WireProtocol",
    "ZooKeeperRegistrar",
    "ZooKeeperWatcher",
    "bookie_rpc_endpoint",
    "encode_bookie_service_info",
    "read_membership",
    "read_registry",
    "registration_address",
    "split_address",
    "wants_tls",
]
