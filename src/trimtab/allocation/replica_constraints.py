"""The allocation rules as constraint objects: the readable spec the fast path is tested against.

Built on :mod:`trimtab.constraints` (hard filters, ranked soft levels averaged within a level,
random choice among the last ties). The context of one decision is a :class:`ReplicaContext`:
the state, the topic, the replicas of the partition chosen so far and the excluded nodes.

Scores are integers in ``0..MAX_SCORE`` computed by the small functions below, which the
incremental allocator (:mod:`trimtab.allocation._fast`) calls too, so both give equal scores.

The default rules (Redpanda's topic creation and partition balancer, 2024)::

    hard   distinct nodes · not excluded · active · free partition slot · disk not overflowed
    level  distinct racks preferred              (only when rack awareness is on)
    level  topic within one of its capacity share (only when topic awareness is on)
    level  most free capacity after the replica  (max_final_capacity)
    level  least filled disk                      (least_disk_filled)

Deviation (measured in ``bench/allocation.py``): the topic level keeps each node's count of a
topic within one of its capacity-proportional share ``q = T·cap/Σcap`` (T the topic's replicas
once the request is placed, Σcap over active nodes): full score while the node is below
``⌊q⌋`` less its fill towards it (``F·(tc+1)/(⌊q⌋+1)``, so the topic goes round the nodes in
turn), ``S − F`` while it takes its rounding remainder up to ``⌈q⌉``, and ``S·overshoot/cap``
less beyond. The fill order is what keeps replica sets varied: without it, a topic created
after nodes join tied on this level everywhere and the capacity level sent each partition whole
to the empty nodes (150 of 150 partitions on one replica set in upstream's
``test_replica_pair_frequency``; with it every node pair is within mean ± 3·√mean).
Redpanda's ``min_count_in_map`` scores ``S − (tc+1)·S/cap`` instead, which ranks
the largest nodes first whenever a topic is new, so that every small topic lands on them: on
1,000 mixed nodes with 821 topics its balance figure is 1.007 (a node 25 % off its share)
against 1.000000 (0.09 %) for the band, which also keeps every topic within Redpanda's ±3 %.

A node with ``disk_total_bytes`` 0 has no disk information: it passes the disk check and
scores 0 on the disk level. An unknown ``disk_free_bytes`` counts as an empty disk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from trimtab.allocation.state import AllocationState
from trimtab.cluster import NodeId
from trimtab.config.redpanda import AllocationConfig
from trimtab.constraints import (
    MAX_SCORE,
    Constraints,
    Hard,
    Soft,
    distinct_nodes,
    distinct_racks_preferred,
    not_excluded,
)

__all__ = [
    "ReplicaContext",
    "capacity_score",
    "default_constraints",
    "disk_fits",
    "disk_not_overflowed",
    "disk_ratios",
    "disk_score",
    "is_active",
    "least_disk_filled",
    "max_final_capacity",
    "not_fully_allocated",
    "topic_band",
    "topic_score",
    "topic_spread_preferred",
]


@dataclass(slots=True)
class ReplicaContext:
    """One replica decision: where the partition's other replicas already are, and what to avoid."""

    state: AllocationState
    topic: str
    size_bytes: int
    chosen: list[NodeId]
    excluded: frozenset[NodeId] = frozenset()
    topic_replicas: int = 0  # the topic's replicas once the request is placed (T)
    internal: bool = False  # an internal topic: exempt from the partition slots

    def rack_of(self, node: NodeId) -> str | None:
        return self.state.racks[self.state.index[node]]


# -- scores, shared with the fast path -------------------------------------------------------

#: The topic level's room for the fill order below a node's share (``S − F`` is the band).
TOPIC_FILL = 1 << 16


def topic_score(topic_count: int, capacity: int, topic_replicas: int, total_capacity: int) -> int:
    """Keep a node's count of a topic within one of its share ``q = T·cap/Σcap``, filling the
    nodes in turn.

    Below ``⌊q⌋``: ``S − F·(tc+1)/(⌊q⌋+1)`` (the node least filled towards its share first, so
    a topic's replicas go round the nodes and interleaved partitions get varied replica sets);
    up to ``⌈q⌉``: ``S − F``; beyond: ``S·overshoot/cap`` less. ``F`` = :data:`TOPIC_FILL`.
    Every node scores ``S − F`` for a topic it holds none of and whose share is below one.

    >>> [MAX_SCORE - topic_score(tc, 4000, 30, 40000) for tc in (0, 1, 2, 3)]  # q = 3
    [16384, 32768, 49152, 68036]
    """
    if capacity <= 0 or total_capacity <= 0:
        return 0
    share = topic_replicas * capacity
    low = share // total_capacity
    high = -(-share // total_capacity)
    final = topic_count + 1
    if final <= low:
        return MAX_SCORE - final * TOPIC_FILL // (low + 1)
    if final <= high:
        return MAX_SCORE - TOPIC_FILL
    return max(0, MAX_SCORE - TOPIC_FILL - (final - high) * MAX_SCORE // capacity)


def topic_band(topic_count: int, capacity: int, topic_replicas: int, total_capacity: int) -> int:
    """The topic level without the fill order: 2 below ``⌊q⌋``, 1 up to ``⌈q⌉``, less beyond
    (what a rebalancing move must not make worse)."""
    score = topic_score(topic_count, capacity, topic_replicas, total_capacity)
    band = MAX_SCORE - TOPIC_FILL
    return 2 if score > band else 1 if score == band else score - MAX_SCORE  # beyond: < 0


def capacity_score(count: int, capacity: int) -> int:
    """Redpanda's ``max_final_capacity``: ``S·(cap − final)/cap``, final = count + 1.

    >>> capacity_score(0, 4000), capacity_score(1999, 4000), capacity_score(3999, 4000)
    (9997500, 5000000, 0)
    """
    if capacity <= 0:
        return 0
    final = min(capacity, count + 1)
    return MAX_SCORE * (capacity - final) // capacity


def disk_score(used_bytes: int, total_bytes: int, ratio: float) -> int:
    """Redpanda's ``least_disk_filled``: ``S·(r_max − r)/r_max``, 0 above ``r_max``."""
    if total_bytes <= 0 or ratio <= 0:
        return 0
    filled = used_bytes / total_bytes
    if filled > ratio:
        return 0
    return int(MAX_SCORE * ((ratio - filled) / ratio))


def disk_fits(used_bytes: int, total_bytes: int, ratio: float) -> bool:
    """Redpanda's ``disk_not_overflowed_by_partition``: ``used + assigned + size < r·total``."""
    return total_bytes <= 0 or used_bytes < ratio * total_bytes


def disk_ratios(config: AllocationConfig) -> tuple[float, float]:
    """(soft, hard) disk fill limits: 80 % and 100 − 5 = 95 % by default."""
    return (
        config.max_disk_usage_percent / 100,
        (100 - config.storage_space_alert_free_threshold_percent) / 100,
    )


# -- the rules --------------------------------------------------------------------------------


def _per_node(
    ctx: ReplicaContext, value: Callable[[AllocationState, int], int]
) -> Callable[[NodeId], int]:
    state = ctx.state
    index = state.index
    return lambda node: value(state, index[node])


def is_active() -> Hard[ReplicaContext]:
    """Read-only and down nodes keep their replicas but take no new ones."""
    return Hard(
        "node must be active (writable)",
        lambda ctx: lambda node: ctx.state.active[ctx.state.index[node]],
    )


def not_fully_allocated() -> Hard[ReplicaContext]:
    """A node holds at most ``cores × per_core − reserve`` replicas, those of internal topics
    aside (Redpanda's ``allocation_node::is_full``)."""

    def prepare(ctx: ReplicaContext) -> Callable[[NodeId], bool]:
        state, internal = ctx.state, ctx.internal

        def has_room(node: NodeId) -> bool:
            i = state.index[node]
            return internal or state.counts[i] < state.capacity[i]

        return has_room

    return Hard("node must have a free partition slot", prepare)


def disk_not_overflowed(ratio: float) -> Hard[ReplicaContext]:
    """The replica must not take the disk to ``ratio`` of its size or beyond."""

    def prepare(ctx: ReplicaContext) -> Callable[[NodeId], bool]:
        state, size = ctx.state, ctx.size_bytes

        def fits(node: NodeId) -> bool:
            i = state.index[node]
            used = state.disk_used[i] + state.assigned_bytes[i] + size
            return disk_fits(used, state.disk_total[i], ratio)

        return fits

    return Hard(f"replica must not fill the disk to {ratio:.0%}", prepare)


def topic_spread_preferred() -> Soft[ReplicaContext]:
    """Each node holds its capacity-proportional share of a topic, within one (per-topic
    spread); the remainders go where the lower levels say."""

    def prepare(ctx: ReplicaContext) -> Callable[[NodeId], int]:
        counts = ctx.state.topic_counts.get(ctx.topic, {})
        total, whole = ctx.topic_replicas, ctx.state.active_capacity
        return _per_node(
            ctx, lambda s, i: topic_score(counts.get(i, 0), s.capacity[i], total, whole)
        )

    return Soft("a topic's replicas should stay within one of each node's share", prepare)


def max_final_capacity() -> Soft[ReplicaContext]:
    """Replica counts in proportion to capacity (most free capacity after the replica wins)."""
    return Soft(
        "node should keep the most free capacity after the replica",
        lambda ctx: _per_node(ctx, lambda s, i: capacity_score(s.counts[i], s.capacity[i])),
    )


def least_disk_filled(ratio: float) -> Soft[ReplicaContext]:
    """The emptiest disk, relative to the soft limit ``ratio``."""

    def prepare(ctx: ReplicaContext) -> Callable[[NodeId], int]:
        size = ctx.size_bytes
        return _per_node(
            ctx,
            lambda s, i: disk_score(
                s.disk_used[i] + s.assigned_bytes[i] + size, s.disk_total[i], ratio
            ),
        )

    return Soft("node should have the least filled disk", prepare)


def default_constraints(
    *,
    rack_aware: bool,
    topic_aware: bool = True,
    soft_disk_ratio: float = 0.8,
    hard_disk_ratio: float = 0.95,
) -> Constraints[ReplicaContext]:
    """The rules of the constraint allocator, in rank order (see the module docstring)."""
    rules: Constraints[ReplicaContext] = Constraints(
        hard=(
            distinct_nodes(),
            not_excluded(),
            is_active(),
            not_fully_allocated(),
            disk_not_overflowed(hard_disk_ratio),
        )
    )
    if rack_aware:
        rules = rules.add_level(distinct_racks_preferred())
    if topic_aware:
        rules = rules.add_level(topic_spread_preferred())
    return rules.add_level(max_final_capacity()).add_level(least_disk_filled(soft_disk_ratio))
