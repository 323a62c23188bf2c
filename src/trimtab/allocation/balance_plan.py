"""What a partition-balancer plan is made of: the reasons a replica moves, a reassignment
under way, a planned move, a cancellation, what a step could not fix, and the plan itself.

The vocabulary of :func:`trimtab.allocation.planner.plan_rebalance` (its inputs and its
result), kept apart from the planner so that the working state
(:mod:`trimtab.allocation.mover`) and the steps share it without importing each other.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from trimtab.allocation.log_dirs import DirMove
from trimtab.allocation.model import PartitionAssignment
from trimtab.cluster import NodeId

__all__ = [
    "CORDON",
    "COUNTS",
    "DECOMMISSION",
    "DISK_FULL",
    "RACK",
    "REASONS",
    "UNAVAILABLE",
    "Balancing",
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
#: A replica leaving its broker because its log dir is being emptied (``--cordon``, KIP-1066)
#: and no other open log dir of the broker takes it; required, listed only when it occurs.
CORDON = "log_dir_cordoned"

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
    """One replica copied from ``source`` to ``target`` (``size_bytes`` of data).

    ``required`` moves serve a hard goal (a drain, a node down, a full disk, a rack repair);
    the others balance counts, which the operator may leave out (:class:`Balancing`)."""

    topic: str
    partition: int
    source: NodeId
    target: NodeId
    reason: str
    size_bytes: int
    required: bool = True


@dataclass(frozen=True, slots=True)
class Balancing:
    """What count balancing adds to a plan's required moves, whether it joined them or not.

    ``included`` says whether :attr:`moves` are in the plan (see
    :func:`~trimtab.allocation.planner.plan_rebalance`'s ``balance``); ``balance_before`` is
    the balance once the required moves are made, ``balance_after`` once these are too.
    ``lower_bound_moves`` is the least count balancing needs on top of the required moves
    made (the bound with balancing, :mod:`trimtab.allocation.lower_bound`, less those
    moves). With topic-aware balancing, ``topic_spread_*`` count the replicas above their
    node's band ``⌈q⌉`` of their topic before and after: what the moves beyond the bound
    buy. ``retargeted`` counts the required moves whose target balancing changed instead
    (a replica moved a → b by a required step and on to c is one move a → c, so it adds
    no move and no bytes; not in :attr:`moves`)."""

    included: bool
    moves: tuple[PlannedMove, ...]
    balance_before: float
    balance_after: float
    lower_bound_moves: int
    topic_aware: bool
    topic_spread_before: int
    topic_spread_after: int
    diversity_lowered: int = 0
    retargeted: int = 0

    @property
    def bytes_moved(self) -> int:
        return sum(m.size_bytes for m in self.moves)

    @property
    def beyond_counts(self) -> int:
        """Moves beyond the least count balancing: the price of topic balance (when on)."""
        return max(0, len(self.moves) - self.lower_bound_moves)

    def figures(self) -> dict[str, object]:
        """What balancing adds or would add, as ``rebalance --json`` and the plan document
        carry it (the moves themselves are the caller's: they need broker ids)."""
        return {
            "included": self.included,
            "moves": len(self.moves),
            "bytes": self.bytes_moved,
            "balance_before": self.balance_before,
            "balance_after": self.balance_after,
            "lower_bound_moves": self.lower_bound_moves,
            "topic_aware": self.topic_aware,
            "beyond_count_balance": self.beyond_counts if self.topic_aware else 0,
            "topic_spread_before": self.topic_spread_before,
            "topic_spread_after": self.topic_spread_after,
            "rack_diversity_lowered": self.diversity_lowered,
            "retargeted": self.retargeted,
        }


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
    """The moves, the changed partitions before (the rollback) and after (the reassignment).

    ``lower_bound_moves`` / ``lower_bound_bytes`` bound every plan that reaches the same goals
    (the required ones, and count balancing when its moves are included; terms by reason in
    ``lower_bound_terms``); ``balancing`` is what count balancing adds or would add;
    ``diversity_lowered`` counts the partitions whose replicas span fewer racks after the
    plan than before, rack awareness on or off. Balances are against the reachable shares
    (:mod:`trimtab.allocation.shares`). ``dir_moves`` are moves between log dirs of one
    broker (no network bytes, apart from ``moves``; ``dir_partitions`` their partitions as
    they are; ``lower_bound_all_moves`` bounds both kinds together, since a replica of an
    emptied dir may move inside its broker or off it); ``closed`` the nodes that take no new
    replica, and why (all their log dirs cordoned, KIP-1066)."""

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
    lower_bound_moves: int = 0
    lower_bound_bytes: int = 0
    lower_bound_terms: dict[str, int] = field(default_factory=dict)
    balancing: Balancing | None = None
    diversity_lowered: int = 0
    dir_moves: tuple[DirMove, ...] = ()
    closed: dict[NodeId, str] = field(default_factory=dict)
    dir_partitions: tuple[PartitionAssignment, ...] = ()  # the current of dir_moves' partitions
    lower_bound_all_moves: int = 0  # moves between brokers and inside them (dir_moves)

    @property
    def required_moves(self) -> tuple[PlannedMove, ...]:
        return tuple(m for m in self.moves if m.required)

    @property
    def counts_by_reason(self) -> dict[str, int]:
        made = Counter(m.reason for m in self.moves)
        extra = {CORDON: made[CORDON]} if made[CORDON] else {}
        return {reason: made[reason] for reason in REASONS} | extra

    @property
    def bytes_moved(self) -> int:
        return sum(m.size_bytes for m in self.moves)
