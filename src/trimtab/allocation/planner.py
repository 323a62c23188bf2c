"""The partition balancer: which existing replicas move, after Redpanda's partition balancer.

Goals (in upstream's order; each later step sees the moves of the earlier ones)
    1. Drains: every replica off nodes being decommissioned (``--drain``, health ``draining``).
    2. Unavailable nodes (``continuous``): every replica off nodes down longer than
       ``partition_autobalancing_node_availability_timeout_sec``.
    3. Full disks (``continuous``): replicas off nodes above
       ``partition_autobalancing_max_disk_usage_percent``, largest benefit first, until under.
    4. Rack repair (``continuous``, rack-aware): partitions whose replicas share a rack while a
       rack without one of them could take one.
    5. Counts (``node_add`` and ``continuous``): replica counts towards capacity shares, by
       :func:`~trimtab.allocation.repair.even_out`, with what is left of the budget.

Constraints
    A target passes the allocator's hard rules (active — not down, draining, in maintenance or
    read-only —, a free partition slot, not holding the partition) and the disk rule at the
    hard limit (95 %) for steps 1–2, at the soft limit (80 %) otherwise; the allocator's soft
    levels rank the rest (racks, topic share, capacity, disk) and the seeded RNG breaks ties.
    A partition with most of its replicas on down nodes has no quorum and is reported, not
    moved. A reassignment under way is not moved again; it is cancelled when it has become
    useless (its target is down or draining, or the node it leaves is back). At most
    ``partition_autobalancing_concurrent_moves`` partitions are reassigned per plan (upstream
    counts partitions too); what the budget leaves is reported as unfixable for this plan.
    Departure: drains and unavailable nodes may fill a target up to the hard limit, as
    upstream's, but only when no node would stay under the soft limit: upstream may send a
    drained replica to a node above 80 % and move it off again in the full-disk step (two
    moves where none was needed).

Algorithm
    Every move goes through the allocation state's transaction (rollback is free) and keeps
    the replica's position in the list (the preferred leader's slot). The nodes are scored
    all at once with NumPy (:mod:`trimtab.allocation._vector`, equal to the scalar rules).
    A move is listed by its net effect: a replica moved twice (a → b → c) is one move a → c
    under the first reason; a replica moved back is no move. Full disks: while a node is over,
    the smallest partition that alone takes it under goes, else the largest (fewest moves,
    then fewest bytes); upstream moves its smallest partitions first.

Worked example: nodes 0, 1, 2, 3; one partition on (0, 1, 2); node 0 down for an hour. Step 2
moves 0's replica: 3 is the only node not holding the partition → (3, 1, 2), one move,
reason ``node_unavailable``; the rollback document holds (0, 1, 2).
"""

from __future__ import annotations

import bisect
import random
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass

import numpy as np

from trimtab.allocation._vector import (
    capacity_scores,
    disk_fit,
    disk_scores,
    rack_scores,
    topic_scores,
)
from trimtab.allocation.base import is_internal_topic
from trimtab.allocation.health import NodeStatus, NodeView
from trimtab.allocation.model import PartitionAssignment, Replica
from trimtab.allocation.repair import even_out
from trimtab.allocation.replica_constraints import disk_ratios
from trimtab.allocation.state import AllocationState, Transaction
from trimtab.cluster import ClusterState, NodeId
from trimtab.config.redpanda import AllocationConfig, BalancerMode

__all__ = [
    "REASONS",
    "Cancellation",
    "InFlight",
    "PlannedMove",
    "RebalancePlan",
    "Unfixable",
    "plan_rebalance",
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


def plan_rebalance(
    cluster: ClusterState,
    assignments: Iterable[PartitionAssignment],
    config: AllocationConfig | None = None,
    *,
    health: Iterable[NodeStatus] = (),
    drain: Collection[NodeId] = (),
    now: float | None = None,
    in_flight: Iterable[InFlight] = (),
    mode: str | None = None,
    max_moves: int | None = None,
    rack_aware: bool | None = None,
    seed: int = 0,
) -> RebalancePlan:
    """Plan the moves for ``cluster`` holding ``assignments`` (with their sizes when known).

    ``health`` and ``drain`` say which nodes are down (since when, against ``now``), in
    maintenance or drained; ``in_flight`` are reassignments under way (their partitions are
    at the target in ``assignments``). ``mode``, ``max_moves`` and ``rack_aware`` default to
    the config's ``partition_autobalancing_mode``, ``…_concurrent_moves`` and
    ``enable_rack_awareness``.
    """
    cfg = config or AllocationConfig()
    held = list(assignments)
    view = NodeView.of(
        cluster,
        held,
        health=health,
        drain=drain,
        now=now,
        timeout_s=cfg.node_availability_timeout_sec,
    )
    state = AllocationState.of(view.cluster, cfg, held)
    chosen = BalancerMode(mode or cfg.balancer_mode)
    soft, hard = disk_ratios(cfg)
    planner = _Planner(
        state,
        view,
        rack_aware=cfg.enable_rack_awareness if rack_aware is None else rack_aware,
        topic_aware=cfg.topic_aware,
        budget=cfg.concurrent_moves if max_moves is None else max_moves,
        soft=soft,
        rng=random.Random(seed),
        internal_topics=cfg.internal_topics,
    )
    before = state.balance()
    continuous = chosen is BalancerMode.CONTINUOUS
    full = planner.full_nodes() if continuous else {}
    with state.transaction() as tx:
        planner.tx = tx
        planner.cancel(list(in_flight))
        planner.drain(view.draining, DECOMMISSION, hard)
        if chosen is BalancerMode.CONTINUOUS:
            planner.drain(view.timed_out, UNAVAILABLE, hard)
            planner.relieve(full)
            if planner.rack_aware:
                planner.repair_racks()
        if chosen is not BalancerMode.OFF:
            planner.even_counts()
        tx.commit()
    planner.close()
    unavailable = sorted(view.timed_out) if continuous else []
    return planner.result(cluster.name, str(chosen), before, unavailable, full)


class _Planner:
    """The working state of one plan: node columns as arrays, the partitions' replica matrix,
    the budget, and each moved replica's origin and reason."""

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
            self._cannot(reason, "no quorum: most of its replicas are on nodes that are down", a)
            return False
        if key not in self.original and len(self.original) >= self.budget:
            self._cannot(
                reason,
                f"left for a later plan: {self.budget} partitions reassigned "
                "(partition_autobalancing_concurrent_moves)",
                a,
            )
            return False
        return True

    def _cannot(
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
        self._record(key, gone, come, reason)
        return new

    def _record(self, key: Key, gone: NodeId, come: NodeId, reason: str) -> None:
        chain = self.origin.setdefault(key, {})
        first = chain.pop(gone, (gone, reason))
        if first[0] != come:
            chain[come] = first

    def move(
        self, a: PartitionAssignment, leaving: int, reason: str, ratio: float
    ) -> PartitionAssignment | None:
        target = self.pick(a, leaving, ratio)
        if isinstance(target, str):
            self._cannot(reason, target, a, node=self.state.ids[leaving])
            return None
        return self.apply(a, leaving, target, reason)

    # -- the steps -------------------------------------------------------------------------------

    def holding(self, nodes: Collection[int]) -> list[Key]:
        """Partitions that had a replica on one of ``nodes`` when the plan began."""
        if not nodes:
            return []
        rows = np.flatnonzero(np.isin(self.matrix, list(nodes)).any(axis=1))
        return [self.keys[k] for k in rows]

    def cancel(self, in_flight: list[InFlight]) -> None:
        """Cancel the reassignments that became useless; freeze the others."""
        state, view = self.state, self.view
        assert self.tx is not None
        for f in in_flight:
            key = (f.topic, f.partition)
            now = state.held(*key)
            if now is None or set(now.nodes) not in (set(f.previous), set(f.target)):
                raise ValueError(
                    f"reassignment of {f.topic}/{f.partition}: the assignment holds neither "
                    "its previous nor its target replicas"
                )
            self.frozen.add(key)
            if now.nodes != f.target:  # under way: counted where it is going
                self.tx.remove(now)
                now = _at_nodes(state, now, f.target)
                self.tx.add(now)
            coming = [n for n in now.nodes if n not in f.previous]
            leaving = [n for n in f.previous if n not in now.nodes]
            bad = [n for n in coming if n in view.down | view.draining]
            back = (f.reason == UNAVAILABLE and not any(n in view.down for n in leaving)) or (
                f.reason == DECOMMISSION and not any(n in view.draining for n in leaving)
            )
            if not bad and not (back and leaving):
                continue
            why = (
                f"its target {bad[0]} is down or draining"
                if bad
                else (f"{', '.join(leaving)} no longer needs to be left ({f.reason} is over)")
            )
            self.tx.remove(now)
            self.tx.add(_at_nodes(state, now, f.previous))
            self.cancelled.append(Cancellation(f.topic, f.partition, why))

    def drain(self, nodes: Collection[NodeId], reason: str, ratio: float) -> None:
        """Every replica off ``nodes``."""
        index = self.state.index
        wanted = {index[n] for n in nodes}
        for key in self.holding(wanted):
            a = self.state.held(*key)
            if a is None or not self.may_change(key, reason, a):
                continue
            for node in a.nodes:
                if index[node] in wanted:
                    a = self.move(a, index[node], reason, ratio) or a

    def full_nodes(self) -> dict[NodeId, float]:
        """Nodes above the soft disk limit (not timed out), most filled first."""
        soft = self.soft
        used, total = self.used(), self.total
        ratio = np.where(total > 0, used / np.maximum(total, 1), 0.0)
        return {
            self.state.ids[i]: float(ratio[i])
            for i in np.argsort(-ratio, kind="stable")
            if ratio[i] > soft and self.state.ids[i] not in self.view.timed_out
        }

    def relieve(self, full: dict[NodeId, float]) -> None:
        """Off each full node until it is under ``soft``: the smallest partition that alone
        takes it under, else the largest (sizes known only)."""
        state, soft = self.state, self.soft
        for node in full:
            i = state.index[node]
            sized = []
            for key in self.holding([i]):
                a = state.held(*key)
                if (
                    a is not None
                    and a.size_bytes > 0
                    and node in a.nodes
                    and key not in self.frozen
                ):
                    sized.append((a.size_bytes, key))
            sized.sort()
            moved = 0
            while self.used()[i] > soft * self.total[i]:
                if not sized:
                    filled = self.used()[i] / self.total[i]
                    why = "no partition of known size left to move (give --log-dirs)"
                    if moved:
                        why = f"still {filled:.1%} full after {moved} moves: nothing else can go"
                    self._cannot(DISK_FULL, why, node=node)
                    break
                excess = self.used()[i] - soft * self.total[i]
                k = bisect.bisect_left(sized, (excess, ("", -1)))
                _, key = sized.pop(min(k, len(sized) - 1))
                a = state.held(*key)
                if a is not None and self.may_change(key, DISK_FULL, a):
                    moved += self.move(a, i, DISK_FULL, soft) is not None

    def repair_racks(self) -> None:
        """Partitions sharing a rack while a rack with a usable node holds none of them: the
        later replicas of a rack move (the first of each rack stays)."""
        state = self.state
        usable = {state.rack_ids[i] for i in range(len(state)) if state.active[i]}
        for key in self.keys:
            a = state.held(*key)
            if a is None:
                continue
            racks = [state.rack_ids[state.index[n]] for n in a.nodes]
            if len(set(racks)) == len(racks) or len(usable - set(racks)) == 0:
                continue
            if not self.may_change(key, RACK, a):
                continue
            seen: set[int] = set()
            for node, rack in zip(a.nodes, racks, strict=True):
                if rack not in seen:
                    seen.add(rack)
                    continue
                target = self.pick(a, state.index[node], self.soft)
                if isinstance(target, str) or state.rack_ids[target] in seen:
                    why = target if isinstance(target, str) else "no free rack has a node that fits"
                    self._cannot(RACK, why, a, node=node)
                    continue
                a = self.apply(a, state.index[node], target, RACK)
                seen.add(state.rack_ids[target])

    def even_counts(self) -> None:
        """Counts towards capacity shares with the budget left (one partition per move at most)."""
        assert self.tx is not None
        state = self.state
        left = self.budget - len(self.original)
        if left <= 0:
            return
        movable = [
            a
            for key in self.keys
            if key not in self.frozen and (a := state.held(*key)) is not None and self.quorum(a)
        ]
        changed = even_out(
            state,
            self.tx,
            movable,
            rack_aware=self.rack_aware,
            topic_aware=self.topic_aware,
            hard_disk_ratio=self.soft,
            max_moves=left,
        )
        for old, new in zip(movable, changed, strict=True):
            if old is new:
                continue
            key = (old.topic, old.partition)
            self.original.setdefault(key, old)
            for was, now in zip(old.replicas, new.replicas, strict=True):
                if was.node != now.node:
                    self._record(key, was.node, now.node, COUNTS)

    # -- the result ------------------------------------------------------------------------------

    def result(
        self,
        cluster: str,
        mode: str,
        balance_before: float,
        unavailable: list[NodeId],
        full: dict[NodeId, float],
    ) -> RebalancePlan:
        state = self.state
        before, after, moves = [], [], []
        for key in sorted(self.original):
            was, now = self.original[key], state.held(*key)
            assert now is not None
            if was.nodes == now.nodes:
                continue
            before.append(was)
            after.append(now)
            moves += _net_moves(was, now, self.origin.get(key, {}))
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
            balance_after=state.balance(),
            per_node=state.per_node(),
        )


def _net_moves(
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
    return [PlannedMove(was.topic, was.partition, s, t, r, was.size_bytes) for s, t, r in pairs]


def _at_nodes(
    state: AllocationState, a: PartitionAssignment, nodes: tuple[NodeId, ...]
) -> PartitionAssignment:
    """``a`` back on ``nodes`` (cores: kept where the node stays, else its least loaded)."""
    cores = {r.node: r.core for r in a.replicas}
    replicas = tuple(
        Replica(n, cores.get(n, state.least_loaded_core(state.node_index(n)))) for n in nodes
    )
    return PartitionAssignment(a.topic, a.partition, replicas, a.size_bytes)
