"""What the partition balancer knows of each broker: health, drains, and the disk view it plans on.

Health comes from the ``node_health`` table (:data:`trimtab.contract.TABLES`, read by
:mod:`trimtab.readers.node_health` outside the engine): ``node, state``
with state ``up``, ``down``, ``maintenance`` or ``draining``, and optionally ``down_since``
(when the node stopped answering) and ``cluster``. A node the table leaves out is up. Example::

    node,state,down_since
    3,down,2026-11-24T09:12:00Z
    4,maintenance,

A node is *unavailable* when it is down; it is *timed out* when it has been down longer than
``partition_autobalancing_node_availability_timeout_sec`` (a down node without ``down_since``
counts as timed out: the table says it is down and not since when). Read-only inventory
nodes and nodes in maintenance keep their replicas and take none; draining nodes (and
``--drain``) give all of theirs away.

Disk: the planner counts the bytes of the partitions it knows (their sizes, from
``kafka-log-dirs.sh``) in the allocation state, so the inventory's used bytes minus those is
the node's *base* usage (other files, partitions not reported), kept fixed while replicas move.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace

from trimtab.allocation.model import PartitionAssignment
from trimtab.cluster import ClusterState, Node, NodeHealth, NodeId, NodeState

__all__ = ["NodeStatus", "NodeView"]


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """One row of the health table; ``down_since`` in UTC epoch seconds."""

    node: NodeId
    health: NodeHealth
    down_since: float | None = None
    cluster: str | None = None


@dataclass(frozen=True, slots=True)
class NodeView:
    """The cluster as the planner sees it: who is down (and past the timeout), draining or in
    maintenance, and a cluster whose node states and free disk say so (see the module doc)."""

    cluster: ClusterState
    down: frozenset[NodeId]
    timed_out: frozenset[NodeId]
    draining: frozenset[NodeId]
    maintenance: frozenset[NodeId]

    @classmethod
    def of(
        cls,
        cluster: ClusterState,
        assignments: Iterable[PartitionAssignment],
        *,
        health: Iterable[NodeStatus] = (),
        drain: Collection[NodeId] = (),
        now: float | None = None,
        timeout_s: float = 900.0,
    ) -> NodeView:
        known = {n.id for n in cluster}
        by_node = {s.node: s for s in health}
        for node in (*by_node, *drain):
            if node not in known:
                raise ValueError(f"cluster {cluster.name!r} has no node {node!r}")
        down = {n.id for n in cluster if n.state is NodeState.DOWN}
        down |= {s.node for s in by_node.values() if s.health is NodeHealth.DOWN}
        timed_out = {
            node
            for node in down
            if (s := by_node.get(node)) is None
            or s.down_since is None
            or now is None
            or now - s.down_since > timeout_s
        }
        draining = set(drain) | {
            s.node for s in by_node.values() if s.health is NodeHealth.DRAINING
        }
        maintenance = {s.node for s in by_node.values() if s.health is NodeHealth.MAINTENANCE}
        held: defaultdict[NodeId, int] = defaultdict(int)
        for a in assignments:
            for node in a.nodes:
                held[node] += a.size_bytes
        nodes = [
            _planned_node(n, held[n.id], down=n.id in down, idle=n.id in draining | maintenance)
            for n in cluster
        ]
        return cls(
            ClusterState.of(cluster.name, nodes),
            frozenset(down),
            frozenset(timed_out),
            frozenset(draining),
            frozenset(maintenance),
        )

    @property
    def unusable(self) -> frozenset[NodeId]:
        """Nodes that take no replica: down, draining or in maintenance."""
        return self.down | self.draining | self.maintenance


def _planned_node(node: Node, held_bytes: int, *, down: bool, idle: bool) -> Node:
    """``node`` with the planner's state (down, or read-only when draining or in maintenance)
    and its base disk usage as used bytes (see the module doc)."""
    state = NodeState.DOWN if down else NodeState.READONLY if idle else node.state
    cap = node.capacity
    total = cap.disk_total_bytes
    used = held_bytes if cap.disk_free_bytes is None else total - cap.disk_free_bytes
    base = min(total, max(0, used - held_bytes))
    return replace(node, state=state, capacity=replace(cap, disk_free_bytes=total - base))
