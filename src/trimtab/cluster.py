"""The cluster model every decider reads: node identity, network location, capacity and state.

A :class:`ClusterState` is an immutable snapshot. Deciders (placement, shedding, allocation)
take one in and hand decisions out; the parts that watch a live cluster (ZooKeeper, the
BookieInfo reader) build a new snapshot on each change instead of mutating a shared one.

Node ids are ``host:port`` as BookKeeper writes them (``bk1.dc1:3181``, ``[::1]:3181``); the
port may be left out for systems that name nodes by host alone. Network locations are paths
``/region/rack`` (or ``/rack`` for a one-level topology), as a DNS-to-switch resolver returns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType
from typing import TypeVar

__all__ = [
    "DEFAULT_RACK",
    "DEFAULT_REGION",
    "DEFAULT_REGION_RACK",
    "Capacity",
    "ClusterState",
    "Node",
    "NodeHealth",
    "NodeId",
    "NodeState",
    "Role",
    "location_components",
    "location_of",
    "validate_location",
]

#: Where rack-aware placement puts nodes it cannot place (``NetworkTopology.DEFAULT_RACK``).
DEFAULT_RACK = "/default-rack"
#: The region-aware policy's default: two levels, so it matches ``/region/rack`` depth.
DEFAULT_REGION_RACK = "/default-region/default-rack"
DEFAULT_REGION = "default-region"

_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+)$")


class NodeId(str):
    """A node's id, ``host:port`` or ``host``; a ``str`` so it sorts, hashes and serialises as one.

    Host names are compared without regard to letter case, as DNS compares them: the id is
    kept in lower case, so ``BK1.dc1:3181`` and ``bk1.dc1:3181`` are one node (two inventory
    rows naming it are a ``duplicate`` or a ``conflict``, never two nodes).

    >>> NodeId("bk1.dc1:3181").host, NodeId("BK1.DC1:3181").port
    ('bk1.dc1', 3181)
    >>> NodeId("BK1.dc1:3181") == NodeId("bk1.DC1:3181")
    True
    """

    __slots__ = ()

    def __new__(cls, text: str) -> NodeId:
        if isinstance(text, NodeId):
            return text
        text = str(text).strip().lower()  # DNS names are case-insensitive (RFC 4343)
        host, port = _split_host_port(text)
        if not host or not _HOST.match(host):
            raise ValueError(f"bad node id {text!r}: expected host:port, e.g. 'bk1.rack1:3181'")
        if port is not None and not 0 < port < 65536:
            raise ValueError(f"bad node id {text!r}: port {port} is outside 1..65535")
        return super().__new__(cls, text)

    @property
    def host(self) -> str:
        """The host part, which DNS-to-switch resolvers are asked about (brackets removed)."""
        host = _split_host_port(self)[0]
        return host[1:-1] if host.startswith("[") else host

    @property
    def port(self) -> int | None:
        return _split_host_port(self)[1]


def _split_host_port(text: str) -> tuple[str, int | None]:
    if text.startswith("["):  # [v6]:port or [v6]
        end = text.find("]")
        if end < 0:
            return "", None
        rest = text[end + 1 :]
        if not rest:
            return text, None
        if not rest.startswith(":") or not rest[1:].isdigit():
            return "", None
        return text[: end + 1], int(rest[1:])
    host, sep, port = text.rpartition(":")
    if not sep:
        return text, None
    if not port.isdigit() or ":" in host:
        return "", None
    return host, int(port)


def validate_location(location: str) -> str:
    """Return ``location`` normalised (no trailing '/'), or raise ``ValueError`` saying why.

    A location is an absolute path of one or more non-empty names: ``/rack`` or ``/region/rack``.
    ``""`` and ``"/"`` are refused (BookKeeper #2980): a node must sit below some rack.
    """
    text = location.strip()
    if text in ("", "/"):
        raise ValueError(f"bad network location {location!r}: it must name a rack, e.g. '/rack1'")
    if not text.startswith("/"):
        raise ValueError(f"bad network location {location!r}: it must start with '/'")
    text = text.rstrip("/")
    parts = text[1:].split("/")
    if any(not p.strip() for p in parts):
        raise ValueError(f"bad network location {location!r}: empty component")
    if any(p != p.strip() for p in parts):
        raise ValueError(f"bad network location {location!r}: component with spaces at its ends")
    return text


def location_components(location: str) -> tuple[str, ...]:
    """``'/r1/rack2'`` -> ``('r1', 'rack2')``."""
    return tuple(validate_location(location)[1:].split("/"))


def location_of(region: str | None, rack: str | None) -> str:
    """Build a location from inventory columns; missing parts take the default names.

    >>> location_of("us-east", "r1"), location_of(None, None), location_of(None, "r7")
    ('/us-east/r1', '/default-region/default-rack', '/default-region/r7')
    """
    region = (region or "").strip() or DEFAULT_REGION
    rack = (rack or "").strip() or "default-rack"
    for what, name in (("region", region), ("rack", rack)):
        if "/" in name:
            raise ValueError(f"bad {what} name {name!r}: it must not contain '/'")
    return f"/{region}/{rack}"


class NodeState(StrEnum):
    """What a node may be used for, as BookKeeper's membership tells it."""

    WRITABLE = "writable"
    READONLY = "readonly"
    DOWN = "down"

    @classmethod
    def parse(cls, text: str) -> NodeState:
        return _state_named(cls, text, text.strip().lower().replace("-", "").replace("_", ""))


_S = TypeVar("_S", bound=StrEnum)


def _state_named(kind: type[_S], text: str, norm: str) -> _S:
    """The member of ``kind`` whose value is ``norm``; else a ValueError listing the values."""
    for state in kind:
        if state.value == norm:
            return state
    allowed = ", ".join(s.value for s in kind)
    raise ValueError(f"bad state {text!r}: expected one of {allowed}")


class NodeHealth(StrEnum):
    """What the partition balancer knows of a broker (the ``node_health`` table): answering,
    not answering, in maintenance mode (keeps its replicas, takes none), or being drained."""

    UP = "up"
    DOWN = "down"
    MAINTENANCE = "maintenance"
    DRAINING = "draining"

    @classmethod
    def parse(cls, text: str) -> NodeHealth:
        return _state_named(cls, text, text.strip().lower())


class Role(StrEnum):
    """What a node serves, from the inventory's ``role`` column: empty means both.

    One rule for every command and the pipeline: ledgers go to nodes serving ``BOOKIE``,
    bundles and partitions to nodes serving ``BROKER`` (see :meth:`ClusterState.for_role`).
    """

    BOOKIE = "bookie"
    BROKER = "broker"
    BOTH = ""

    @classmethod
    def parse(cls, text: str | None) -> Role:
        norm = (text or "").strip().lower()
        for role in cls:
            if role.value == norm:
                return role
        raise ValueError(f"bad role {text!r}: expected bookie, broker or empty (both)")

    def serves(self, wanted: Role) -> bool:
        """True if a node of this role may take work for ``wanted``."""
        return self is Role.BOTH or wanted is Role.BOTH or self is wanted


@dataclass(frozen=True, slots=True, kw_only=True)
class Capacity:
    """What a machine has. ``disk_free_bytes`` is a point-in-time view and may be unknown."""

    cores: int
    memory_bytes: int
    disk_total_bytes: int
    nic_bps: int
    disk_free_bytes: int | None = None

    def __post_init__(self) -> None:
        for name in ("cores", "memory_bytes", "disk_total_bytes", "nic_bps"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        free = self.disk_free_bytes
        if free is not None and not 0 <= free <= self.disk_total_bytes:
            raise ValueError(
                f"disk_free_bytes {free} must lie in 0..disk_total_bytes ({self.disk_total_bytes})"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    """One storage node or broker: who it is, where it sits, what it has and what it may do."""

    id: NodeId
    location: str
    capacity: Capacity
    state: NodeState = NodeState.WRITABLE
    role: Role = Role.BOTH

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", NodeId(self.id))
        object.__setattr__(self, "location", validate_location(self.location))

    @property
    def region(self) -> str:
        """The first component of the location (BookKeeper's region-aware rule)."""
        return location_components(self.location)[0]

    @property
    def rack(self) -> str:
        """The whole location path: rack-aware placement tells ``/dc1/r1`` from ``/dc2/r1``."""
        return self.location


@dataclass(frozen=True, slots=True)
class ClusterState:
    """An immutable snapshot of one cluster, nodes kept in id order for deterministic iteration."""

    name: str
    nodes: tuple[Node, ...]
    _index: Mapping[NodeId, Node] = field(repr=False, compare=False)

    @classmethod
    def of(cls, name: str, nodes: Iterable[Node]) -> ClusterState:
        ordered = tuple(sorted(nodes, key=lambda n: n.id))
        index: dict[NodeId, Node] = {}
        for node in ordered:
            if node.id in index:
                raise ValueError(f"cluster {name!r}: node {node.id} appears twice")
            index[node.id] = node
        return cls(name, ordered, MappingProxyType(index))

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._index

    def node(self, node_id: str) -> Node:
        try:
            return self._index[NodeId(node_id)]
        except KeyError:
            raise KeyError(f"cluster {self.name!r} has no node {node_id!r}") from None

    def for_role(self, role: Role) -> ClusterState:
        """The nodes that serve ``role`` (ledgers: ``BOOKIE``; bundles, partitions: ``BROKER``);
        nodes whose role is empty serve both."""
        if all(n.role.serves(role) for n in self.nodes):
            return self
        return ClusterState.of(self.name, (n for n in self.nodes if n.role.serves(role)))

    def in_state(self, *states: NodeState) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.state in states)

    @property
    def writable(self) -> frozenset[NodeId]:
        return frozenset(n.id for n in self.nodes if n.state is NodeState.WRITABLE)

    @property
    def readonly(self) -> frozenset[NodeId]:
        return frozenset(n.id for n in self.nodes if n.state is NodeState.READONLY)

    def with_state(self, node_id: str, state: NodeState) -> ClusterState:
        """A new snapshot in which one node has another state."""
        node = self.node(node_id)
        return ClusterState.of(
            self.name, (replace(n, state=state) if n is node else n for n in self.nodes)
        )

    def with_node(self, node: Node) -> ClusterState:
        """A new snapshot with ``node`` added, or replacing the node of the same id."""
        return ClusterState.of(self.name, (*(n for n in self.nodes if n.id != node.id), node))

    def without(self, node_id: str) -> ClusterState:
        return ClusterState.of(self.name, (n for n in self.nodes if n.id != NodeId(node_id)))
