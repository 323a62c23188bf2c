"""The partition balancer's working state: one move at a time, through the allocation state.

Goals
    Give each step of :func:`trimtab.allocation.planner.plan_rebalance` the same few
    operations: may this partition change (not frozen, with quorum, within the budget), the
    best node for a replica leaving a node, move it, and the plan once the steps are done.

Algorithm
    The node columns are NumPy arrays kept in step with the allocation state (a watch on it),
    so a target is chosen over all nodes at once: the hard rules (active, a free partition
    slot, the disk limit, not holding the partition) as masks, then the soft levels (racks,
    topic share, capacity, disk; :mod:`trimtab.allocation._vector`) narrowing the ties, and
    the seeded RNG last. Every move goes through the state's transaction and keeps the
    replica's position in the list (the preferred leader's slot). Each moved replica's
    origin and first reason are recorded, so the plan lists a move by its net effect: a
    replica moved twice (a → b → c) is one move a → c under the first reason; a replica moved
    back is no move.
"""

from __future__ import annotations

import random
from collections.abc import Collection

import numpy as np

from trimtab.allocation._vector import (
    capacity_scores,
    disk_fit,
    disk_scores,
    rack_scores,
    topic_scores,
)
from trimtab.allocation.balance_plan import (
    COUNTS,
    Balancing,
    Cancellation,
    Key,
    PlannedMove,
    RebalancePlan,
    Unfixable,
)
from trimtab.allocation.base import is_internal_topic
from trimtab.allocation.health import NodeView
from trimtab.allocation.lower_bound import LowerBounds
from trimtab.allocation.model import PartitionAssignment, Replica
from trimtab.allocation.shares import target_balance
from trimtab.allocation.state import AllocationState, Transaction
from trimtab.cluster import NodeId

__all__ = ["Mover", "diversity_lowered", "net_moves"]


class Mover:
    """The working state of one plan: node columns as arrays, the partitions' replica matrix,
    the budget, and each moved replica's origin and reason; the steps
    (:mod:`trimtab.allocation.planner`) move replicas through it."""

    def __init__(
        self,
        state: AllocationState,
        view: NodeView,
        *,
        rack_aware: bool,
        topic_aware: bool,
        budget: int,
        soft: float,
        rng: random.Random,
        internal_topics: Collection[str] = (),
    ) -> None:
        self.state, self.view = state, view
        self.internal_topics = frozenset(internal_topics)
        self.rack_aware, self.topic_aware = rack_aware, topic_aware
        self.budget, self.soft, self.rng = budget, soft, rng
        self.tx: Transaction | None = None
        # (topic, partition, node index) of replicas in emptied log dirs that would otherwise
        # move inside their node: sending one away instead saves that move
        self.dir_leaving: frozenset[tuple[str, int, int]] = frozenset()
        # per partition, the nodes it must leave and not come back to (an emptied log dir's
        # replicas that its node's other dirs do not take)
        self.barred: dict[Key, set[int]] = {}
        # nodes over the soft disk limit when the plan began: balancing leaves them out
        self.full: dict[NodeId, float] = {}
        index = state.index
        self.cap = np.array(state.capacity, dtype=np.int64)
        self.total = np.array(state.disk_total, dtype=np.int64)
        self.base = np.array(state.disk_used, dtype=np.int64)
        self.counts = np.array(state.counts, dtype=np.int64)
        self.assigned = np.array(state.assigned_bytes, dtype=np.int64)
        self.active = np.array(state.active, dtype=bool)
        self.rack_ids = np.array(state.rack_ids, dtype=np.int64)
        self.racks = len(set(state.racks))
        self.down = np.zeros(len(state), dtype=bool)
        self.down[[index[n] for n in view.down]] = True
        self._unwatch = state.watch(self._sync)
        everything = state.assignments()
        self.keys: list[Key] = [(a.topic, a.partition) for a in everything]
        self.row = {key: k for k, key in enumerate(self.keys)}
        width = max((len(a.replicas) for a in everything), default=1)
        self.matrix = np.full((len(everything), width), -1, dtype=np.int64)
        for k, a in enumerate(everything):
            self.matrix[k, : len(a.replicas)] = [index[r.node] for r in a.replicas]
        self.frozen: set[Key] = set()
        self.original: dict[Key, PartitionAssignment] = {}
        self.origin: dict[Key, dict[NodeId, tuple[NodeId, str]]] = {}
        self.unfixable: list[Unfixable] = []
        self.cancelled: list[Cancellation] = []

    def close(self) -> None:
        self._unwatch()

    def _sync(self, i: int) -> None:
        self.counts[i] = self.state.counts[i]
        self.assigned[i] = self.state.assigned_bytes[i]

    # -- what may change -----------------------------------------------------------------------

    def quorum(self, a: PartitionAssignment) -> bool:
        """Most replicas on answering nodes (upstream's ``has_quorum``)."""
        up = sum(not self.down[self.state.index[n]] for n in a.nodes)
        return 2 * up >= len(a.replicas)

    def may_change(self, key: Key, reason: str, a: PartitionAssignment) -> bool:
        """Not frozen, with quorum, within the budget; an unfixable entry says why not."""
        if key in self.frozen:
            return False
        if not self.quorum(a):
            self.cannot(reason, "no quorum: most of its replicas are on nodes that are down", a)
            return False
        if key not in self.original and len(self.original) >= self.budget:
            self.cannot(
                reason,
                f"left for a later plan: {self.budget} partitions reassigned "
                "(partition_autobalancing_concurrent_moves)",
                a,
            )
            return False
        return True

    def cannot(
        self, reason: str, why: str, a: PartitionAssignment | None = None, **at: str
    ) -> None:
        where = {} if a is None else {"topic": a.topic, "partition": a.partition}
        self.unfixable.append(Unfixable(reason, why, **where, **at))  # type: ignore[arg-type]

    # -- one move --------------------------------------------------------------------------------

    def used(self) -> np.ndarray:
        return self.base + self.assigned

    def pick(self, a: PartitionAssignment, leaving: int, ratio: float) -> int | str:
        """The best node for ``a``'s replica on ``leaving``, or why there is none."""
        state = self.state
        others = [state.index[n] for n in a.nodes if state.index[n] != leaving]
        room = self.counts < self.cap
        if is_internal_topic(a.topic, self.internal_topics):  # exempt from the partition slots
            room = np.ones_like(room)
        fits = disk_fit(self.used() + a.size_bytes, self.total, ratio)
        ok = self.active & room & fits
        ok[others] = False
        ok[leaving] = False
        ok[list(self.barred.get((a.topic, a.partition), ()))] = False
        if ratio > self.soft:  # a drain: nodes kept under the soft limit first (see above)
            under = ok & disk_fit(self.used() + a.size_bytes, self.total, self.soft)
            if under.any():
                ok = under
        nodes = np.flatnonzero(ok)
        if not nodes.size:
            return (
                f"no node may take it: {int((~self.active).sum())} down, draining, in maintenance "
                f"or read-only, {int((self.active & ~room).sum())} without a free slot, "
                f"{int((self.active & room & ~fits).sum())} over the {ratio:.0%} disk limit, "
                f"{len(others)} holding a replica"
            )
        for level in self._levels(a, others):
            if nodes.size == 1:
                break
            scores = level(nodes)
            nodes = nodes[scores == scores.max()]
        return int(nodes[0] if nodes.size == 1 else nodes[int(self.rng.random() * nodes.size)])

    def _levels(self, a: PartitionAssignment, others: list[int]) -> list:  # type: ignore[type-arg]
        state, levels = self.state, []
        if self.rack_aware:
            racks = self.rack_ids[others]
            levels.append(lambda c: rack_scores(self.rack_ids[c], racks, self.racks))
        if self.topic_aware:
            per_node = np.zeros(len(state), dtype=np.int64)
            held = state.topic_counts.get(a.topic, {})
            per_node[list(held)] = list(held.values())
            total, whole = sum(held.values()), state.active_capacity
            levels.append(lambda c: topic_scores(per_node[c], self.cap[c], total, whole))
        levels.append(lambda c: capacity_scores(self.counts[c], self.cap[c]))
        soft = self.soft
        levels.append(lambda c: disk_scores(self.used()[c] + a.size_bytes, self.total[c], soft))
        return levels

    def apply(
        self, a: PartitionAssignment, leaving: int, target: int, reason: str
    ) -> PartitionAssignment:
        """Move ``a``'s replica from ``leaving`` to ``target``; the new assignment."""
        assert self.tx is not None
        state, key = self.state, (a.topic, a.partition)
        gone, come = state.ids[leaving], state.ids[target]
        self.tx.remove(a)
        core = state.least_loaded_core(target)
        replicas = tuple(Replica(come, core) if r.node == gone else r for r in a.replicas)
        new = PartitionAssignment(a.topic, a.partition, replicas, a.size_bytes)
        self.tx.add(new)
        self.original.setdefault(key, a)
        self.record(key, gone, come, reason)
        return new

    def record(self, key: Key, gone: NodeId, come: NodeId, reason: str) -> None:
        chain = self.origin.setdefault(key, {})
        first = chain.pop(gone, (gone, reason))
        if first[0] != come:
            chain[come] = first

    def pinned(self) -> frozenset[int]:
        """The full disks' indices: balancing and its figures leave them out."""
        return frozenset(self.state.index[n] for n in self.full)

    def move(
        self, a: PartitionAssignment, leaving: int, reason: str, ratio: float
    ) -> PartitionAssignment | None:
        target = self.pick(a, leaving, ratio)
        if isinstance(target, str):
            self.cannot(reason, target, a, node=self.state.ids[leaving])
            return None
        return self.apply(a, leaving, target, reason)

    # -- what the steps read ---------------------------------------------------------------------

    def holding(self, nodes: Collection[int]) -> list[Key]:
        """Partitions that had a replica on one of ``nodes`` when the plan began."""
        if not nodes:
            return []
        rows = np.flatnonzero(np.isin(self.matrix, list(nodes)).any(axis=1))
        return [self.keys[k] for k in rows]

    # -- the result ------------------------------------------------------------------------------

    def result(
        self,
        cluster: str,
        mode: str,
        balance_before: float,
        unavailable: list[NodeId],
        full: dict[NodeId, float],
        bound: LowerBounds,
        balancing: Balancing | None,
    ) -> RebalancePlan:
        state = self.state
        before, after, moves = [], [], []
        lowered = 0
        for key in sorted(self.original):
            was, now = self.original[key], state.held(*key)
            assert now is not None
            if was.nodes == now.nodes:
                continue
            before.append(was)
            after.append(now)
            moves += net_moves(was, now, self.origin.get(key, {}))
            lowered += diversity_lowered(state, was, now)
        return RebalancePlan(
            cluster=cluster,
            mode=mode,
            moves=tuple(moves),
            before=tuple(before),
            after=tuple(after),
            cancelled=tuple(self.cancelled),
            unfixable=tuple(self.unfixable),
            unavailable=tuple(unavailable),
            full=full,
            balance_before=balance_before,
            balance_after=target_balance(state, rack_aware=self.rack_aware, pinned=self.pinned()),
            per_node=state.per_node(),
            lower_bound_moves=bound.moves,
            lower_bound_bytes=bound.bytes,
            lower_bound_terms=bound.terms,
            lower_bound_all_moves=bound.all_moves,
            balancing=balancing,
            diversity_lowered=lowered,
        )


def diversity_lowered(
    state: AllocationState, was: PartitionAssignment, now: PartitionAssignment
) -> int:
    """1 when ``now`` spans fewer racks than ``was`` did, else 0."""
    racks = state.racks
    index = state.index
    return int(
        len({racks[index[n]] for n in now.nodes}) < len({racks[index[n]] for n in was.nodes})
    )


def net_moves(
    was: PartitionAssignment, now: PartitionAssignment, chain: dict[NodeId, tuple[NodeId, str]]
) -> list[PlannedMove]:
    """One move per node that lost a replica, paired with a node that gained one: by the
    recorded chain where it still holds, else in order."""
    lost = [n for n in was.nodes if n not in now.nodes]
    gained = [n for n in now.nodes if n not in was.nodes]
    pairs: list[tuple[NodeId, NodeId, str]] = []
    for target in list(gained):
        link = chain.get(target)
        if link is not None and link[0] in lost:
            source, reason = link
            lost.remove(source)
            gained.remove(target)
            pairs.append((source, target, reason))
    for source, target in zip(lost, gained, strict=True):
        pairs.append((source, target, chain.get(target, (source, COUNTS))[1]))
    return [
        PlannedMove(was.topic, was.partition, s, t, r, was.size_bytes, r != COUNTS)
        for s, t, r in pairs
    ]
