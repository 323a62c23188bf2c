"""A whole stand-in Pulsar cluster: the shared state and one server per broker.

:class:`PulsarStandin` starts ``brokers`` servers on loopback (each on its own port, so a
307 redirect really hops to another server), names each broker ``127.0.0.1:<port>`` as the
load manager names a broker by its web service address, and spreads the namespaces' bundles
over them round-robin. ``admin_url`` is the first broker's URL (where an operator's
``--pulsar-admin`` points). With ``tls`` every broker serves HTTPS with that certificate; with
``client_ca`` too, it requires a client certificate signed by it (mutual TLS). ``port`` fixes
the first broker's port (the docs' examples name it).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from tests.standins.pulsar.cluster import PulsarCluster
from tests.standins.pulsar.server import BrokerServer

__all__ = ["PulsarStandin", "ServerTls"]


@dataclass(frozen=True, slots=True)
class ServerTls:
    """The brokers' certificate and key (PEM), and the CA of client certificates if any."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    def context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(self.cert), str(self.key))
        if self.client_ca is not None:
            context.load_verify_locations(str(self.client_ca))
            context.verify_mode = ssl.CERT_REQUIRED
        return context


class PulsarStandin:
    """Brokers serving one :class:`PulsarCluster`; a context manager that stops them all."""

    def __init__(
        self,
        *,
        brokers: int = 3,
        namespaces: Mapping[str, int] | None = None,
        cluster: str = "standalone",
        tokens: Mapping[str, str] | None = None,
        superusers: Iterable[str] = ("admin",),
        tls: ServerTls | None = None,
        time_scale: float = 1000.0,
        unload_seconds: float = 30.0,
        owners: Mapping[str, Sequence[str]] | None = None,
        port: int = 0,
    ) -> None:
        """``owners`` (broker name -> its bundles, as saved load reports hold them) replaces
        ``brokers`` and ``namespaces``: the stand-in then plays exactly those brokers, owning
        exactly those bundles. ``port``: the first broker's port (the next ones follow it),
        0 for any free ports."""
        self.cluster = PulsarCluster(
            cluster,
            time_scale=time_scale,
            unload_seconds=unload_seconds,
            tokens=tokens,
            superusers=superusers,
        )
        context = tls.context() if tls else None
        names: list[str | None] = list(owners) if owners else [None] * brokers
        started = (
            BrokerServer(self.cluster, context, name=name, port=port + at if port else 0)
            for at, name in enumerate(names)
        )
        self.servers = {server.broker: server for server in started}
        for broker, server in self.servers.items():
            self.cluster.add_broker(broker, server.url)
        self.cluster.on_remove = self._stop_broker
        if owners:
            self._own(owners)
        else:
            self._spread(namespaces or {"public/default": 4})
        for server in self.servers.values():
            server.start()
        self.admin_url = next(iter(self.servers.values())).url

    def _spread(self, namespaces: Mapping[str, int]) -> None:
        """Every namespace's bundles, owned round-robin."""
        ids = list(self.servers)
        at = 0
        for namespace, count in namespaces.items():
            for bundle in self.cluster.add_namespace(namespace, count):
                self.cluster.reown(bundle, ids[at % len(ids)])
                at += 1

    def _own(self, owners: Mapping[str, Sequence[str]]) -> None:
        """The given bundles (``tenant/ns/0x..._0x...``), each owned by its broker."""
        ranges: dict[str, list[str]] = {}
        for bundles in owners.values():
            for bundle in bundles:
                namespace, _, hash_range = bundle.rpartition("/")
                ranges.setdefault(namespace, []).append(hash_range)
        for namespace, found in ranges.items():
            self.cluster.add_namespace(namespace, sorted(found))
        for broker, bundles in owners.items():
            for bundle in bundles:
                self.cluster.reown(bundle, broker)

    @property
    def brokers(self) -> list[str]:
        """The running brokers' ids, in start order (the first serves ``admin_url``)."""
        return list(self.servers)

    def _stop_broker(self, broker: str) -> None:
        server = self.servers.pop(broker, None)
        if server is not None:
            server.stop()

    def close(self) -> None:
        for broker in list(self.servers):
            self._stop_broker(broker)
        self.servers.clear()

    def __enter__(self) -> PulsarStandin:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
