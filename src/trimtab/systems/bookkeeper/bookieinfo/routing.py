"""Ask each node in the protocol it registered: trimtab's gRPC or BookKeeper's v3.

A membership mixes both: trimtab agents register a gRPC address, bookies a ``bookie-rpc`` endpoint
(:func:`~trimtab.systems.bookkeeper.registry.model.split_address` tells them apart).
:class:`RoutingBookieInfoClient` is the
:class:`~trimtab.systems.bookkeeper.bookieinfo.client.BookieInfoClient` the reader and the CLI use:
it splits a scan by protocol, runs the v3 half on its loop while the gRPC half runs here (both send
everything at once), and returns one result per node. Each protocol's client is made on first use,
so a cluster of bookies starts no gRPC channel and a cluster of agents no event loop.

Both clients get the whole address (``+tls`` included: the registration's word on TLS) and the
reader's :class:`~trimtab.systems.bookkeeper.bookieinfo.tls.ClientTls`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from trimtab.cluster import NodeId
from trimtab.systems.bookkeeper.bookieinfo.client import GrpcBookieInfoClient
from trimtab.systems.bookkeeper.bookieinfo.info import FetchError, FetchErrorKind, FetchResult
from trimtab.systems.bookkeeper.bookieinfo.tls import ClientTls
from trimtab.systems.bookkeeper.bookieinfo.v3client import DEFAULT_MAX_IN_FLIGHT, BookieRpcClient
from trimtab.systems.bookkeeper.registry.model import WireProtocol, split_address

__all__ = ["RoutingBookieInfoClient"]


class RoutingBookieInfoClient:
    """GetBookieInfo over whichever protocol each node's address names."""

    def __init__(
        self, *, max_in_flight: int = DEFAULT_MAX_IN_FLIGHT, tls: ClientTls | None = None
    ) -> None:
        self._max_in_flight = max_in_flight
        self._tls = tls
        self._grpc: GrpcBookieInfoClient | None = None
        self._bookie_rpc: BookieRpcClient | None = None
        self._closed = False

    @property
    def bookie_rpc(self) -> BookieRpcClient:
        """The v3 client (made on first use)."""
        if self._bookie_rpc is None:
            self._bookie_rpc = BookieRpcClient(max_in_flight=self._max_in_flight, tls=self._tls)
            if self._closed:
                self._bookie_rpc.close()
        return self._bookie_rpc

    @property
    def grpc(self) -> GrpcBookieInfoClient:
        """The gRPC client (made on first use)."""
        if self._grpc is None:
            self._grpc = GrpcBookieInfoClient(tls=self._tls)
            if self._closed:
                self._grpc.close()
        return self._grpc

    def fetch_many(
        self, targets: Mapping[NodeId, str | None], *, timeout: float
    ) -> dict[NodeId, FetchResult]:
        results: dict[NodeId, FetchResult] = {}
        by_protocol: dict[WireProtocol, dict[NodeId, str]] = {p: {} for p in WireProtocol}
        for node, address in targets.items():
            if not address:
                results[node] = FetchError(
                    FetchErrorKind.NO_ADDRESS, "node published no GetBookieInfo address"
                )
                continue
            try:
                protocol, _ = split_address(address)
            except ValueError as exc:
                results[node] = FetchError(FetchErrorKind.NO_ADDRESS, str(exc))
                continue
            by_protocol[protocol][node] = address
        v3_targets = by_protocol[WireProtocol.BOOKIE_RPC]
        grpc_targets = by_protocol[WireProtocol.GRPC]
        scan = self.bookie_rpc.fetch_many_async(v3_targets, timeout=timeout) if v3_targets else None
        if grpc_targets:
            results |= self.grpc.fetch_many(grpc_targets, timeout=timeout)
        if scan is not None:
            results |= BookieRpcClient.collect(scan, v3_targets)
        return results

    def retain(self, addresses: Iterable[str]) -> None:
        kept: dict[WireProtocol, list[str]] = {p: [] for p in WireProtocol}
        for address in addresses:
            try:
                protocol, _ = split_address(address)
            except ValueError:
                continue
            kept[protocol].append(address)
        if self._grpc is not None:
            self._grpc.retain(kept[WireProtocol.GRPC])
        if self._bookie_rpc is not None:
            self._bookie_rpc.retain(kept[WireProtocol.BOOKIE_RPC])

    def close(self) -> None:
        self._closed = True
        if self._grpc is not None:
            self._grpc.close()
        if self._bookie_rpc is not None:
            self._bookie_rpc.close()
