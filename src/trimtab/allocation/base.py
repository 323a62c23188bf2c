"""What every allocator shares: the guards run before any work, and one request's life cycle.

A request is placed inside a transaction. The guards come first (Kafka's named guards,
Redpanda's ``check_cluster_limits``): a replication factor above the nodes that can take
replicas, or more replicas than free slots, fail before anything changes. Then the allocator
places replicas one at a time; if one cannot be placed, every change of this request is undone
and :class:`~trimtab.errors.CapacityExhaustedError` says what was needed and what was left.
A caller-supplied transaction keeps earlier requests of a batch; otherwise the request commits
on success.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Protocol

from trimtab.allocation.model import AllocationRequest, PartitionAssignment
from trimtab.allocation.state import AllocationState, Transaction, replicas_of
from trimtab.cluster import NodeId
from trimtab.errors import CapacityExhaustedError, InvalidReplicationFactorError

__all__ = [
    "Allocator",
    "NoPlacementError",
    "check_request",
    "excluded_indices",
    "is_internal_topic",
    "run_request",
]


def is_internal_topic(topic: str, listed: Collection[str]) -> bool:
    """Redpanda's ``allocation_node::is_internal_topic`` for Kafka topics: one of the listed
    ones (``kafka_nodelete_topics``); exempt from the partition limits. Upstream's internal
    namespaces (``redpanda/controller``, ``kafka_internal/tx``) hold no Kafka topics, which are
    all trimtab allocates."""
    return topic in listed


class Allocator(Protocol):
    """Places the partitions of a request; nothing of a failed request stays allocated."""

    @property
    def state(self) -> AllocationState: ...

    def allocate(
        self,
        request: AllocationRequest,
        tx: Transaction | None = None,
        *,
        excluded: Collection[NodeId] = (),
    ) -> tuple[PartitionAssignment, ...]: ...


class NoPlacementError(Exception):
    """Raised inside an allocator when a replica has no eligible node; ``reason`` says why."""

    def __init__(self, reason: str, placed: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.placed = placed


def excluded_indices(state: AllocationState, excluded: Collection[NodeId]) -> frozenset[int]:
    """Node indices of ``excluded`` ids; ids the cluster does not have are an error."""
    return frozenset(state.node_index(node) for node in excluded)


def check_request(
    state: AllocationState,
    request: AllocationRequest,
    excluded: frozenset[int],
    *,
    internal: bool = False,
) -> None:
    """The guards: enough active nodes for the replication factor, enough room on them.

    The replication factor is checked against the active nodes that are not excluded (full
    ones included: that is a capacity problem, reported as such). Room means free slots in
    total and at least ``replication_factor`` nodes with a free slot; an internal topic needs
    no free slot (upstream's ``is_full`` exempts it).
    """
    active = [i for i in range(len(state)) if state.active[i]]
    allowed = [i for i in active if i not in excluded]
    if request.replication_factor > len(allowed):
        raise InvalidReplicationFactorError(
            request.topic,
            replication_factor=request.replication_factor,
            nodes=len(allowed),
            excluded=len(active) - len(allowed),
        )
    if internal:
        return
    roomy = [i for i in allowed if state.counts[i] < state.capacity[i]]
    free = sum(state.capacity[i] - state.counts[i] for i in roomy)
    if request.replicas > free or request.replication_factor > len(roomy):
        raise CapacityExhaustedError(
            request.topic,
            needed=request.replicas,
            placed=0,
            free_slots=free,
            nodes_with_room=len(roomy),
            reason=(
                f"fewer than {request.replication_factor} nodes have a free slot"
                if request.replicas <= free
                else ""
            ),
        )


def run_request(
    state: AllocationState,
    request: AllocationRequest,
    tx: Transaction | None,
    excluded: Collection[NodeId],
    place: Callable[[Transaction, frozenset[int]], list[list[tuple[int, int]]]],
    *,
    internal: bool = False,
) -> tuple[PartitionAssignment, ...]:
    """Guard, place (``place`` returns (node, core) pairs per partition) and record a request.

    On :class:`NoPlacementError` the request's changes are undone and the typed error raised.
    """
    banned = excluded_indices(state, excluded)
    check_request(state, request, banned, internal=internal)
    own = tx is None
    active_tx = state.transaction() if tx is None else tx
    mark = active_tx.mark()
    try:
        placed = place(active_tx, banned)
        first = state.next_partition(request.topic)
        assignments = tuple(
            PartitionAssignment(
                request.topic, first + n, replicas_of(state, pairs), request.partition_size_bytes
            )
            for n, pairs in enumerate(placed)
        )
        for assignment in assignments:
            active_tx.register(assignment)
    except NoPlacementError as failure:
        active_tx.rollback_to(mark)
        if own:
            active_tx.rollback()
        allowed = [i for i in range(len(state)) if state.usable(i) and i not in banned]
        raise CapacityExhaustedError(
            request.topic,
            needed=request.replicas,
            placed=failure.placed,
            free_slots=sum(state.capacity[i] - state.counts[i] for i in allowed),
            nodes_with_room=len(allowed),
            reason=failure.reason,
        ) from None
    except BaseException:
        active_tx.rollback_to(mark)
        if own:
            active_tx.rollback()
        raise
    if own:
        active_tx.commit()
    return assignments
