"""Partition allocation: which nodes and cores get the replicas of new partitions.

Three allocators over one :class:`AllocationState` (per-node, per-core and per-topic counts
with transactional rollback):

* :class:`RfcAllocator` — Redpanda's 2019 RFC: round-robin machines, least-loaded core;
* :class:`ConstraintAllocator` — Redpanda today: hard constraints, ranked soft levels
  (rack, topic spread, capacity, disk), random ties, interleaved replica order;
* :class:`RendezvousAllocator` — weighted rendezvous hashing with the multi-pick correction.

:func:`plan_allocations` is the one call the CLI and the pipeline make per cluster; DRF and
the dominant-share node score are in :mod:`trimtab.allocation.drf`; the request table is read
by :mod:`trimtab.readers.allocation_requests`, outside the engine.
"""

from trimtab.allocation.allocator import ConstraintAllocator, FastPathMismatchError
from trimtab.allocation.model import (
    AllocationRequest,
    PartitionAssignment,
    Replica,
    balance,
    proportional_shares,
)
from trimtab.allocation.plan import (
    MODES,
    AllocationPlan,
    evens_out,
    make_allocator,
    plan_allocations,
)
from trimtab.allocation.rendezvous import RendezvousAllocator
from trimtab.allocation.rfc import RfcAllocator
from trimtab.allocation.state import AllocationState, Transaction

__all__ = [
    "MODES",
    "AllocationPlan",
    "AllocationRequest",
    "AllocationState",
    "ConstraintAllocator",
    "FastPathMismatchError",
    "PartitionAssignment",
    "RendezvousAllocator",
    "Replica",
    "RfcAllocator",
    "Transaction",
    "balance",
    "evens_out",
    "make_allocator",
    "plan_allocations",
    "proportional_shares",
]
