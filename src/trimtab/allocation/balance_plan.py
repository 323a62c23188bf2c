"""What a partition-balancer plan is made of: the reasons a replica moves, a reassignment
under way, a planned move, a cancellation, what a step could not fix, and the plan itself.

The vocabulary of :func:`trimtab.allocation.planner.plan_rebalance` (its inputs and its
result), kept apart from the planner so that the working state
(:mod:`trimtab.allocation.mover`) and the steps share it without importing each other.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from trimtab.allocation.model import PartitionAssignment
from trimtab.cluster import NodeId

__all__ = [
    "COUNTS",
    "DECOMMISSION",
    "DISK_FULL",
    "RACK",
    "REASONS",
    "UNAVAILABLE",
    "Cancellation",
    "InFlight",
    "Key",
    "PlannedMove",
    "RebalancePlan",
    "Unfixable",
]

DECOMMISSION, UNAVAILABLE, DISK_FULL, RACK, COUNTS = REASONS = (
    "node_decommissioning",
    "node_unavailable",
    "disk_full",
    "rack_constraint_repair",
    "partition_count_rebalancing",
)

Key = tuple[str, int]


@dataclass(frozen=True, slots=True)
class InFlight:
    """A reassignment under way from ``previous`` to ``target``; the assignment given to the
    planner may show either. ``reason`` is the planner's reason for it, when known."""

    topic: str
    partition: int
    previous: tuple[NodeId, ...]
    target: tuple[NodeId, ...]
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class PlannedMove:
    """One replica copied from ``source`` to ``target`` (``size_bytes`` of data)."""

    topic: str
    partition: int
    source: NodeId
    target: NodeId
    reason: str
    size_bytes: int


@dataclass(frozen=True, slots=True)
class Unfixable:
    """What a step could not do, and why; names the partition, the node, or both."""

    reason: str
    why: str
    topic: str | None = None
    partition: int | None = None
    node: NodeId | None = None


@dataclass(frozen=True, slots=True)
class Cancellation:
    topic: str
    partition: int
    why: str


@dataclass(frozen=True, slots=True)
class RebalancePlan:
    """The moves, the changed partitions before (the rollback) and after (the reassignment)."""

    cluster: str
    mode: str
    moves: tuple[PlannedMove, ...]
    before: tuple[PartitionAssignment, ...]
    after: tuple[PartitionAssignment, ...]
    cancelled: tuple[Cancellation, ...]
    unfixable: tuple[Unfixable, ...]
    unavailable: tuple[NodeId, ...]
    full: dict[NodeId, float]
    balance_before: float
    balance_after: float
    per_node: dict[NodeId, int]

    @property
    def counts_by_reason(self) -> dict[str, int]:
        made = Counter(m.reason for m in self.moves)
        return {reason: made[reason] for reason in REASONS}

    @property
    def bytes_moved(self) -> int:
        return sum(m.size_bytes for m in self.moves)
