"""A membership snapshot: which nodes are writable, which read-only, and where to ask them.

Every membership source (the ZooKeeper watcher, the static file registry, a test fake) hands
its listeners a new frozen :class:`Membership` on each change and never mutates one, so a
consumer may keep a snapshot as long as it likes.

A node's address says which protocol to ask it in (:class:`WireProtocol`): a bare
``host:port`` is trimtab's gRPC service (what trimtab agents register), ``bookie-rpc://host:port``
is BookKeeper's own v3 protocol at a bookie's port (what a bookie's registration gives). A
``+tls`` on the scheme (``grpc+tls://``, ``bookie-rpc+tls://``) says the node wants TLS there: an
agent started with a certificate registers so, and a bookie whose ``BookieServiceInfoFormat``
endpoint lists the ``tls`` extension (as upstream's ``BookieService.publishInfo`` writes it when
TLS is configured) is read so (:func:`wants_tls`).

A node registered both writable and read-only counts as read-only. That happens for a moment
while an agent switches mode (it registers the new mode before removing the old one, as
BookKeeper's ``ZKRegistrationManager`` does), and the cautious reading is that it takes no new
writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from trimtab.cluster import NodeId, NodeState

__all__ = [
    "EMPTY",
    "TLS_SUFFIX",
    "Membership",
    "MembershipListener",
    "WireProtocol",
    "split_address",
    "wants_tls",
]

#: appended to an address scheme when the node wants TLS on that port
TLS_SUFFIX = "+tls"


class WireProtocol(StrEnum):
    """How a node is asked for its disk space; the value is the address scheme."""

    GRPC = "grpc"  # trimtab's GetBookieInfo gRPC service (trimtab agents)
    BOOKIE_RPC = "bookie-rpc"  # BookKeeper's v3 protocol at the bookie port (upstream's name)

    def address(self, host_port: str, *, tls: bool = False) -> str:
        """``host_port`` as an address of this protocol (gRPC stays bare, as registered, unless
        the node wants TLS: ``grpc+tls://host:port``)."""
        if tls:
            return f"{self.value}{TLS_SUFFIX}://{host_port}"
        return host_port if self is WireProtocol.GRPC else f"{self.value}://{host_port}"


def split_address(address: str) -> tuple[WireProtocol, str]:
    """``bookie-rpc://h:p`` -> (BOOKIE_RPC, ``h:p``); ``grpc://h:p`` or bare ``h:p`` -> GRPC.

    >>> split_address("bookie-rpc://10.0.0.1:3181")
    (<WireProtocol.BOOKIE_RPC: 'bookie-rpc'>, '10.0.0.1:3181')
    """
    scheme, sep, rest = address.partition("://")
    if not sep:
        return WireProtocol.GRPC, address
    try:
        return WireProtocol(scheme.removesuffix(TLS_SUFFIX)), rest
    except ValueError:
        allowed = ", ".join(f"{p.value}[{TLS_SUFFIX}]://" for p in WireProtocol)
        raise ValueError(f"bad node address {address!r}: the scheme is one of {allowed}") from None


def wants_tls(address: str) -> bool:
    """Whether ``address`` says the node wants TLS (its scheme ends in ``+tls``).

    >>> wants_tls("bookie-rpc+tls://10.0.0.1:3181"), wants_tls("10.0.0.1:3182")
    (True, False)
    """
    scheme, sep, _ = address.partition("://")
    return bool(sep) and scheme.endswith(TLS_SUFFIX)


@dataclass(frozen=True, slots=True, eq=False)
class Membership:
    """Writable and read-only node ids, and each node's GetBookieInfo address if it gave one."""

    writable: frozenset[NodeId]
    readonly: frozenset[NodeId]
    addresses: Mapping[NodeId, str] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def of(
        cls,
        *,
        writable: Iterable[str] = (),
        readonly: Iterable[str] = (),
        addresses: Mapping[str, str | None] | Mapping[NodeId, str | None] | None = None,
    ) -> Membership:
        """Normalise ids, let read-only win over writable, and keep only members' addresses."""
        ro = frozenset(NodeId(n) for n in readonly)
        rw = frozenset(NodeId(n) for n in writable) - ro
        members = rw | ro
        known = {NodeId(k): v for k, v in (addresses or {}).items() if v}
        return cls(rw, ro, MappingProxyType({n: known[n] for n in sorted(members) if n in known}))

    @property
    def members(self) -> frozenset[NodeId]:
        return self.writable | self.readonly

    def state_of(self, node: str) -> NodeState:
        node_id = NodeId(node)
        if node_id in self.readonly:
            return NodeState.READONLY
        if node_id in self.writable:
            return NodeState.WRITABLE
        return NodeState.DOWN

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Membership):
            return NotImplemented
        return (
            self.writable == other.writable
            and self.readonly == other.readonly
            and dict(self.addresses) == dict(other.addresses)
        )

    def __hash__(self) -> int:
        return hash((self.writable, self.readonly, tuple(sorted(self.addresses.items()))))


EMPTY = Membership(frozenset(), frozenset())

#: called with each new snapshot, from the source's own thread; must not block for long
MembershipListener = Callable[[Membership], None]
