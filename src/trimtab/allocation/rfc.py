"""The 2019 RFC allocator: a round-robin pointer over machines, the least-loaded core on each.

Goals
    Even load over every core of the cluster; the replicas of a partition on distinct
    machines; no partial assignment left behind.

Constraints
    Hard: distinct machines. A node with no free slot (``cores × per_core − reserve``) is not in
    the ring; inactive (read-only, down) and excluded nodes never get a replica. Racks, disks
    and capacity differences are ignored, as in the RFC.

Algorithm (``docs/rfcs/20191020_partition_allocator.md``)
    The nodes with room form a ring in id order with one pointer. For every partition, for
    every replica: starting at the pointer, take the first node not already holding a replica
    of this partition, put the replica on that node's least-loaded core, and move the pointer
    past it. A node that fills up leaves the ring; freeing a replica brings it back. If the
    ring has no node left for a replica, the whole request is rolled back (pointer included)
    and :class:`~trimtab.errors.CapacityExhaustedError` says why.

Worked example: 4 nodes A B C D, replication factor 3, pointer at A::

    partition 0: A B C   (pointer → D)
    partition 1: D A B   (pointer → C)
    partition 2: C D A   (pointer → B)

With a node count that is a multiple of the replication factor (6 nodes, RF 3) the pointer
comes back to the same place every 2 partitions, so only two replica sets are ever used, and
every node gets the same count whatever its core count: two reasons Redpanda moved to the
constraint allocator (:mod:`trimtab.allocation.allocator`).
"""

from __future__ import annotations

import bisect
from collections.abc import Collection

from trimtab.allocation.base import NoPlacementError, run_request
from trimtab.allocation.model import AllocationRequest, PartitionAssignment
from trimtab.allocation.state import AllocationState, Transaction
from trimtab.cluster import NodeId
from trimtab.errors import AllocationError

__all__ = ["RfcAllocator"]


class RfcAllocator:
    """Round-robin over nodes with room, least-loaded core by weight, rollback on failure."""

    def __init__(self, state: AllocationState) -> None:
        self._state = state
        self._ring: list[int] = [i for i in range(len(state)) if state.usable(i)]
        self._in_ring = [state.usable(i) for i in range(len(state))]
        self._ptr = 0
        self._unwatch = state.watch(self._on_change)

    @property
    def state(self) -> AllocationState:
        return self._state

    @property
    def ring(self) -> tuple[NodeId, ...]:
        """The nodes with room, starting at the pointer (the next node to get a replica)."""
        ring = self._ring
        start = self._ptr % len(ring) if ring else 0
        return tuple(self._state.ids[i] for i in ring[start:] + ring[:start])

    def close(self) -> None:
        """Stop following the state's changes."""
        self._unwatch()

    def allocate(
        self,
        request: AllocationRequest,
        tx: Transaction | None = None,
        *,
        excluded: Collection[NodeId] = (),
    ) -> tuple[PartitionAssignment, ...]:
        """Place ``request`` partition by partition, replica by replica, from the pointer on."""
        ring = self._ring
        start = ring[self._ptr % len(ring)] if ring else None

        def place(active: Transaction, banned: frozenset[int]) -> list[list[tuple[int, int]]]:
            return [self._partition(active, request, banned, n) for n in range(request.partitions)]

        try:
            return run_request(self._state, request, tx, excluded, place)
        except AllocationError:
            if start is not None:  # the ring is whole again: point where the request started
                self._ptr = bisect.bisect_left(self._ring, start)
            raise

    def _partition(
        self, tx: Transaction, request: AllocationRequest, banned: frozenset[int], done: int
    ) -> list[tuple[int, int]]:
        placed: list[tuple[int, int]] = []
        chosen: list[int] = []
        for _ in range(request.replication_factor):
            ring = self._ring
            size = len(ring)
            for step in range(size):
                pos = (self._ptr + step) % size
                node = ring[pos]
                if node not in chosen and node not in banned:
                    break
            else:
                raise NoPlacementError(
                    f"{size} node(s) with room left, fewer than {request.replication_factor} "
                    "distinct ones for a partition",
                    placed=done * request.replication_factor + len(chosen),
                )
            self._ptr = (pos + 1) % size  # set first: a node that fills up leaves the ring
            core = tx.place(node, request.topic, request.partition_size_bytes)
            chosen.append(node)
            placed.append((node, core))
        return placed

    def _on_change(self, i: int) -> None:
        """Keep the ring equal to the usable nodes, the pointer on the same next node."""
        should = self._state.usable(i)
        if should == self._in_ring[i]:
            return
        self._in_ring[i] = should
        ring = self._ring
        pos = bisect.bisect_left(ring, i)
        if should:
            ring.insert(pos, i)
            if pos < self._ptr:
                self._ptr += 1
        else:
            del ring[pos]
            if pos < self._ptr:
                self._ptr -= 1
        if ring:
            self._ptr %= len(ring)
        else:
            self._ptr = 0
