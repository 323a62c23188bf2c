"""The partition balancer: which existing replicas move, after Redpanda's partition balancer.

Goals (in upstream's order; each later step sees the moves of the earlier ones)
    1. Drains: every replica off nodes being decommissioned (``--drain``, health ``draining``),
       and the replicas of emptied log dirs that no other open dir of their broker takes
       (``evict``, reason ``log_dir_cordoned``; :mod:`trimtab.allocation.log_dirs`).
    2. Unavailable nodes (``continuous``): every replica off nodes down longer than
       ``partition_autobalancing_node_availability_timeout_sec``.
    3. Full disks (``continuous``): replicas off nodes above
       ``partition_autobalancing_max_disk_usage_percent``, largest benefit first, until under.
    4. Rack repair (``continuous``, rack-aware): partitions whose replicas share a rack while a
       rack without one of them could take one.
    5. Counts (``node_add`` and ``continuous``): replica counts towards the reachable shares
       (capacity shares as far as racks allow, :mod:`trimtab.allocation.shares`), by
       :func:`~trimtab.allocation.repair.even_out`, with what is left of the budget. Among
       equally good moves it moves on a replica an earlier step moved (a → b → c is one
       move a → c): it lands that move elsewhere and adds none (``Balancing.retargeted``).
       The nodes that were over the disk limit are left out of the shares (they take no
       replica, and their replicas keep their slots in their racks): the others are balanced
       among themselves, as the lower bound counts them.
    Steps 1–4 are required, step 5 optional: when something is required and the caller did
    not give the mode, step 5 is planned, measured and rolled back, and the plan says what it
    would add (departure from upstream, see ``plan_rebalance``). Every plan carries the lower
    bound of its goals (:mod:`trimtab.allocation.lower_bound`).

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
    Each step is a function over one :class:`~trimtab.allocation.mover.Mover`, the plan's
    working state. Every move goes through the allocation state's transaction (rollback is
    free) and keeps the replica's position in the list (the preferred leader's slot). The
    nodes are scored all at once with NumPy (:mod:`trimtab.allocation._vector`, equal to the
    scalar rules). A move is listed by its net effect: a replica moved twice (a → b → c) is
    one move a → c under the first reason; a replica moved back is no move. Full disks: while
    a node is over, a partition whose replica there shares its rack with another of its
    replicas goes first when rack repair follows (the largest: its move to a free rack is one
    the repair would make anyway), then the smallest partition that alone takes it under,
    else the largest (fewest moves, then fewest bytes); upstream moves its smallest partitions
    first.

Worked example: nodes 0, 1, 2, 3; one partition on (0, 1, 2); node 0 down for an hour. Step 2
moves 0's replica: 3 is the only node not holding the partition → (3, 1, 2), one move,
reason ``node_unavailable``; the rollback document holds (0, 1, 2).
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Collection, Iterable, Mapping

import numpy as np

from trimtab.allocation.balance_plan import (
    CORDON,
    COUNTS,
    DECOMMISSION,
    DISK_FULL,
    RACK,
    UNAVAILABLE,
    Balancing,
    Cancellation,
    InFlight,
    PlannedMove,
    RebalancePlan,
)
from trimtab.allocation.health import NodeStatus
from trimtab.allocation.log_dirs import DirNeed
from trimtab.allocation.lower_bound import bounds_of, planning_state
from trimtab.allocation.model import PartitionAssignment, Replica
from trimtab.allocation.mover import Mover, diversity_lowered, net_moves
from trimtab.allocation.repair import even_out
from trimtab.allocation.replica_constraints import disk_ratios
from trimtab.allocation.shares import target_balance, topic_spread
from trimtab.allocation.state import AllocationState
from trimtab.cluster import ClusterState, NodeId
from trimtab.config.redpanda import AllocationConfig, BalancerMode

__all__ = ["plan_rebalance"]


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
    topic_aware: bool | None = None,
    balance: bool | None = None,
    seed: int = 0,
    evict: Collection[tuple[str, int, NodeId]] = (),
    dir_needs: Mapping[NodeId, DirNeed] | None = None,
) -> RebalancePlan:
    """Plan the moves for ``cluster`` holding ``assignments`` (with their sizes when known).

    ``health`` and ``drain`` say which nodes are down (since when, against ``now``), in
    maintenance or drained; ``in_flight`` are reassignments under way (their partitions are
    at the target in ``assignments``). ``mode``, ``max_moves``, ``rack_aware`` and
    ``topic_aware`` default to the config's ``partition_autobalancing_mode``,
    ``…_concurrent_moves``, ``enable_rack_awareness`` and ``…_topic_aware``.

    ``balance`` says whether count balancing joins the required moves. By default it does
    when ``mode`` is given (the operator asked for that mode) or when nothing is required;
    otherwise the plan moves only what it must and :attr:`RebalancePlan.balancing` says what
    balancing would add (departure from upstream, whose ``continuous`` mode always balances:
    a drain of 62 replicas moved 77, the 15 extra carrying 2.8 TB; issue 40).

    ``evict`` are (topic, partition, node) replicas that must leave their node (a cordoned
    log dir being emptied that no other dir of the node can take): required moves, planned
    with the drains. ``dir_needs`` say what the nodes' log dirs need of any plan
    (:func:`~trimtab.allocation.log_dirs.dir_needs`): with them the bound does not take
    ``evict``'s choice as given where another was possible, and counts moves inside nodes
    (``lower_bound_all_moves``).
    """
    cfg = config or AllocationConfig()
    view, state = planning_state(cluster, assignments, cfg, health=health, drain=drain, now=now)
    chosen = BalancerMode(mode or cfg.balancer_mode)
    soft, hard = disk_ratios(cfg)
    mover = Mover(
        state,
        view,
        rack_aware=cfg.enable_rack_awareness if rack_aware is None else rack_aware,
        topic_aware=cfg.topic_aware if topic_aware is None else topic_aware,
        budget=cfg.concurrent_moves if max_moves is None else max_moves,
        soft=soft,
        rng=random.Random(seed),
        internal_topics=cfg.internal_topics,
    )
    mover.dir_leaving = frozenset(
        (t, p, state.index[n])
        for n, need in (dir_needs or {}).items()
        if n in state.index and not need.closed
        for t, p in need.emptied
    )
    continuous = chosen is BalancerMode.CONTINUOUS
    full = _full_nodes(mover) if continuous else {}
    mover.full = full
    before = target_balance(state, rack_aware=mover.rack_aware, pinned=mover.pinned())
    with state.transaction() as tx:
        mover.tx = tx
        _cancel(mover, list(in_flight))
        required, balanced = bounds_of(
            state,
            view,
            mode=chosen,
            rack_aware=mover.rack_aware,
            soft=soft,
            frozen=mover.frozen,
            evicted=evict,
            dirs=dir_needs,
        )
        _drain(mover, view.draining, DECOMMISSION, hard)
        _evict(mover, evict, hard)
        if chosen is BalancerMode.CONTINUOUS:
            _drain(mover, view.timed_out, UNAVAILABLE, hard)
            _relieve(mover, full, racks=mover.rack_aware)
            if mover.rack_aware:
                _repair_racks(mover)
        balancing = None
        if chosen is not BalancerMode.OFF:
            include = balance if balance is not None else mode is not None or required.moves == 0
            made = sum(len(chain) for chain in mover.origin.values())  # net moves so far
            balancing = _balance(mover, include, max(0, balanced.moves - made))
        tx.commit()
    mover.close()
    unavailable = sorted(view.timed_out) if continuous else []
    bound = balanced if balancing is not None and balancing.included else required
    return mover.result(cluster.name, str(chosen), before, unavailable, full, bound, balancing)


def _cancel(m: Mover, in_flight: list[InFlight]) -> None:
    """Cancel the reassignments that became useless; freeze the others."""
    state, view = m.state, m.view
    assert m.tx is not None
    for f in in_flight:
        key = (f.topic, f.partition)
        now = state.held(*key)
        if now is None or set(now.nodes) not in (set(f.previous), set(f.target)):
            raise ValueError(
                f"reassignment of {f.topic}/{f.partition}: the assignment holds neither "
                "its previous nor its target replicas"
            )
        m.frozen.add(key)
        if now.nodes != f.target:  # under way: counted where it is going
            m.tx.remove(now)
            now = _at_nodes(state, now, f.target)
            m.tx.add(now)
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
        m.tx.remove(now)
        m.tx.add(_at_nodes(state, now, f.previous))
        m.cancelled.append(Cancellation(f.topic, f.partition, why))


def _drain(m: Mover, nodes: Collection[NodeId], reason: str, ratio: float) -> None:
    """Every replica off ``nodes``."""
    index = m.state.index
    wanted = {index[n] for n in nodes}
    for key in m.holding(wanted):
        a = m.state.held(*key)
        if a is None or not m.may_change(key, reason, a):
            continue
        for node in a.nodes:
            if index[node] in wanted:
                a = m.move(a, index[node], reason, ratio) or a


def _evict(m: Mover, replicas: Collection[tuple[str, int, NodeId]], ratio: float) -> None:
    """Each of ``replicas`` off its node (one replica of a partition, not the whole node)."""
    for topic, partition, node in replicas:
        m.barred.setdefault((topic, partition), set()).add(m.state.index[node])
        a = m.state.held(topic, partition)
        if a is None or node not in a.nodes or not m.may_change((topic, partition), CORDON, a):
            continue
        m.move(a, m.state.index[node], CORDON, ratio)


def _full_nodes(m: Mover) -> dict[NodeId, float]:
    """Nodes above the soft disk limit (not timed out), most filled first."""
    soft = m.soft
    used, total = m.used(), m.total
    ratio = np.where(total > 0, used / np.maximum(total, 1), 0.0)
    return {
        m.state.ids[i]: float(ratio[i])
        for i in np.argsort(-ratio, kind="stable")
        if ratio[i] > soft and m.state.ids[i] not in m.view.timed_out
    }


def _relieve(m: Mover, full: dict[NodeId, float], *, racks: bool = False) -> None:
    """Off each full node until it is under ``soft``: the smallest partition that alone
    takes it under, else the largest (sizes known only). With ``racks`` (rack repair follows),
    partitions whose replica here shares its rack with another of theirs go first, by the same
    rule: their move to a free rack is one the rack repair would make anyway, so it relieves
    the disk for nothing (moving others first cost one move more per such partition, where the
    lower bound counts one)."""
    state, soft = m.state, m.soft
    usable = _usable_racks(m) if racks else set()
    for node in full:
        i = state.index[node]
        sized = []
        for key in m.holding([i]):
            a = state.held(*key)
            if a is not None and a.size_bytes > 0 and node in a.nodes and key not in m.frozen:
                sized.append((a.size_bytes, key))
        sized.sort()
        moved = 0
        while m.used()[i] > soft * m.total[i]:
            if not sized:
                filled = m.used()[i] / m.total[i]
                why = (
                    "none of its partitions has a known size: the --log-dirs file "
                    "(kafka-log-dirs.sh --describe) must cover this broker"
                )
                if moved:
                    why = f"still {filled:.1%} full after {moved} moves: nothing else can go"
                m.cannot(DISK_FULL, why, node=node)
                break
            excess = m.used()[i] - soft * m.total[i]
            shared = [x for x in sized if _shares_rack(m, x[1], i, usable)] if usable else []
            if shared:
                chosen = shared[-1]  # the largest: the fewest other moves left to make
            else:
                k = bisect.bisect_left(sized, (excess, ("", -1)))
                chosen = sized[min(k, len(sized) - 1)]
            sized.remove(chosen)
            a = state.held(*chosen[1])
            if a is not None and m.may_change(chosen[1], DISK_FULL, a):
                moved += m.move(a, i, DISK_FULL, soft) is not None


def _usable_racks(m: Mover) -> set[int]:
    state = m.state
    return {state.rack_ids[i] for i in range(len(state)) if state.active[i]}


def _shares_rack(m: Mover, key: tuple[str, int], i: int, usable: set[int]) -> bool:
    """Whether the partition's replica on node ``i`` shares its rack with another of its
    replicas while a usable rack holds none of them (the rack repair would move one)."""
    state = m.state
    a = state.held(*key)
    if a is None:
        return False
    racks = [state.rack_ids[state.index[n]] for n in a.nodes]
    mine = state.rack_ids[i]
    return racks.count(mine) > 1 and bool(usable - set(racks))


def _repair_racks(m: Mover) -> None:
    """Partitions sharing a rack while a rack with a usable node holds none of them: in each
    rack the replica on the node least loaded for its capacity stays (the earlier one on a
    tie, so the preferred leader stays when it is no busier) and the others move. Moving the
    busier ones off does part of count balancing's work: on bench/peers add10 the count pass
    then needs 42 moves, not 107 (when the first replica of each rack always stayed)."""
    state = m.state
    usable = _usable_racks(m)
    for key in m.keys:
        a = state.held(*key)
        if a is None:
            continue
        racks = [state.rack_ids[state.index[n]] for n in a.nodes]
        if len(set(racks)) == len(racks) or len(usable - set(racks)) == 0:
            continue
        if not m.may_change(key, RACK, a):
            continue
        keep: dict[int, tuple[tuple[float, int], NodeId]] = {}
        for pos, (node, rack) in enumerate(zip(a.nodes, racks, strict=True)):
            i = state.index[node]
            rank = (state.counts[i] / max(state.capacity[i], 1), pos)
            if rack not in keep or rank < keep[rack][0]:
                keep[rack] = (rank, node)
        staying = {node for _, node in keep.values()}
        seen = set(keep)
        for node in [n for n in a.nodes if n not in staying]:
            target = m.pick(a, state.index[node], m.soft)
            if isinstance(target, str) or state.rack_ids[target] in seen:
                why = target if isinstance(target, str) else "no free rack has a node that fits"
                m.cannot(RACK, why, a, node=node)
                continue
            a = m.apply(a, state.index[node], target, RACK)
            seen.add(state.rack_ids[target])


def _balance(m: Mover, include: bool, bound: int) -> Balancing:
    """Count balancing on top of the required moves: kept when ``include``, else measured
    and rolled back; either way the plan says what it adds."""
    assert m.tx is not None
    state, racks = m.state, m.rack_aware
    before = target_balance(state, rack_aware=racks, pinned=m.pinned())
    spread_before = topic_spread(state) if m.topic_aware else 0
    mark = m.tx.mark()
    changes = _even_counts(m)
    moves, retargeted = _added(m, changes)
    balancing = Balancing(
        included=include,
        moves=moves,
        retargeted=retargeted,
        balance_before=before,
        balance_after=target_balance(state, rack_aware=racks, pinned=m.pinned()),
        lower_bound_moves=bound,
        topic_aware=m.topic_aware,
        topic_spread_before=spread_before,
        topic_spread_after=topic_spread(state) if m.topic_aware else 0,
        diversity_lowered=sum(diversity_lowered(state, old, new) for old, new in changes),
    )
    if not include:
        m.tx.rollback_to(mark)
        return balancing
    for old, new in changes:
        key = (old.topic, old.partition)
        m.original.setdefault(key, old)
        for was, now in zip(old.replicas, new.replicas, strict=True):
            if was.node != now.node:
                m.record(key, was.node, now.node, COUNTS)
    return balancing


def _added(
    m: Mover, changes: list[tuple[PartitionAssignment, PartitionAssignment]]
) -> tuple[tuple[PlannedMove, ...], int]:
    """The moves balancing adds, and how many earlier moves it only lands elsewhere: a
    replica that reached its node in this plan and moves on (a → b → c is one move a → c,
    as before, so it adds nothing)."""
    added: list[PlannedMove] = []
    retargeted = 0
    for old, new in changes:
        first = m.original.get((old.topic, old.partition), old)
        for move in net_moves(old, new, {}):
            if move.source in first.nodes:
                added.append(move)
            else:
                retargeted += 1
    return tuple(added), retargeted


def _even_counts(m: Mover) -> list[tuple[PartitionAssignment, PartitionAssignment]]:
    """Counts towards the reachable shares with the budget left (one partition per move at
    most); the partitions changed, before and after."""
    assert m.tx is not None
    state = m.state
    left = m.budget - len(m.original)
    if left <= 0:
        return []
    movable = [  # an evicted partition stays where its eviction sent it (it may not return)
        a
        for key in m.keys
        if key not in m.frozen
        and key not in m.barred
        and (a := state.held(*key)) is not None
        and m.quorum(a)
    ]
    index = state.index
    free = [  # replicas that reached their node in this plan: moving them on is free
        (k, index[node])
        for k, a in enumerate(movable)
        for node in m.origin.get((a.topic, a.partition), {})
        if node in a.nodes
    ]
    # a replica of an emptied log dir moves anyway (inside its node): sending it away is free
    free += [
        (k, index[node])
        for k, a in enumerate(movable)
        for node in a.nodes
        if (a.topic, a.partition, index[node]) in m.dir_leaving
    ]
    changed = even_out(
        state,
        m.tx,
        movable,
        rack_aware=m.rack_aware,
        topic_aware=m.topic_aware,
        hard_disk_ratio=m.soft,
        max_moves=left,
        free=free,
        pinned=m.pinned(),
    )
    return [(old, new) for old, new in zip(movable, changed, strict=True) if old is not new]


def _at_nodes(
    state: AllocationState, a: PartitionAssignment, nodes: tuple[NodeId, ...]
) -> PartitionAssignment:
    """``a`` back on ``nodes`` (cores: kept where the node stays, else its least loaded)."""
    cores = {r.node: r.core for r in a.replicas}
    replicas = tuple(
        Replica(n, cores.get(n, state.least_loaded_core(state.node_index(n)))) for n in nodes
    )
    return PartitionAssignment(a.topic, a.partition, replicas, a.size_bytes)
