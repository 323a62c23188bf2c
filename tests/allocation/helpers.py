"""Small clusters and an independent recount for the allocation tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from trimtab.allocation import AllocationState, PartitionAssignment
from trimtab.cluster import Capacity, ClusterState, Node, NodeId, NodeState

__all__ = ["make_cluster", "recount", "snapshot"]


def make_cluster(
    cores: Sequence[int],
    *,
    racks: Sequence[str] | None = None,
    states: Sequence[NodeState] | None = None,
    disk_total: int = 10**12,
    disk_free: Sequence[int | None] | None = None,
    name: str = "c",
) -> ClusterState:
    """Nodes ``n00``, ``n01``… with the given core counts (and racks, states, free disk)."""
    nodes = [
        Node(
            id=NodeId(f"n{i:02d}"),
            location=f"/dc/{racks[i] if racks else 'r0'}",
            capacity=Capacity(
                cores=c,
                memory_bytes=2**34,
                disk_total_bytes=disk_total,
                disk_free_bytes=disk_free[i] if disk_free else None,
                nic_bps=10**10,
            ),
            state=states[i] if states else NodeState.WRITABLE,
        )
        for i, c in enumerate(cores)
    ]
    return ClusterState.of(name, nodes)


def recount(
    state: AllocationState, assignments: Iterable[PartitionAssignment]
) -> tuple[dict[NodeId, int], dict[NodeId, tuple[int, ...]]]:
    """Per-node and per-core replica counts computed from the assignments alone."""
    nodes: Counter[NodeId] = Counter()
    cores: Counter[tuple[NodeId, int]] = Counter()
    for a in assignments:
        for r in a.replicas:
            nodes[r.node] += 1
            cores[(r.node, r.core)] += 1
    per_node = {n: nodes[n] for n in state.ids}
    per_core = {
        n: tuple(cores[(n, c)] for c in range(state.cores[state.index[n]])) for n in state.ids
    }
    return per_node, per_core


def snapshot(state: AllocationState) -> tuple[object, ...]:
    """Everything an allocation changes, to compare before and after a rollback."""
    return (
        list(state.counts),
        [list(w) for w in state.weights],
        {t: dict(c) for t, c in state.topic_counts.items()},
        list(state.assigned_bytes),
        state.assignments(),
    )
