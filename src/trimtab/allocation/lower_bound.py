"""The fewest replica moves (and bytes) any plan needs to reach the partition balancer's goals.

Goals
    Put next to every plan how far it could at best have been: ``moves / lower bound``. The
    bound is computed from the instance alone (the nodes, the assignment, who is drained or
    down, the disk limits, the racks and the mode), so it holds for every plan, trimtab's,
    an exact optimum (``--optimal``) or another tool's, that reaches the same goals.

A move is the net change of one replica: it leaves one node (its *source*) and carries its
partition's bytes. Every term below counts moves by source, or by partition, so that no move
is counted twice. Partitions the planner may not touch (no quorum, a reassignment under way)
are left out: no plan moves them.

The terms, and why each is a bound
    Emptied nodes (``node_decommissioning``, ``node_unavailable``): a node being drained, or
    down past the timeout in ``continuous`` mode, must end holding nothing; each replica on it
    leaves it once at least. ``dₚ`` = the replicas of partition p on emptied nodes.
    Emptied log dirs (``log_dir_cordoned``, every mode): a replica of a log dir being
    emptied (``--cordon``) leaves the dir, to another open dir of its broker (a move inside
    the broker, no network bytes) or off the broker. Which of them leave the broker is a
    choice (the planner packs the largest into the open dirs first), so the bound does not
    take one (:func:`~trimtab.allocation.log_dirs.dir_needs`): the broker's emptied bytes
    beyond its open dirs' room, ``δᵢ``, must leave it, carried by at least ``kᵢ`` of its
    replicas (the fewest largest reaching ``δᵢ``; any of its replicas, since sending one of
    an open dir away makes room too). The broker then sheds like a full disk: ``kᵢ`` moves
    and ``δᵢ`` bytes at least (the larger of these and its full-disk need, both counting the
    same moves off it). On a broker with no open dir every replica of its emptied dirs leaves
    it: those count as replicas of an emptied node (``dₚ``, their bytes) and are left out of
    its full-disk and count terms (the node's excess is taken net of them).
    Full disks (``disk_full``, ``continuous``): node i above the soft limit must shed at least
    ``eᵢ = usedᵢ − soft·totalᵢ`` bytes. No k replicas carry more than its k largest, so at least
    ``kᵢ`` = the fewest largest partitions whose bytes reach ``eᵢ`` must leave it, and at least
    ``eᵢ`` bytes (and never less than its ``kᵢ`` smallest partitions carry).
    Rack violations (``rack_constraint_repair``, ``continuous`` and rack-aware): the goal is
    that a partition's replicas share no rack while a rack with an active node (a *usable*
    rack) holds none of them: it ends on RF racks, or on every usable rack. Let K be the
    racks of the replicas that do not move and R those of the replicas not on emptied nodes
    (K ⊆ R). Each move adds at most one rack, so ``m ≥ |final racks| − |K|``, which is at
    least ``RF − |K| ≥ RF − |R|`` in the first case and ``|usable − K| ≥ |usable − R|`` in
    the second: ``rₚ = min(RF − |R|, |usable − R|)`` moves, ``dₚ`` of which the emptied
    nodes already force.
    Counts (``partition_count_rebalancing``, when balancing is part of the plan): a balanced
    plan leaves every active node within ``⌊tᵢ⌋..⌈tᵢ⌉``, tᵢ its reachable share of the
    replicas the active nodes hold once the emptied nodes' replicas have joined them
    (:func:`~trimtab.allocation.shares.target_shares`; the counts step stops only there
    when nothing blocks it: a node below ⌊t⌋ has an excess below −1, so some node is above
    its share by more than the step's threshold, and likewise above ⌈t⌉). Replicas
    arriving only raise a count, so at least ``cᵢ = countᵢ − ⌈tᵢ⌉`` replicas leave node i;
    and since every move lands on one node, at least ``Σ max(0, ⌊tᵢ⌋ − countᵢ)`` moves
    land on the nodes below their share. The term reported is what the count goal adds to
    the combined bound below (a move off an emptied node or a full disk may land where a
    count is short, so the counts alone say little). A full disk takes no replica and
    may end below its share, so the full nodes are left out of this goal and the others'
    shares are taken of the fewest replicas they may end with (those they hold, those the
    emptied nodes send, the kᵢ the full disks shed) for the second form, and of the most
    (every replica of the full disks too) for the first: each stays a bound whatever the
    full disks end with (a share grows with the total).

Combining them (``moves`` is not the sum of the terms: one move may serve two goals)
    Let F be the active nodes that must shed replicas, ``oᵢ = max(kᵢ, cᵢ) > 0``, and S the
    partitions with no replica on F. Every move leaves an emptied node, a node of F, or
    another node; the three sets of moves are disjoint. So::

        moves ≥ Σₚ dₚ  +  Σ_{i∈F} oᵢ  +  Σ_{p∈S} max(0, rₚ − dₚ)

    (a partition of S repairs its racks only by moves off emptied or other nodes, and those
    off emptied nodes are in the first sum). The partitions T with a replica on F and
    ``rₚ > dₚ`` add what moves off F cannot do for them: let ``O = Σ_{i∈F} oᵢ``,
    ``R = Σ_{p∈T} (rₚ − dₚ)`` and ``M = Σ_{p∈T} min(rₚ − dₚ, fₚ)``, fₚ its replicas on F. The
    moves off F (X ≥ O) and T's moves off other non-emptied nodes (Y) meet T's repairs,
    ``X_T + Y ≥ R`` with ``X_T ≤ min(X, M)`` of them off F, so ``X + Y ≥ max(R, O + R − M)``:
    the term adds ``max(0, R − O, R − M)`` to O. That is for T's partitions with replicas on
    several nodes of F; one with its replica on one node i of F only is counted at i: the
    moves off i and those partitions' repairs elsewhere number at least
    ``Σ (rₚ − dₚ) + nᵢ``, nᵢ the fewest largest of i's other partitions that carry what is left
    of eᵢ once all of theirs has gone (moving one of them off i is never worse than moving
    it elsewhere, so the least takes them all off i), and i's term becomes the larger of
    that and oᵢ. (Without it the bound took every such partition as repaired by the disk's
    moves for free, though the disk may need fewer moves than it holds such partitions.)
    Counting the moves by partition instead, each
    moves at least ``max(dₚ, rₚ)`` of its own replicas, so ``moves ≥ Σₚ max(dₚ, rₚ)`` too,
    the stronger form when many nodes must shed (a balancing pass onto joining nodes) and S
    is small; the bound is the larger of the two (the bytes likewise:
    ``Σₚ sizeₚ·max(dₚ, rₚ)``). ``bytes`` is the same sum over the bytes of each
    set: the emptied replicas' sizes, for each i of F the larger of ``min(eᵢ, its movable
    bytes)`` and its ``oᵢ`` smallest partitions, and ``sizeₚ·max(0, rₚ − dₚ)``. With count
    balancing, counting the same moves by the node they land on gives the other bound,
    ``Σ max(0, ⌊tᵢ⌋ − countᵢ)``: ``moves`` is the larger of the two.

A move off a shedding node that also repairs a rack (the third form)
    The first form lets every partition touching F repair its racks for free; it is loose
    when the shedding moves cannot be the repairing ones (on bench/peers down60 a full disk
    reaches its limit in its 79 moves only with 6 of its 7 crowding replicas among them).
    Call a replica on node i ∈ F *repairing* when its partition has ``rₚ > dₚ`` and another
    of its kept replicas (not on an emptied node) shares i's rack, or i's rack has no active
    node (a full disk in maintenance: its rack is not usable, so leaving it loses nothing);
    ``Jᵢ`` those of node i.
    For a partition p let ``fₚ`` be its moves off F nodes of repairing replicas and ``aₚ``
    its other moves off F nodes (a replica alone in its kept rack, a usable one). Moving such a
    lone replica loses a usable rack from K, so by the
    rack argument above p's moves number at least ``rₚ + aₚ``: besides its ``dₚ`` moves off
    emptied nodes and its ``aₚ + fₚ`` off F, at least ``rₚ − dₚ − fₚ`` leave other nodes.
    Node i sends ``mᵢ ≥ oᵢ`` replicas carrying at least ``eᵢ`` bytes (disk nodes), at most
    ``gᵢ(mᵢ)`` of them repairing, where ``gᵢ(m)`` is the most of ``Jᵢ`` any m of its replicas
    reaching ``eᵢ`` hold (the largest of ``Jᵢ`` and of the others give every m and j its
    most bytes). Summing::

        moves ≥ Σₚ dₚ  +  Σₚ max(0, rₚ − dₚ)  +  Σ_{i∈F} min_{m≥oᵢ} (m − gᵢ(m))

    (:func:`~trimtab.allocation.shedding.fewest_extra` finds the minimum; it is not always
    at ``m = oᵢ``). A partition repairing on two nodes of F may be credited twice, so the
    bound is not always reached there; the bound is the largest of the three forms.

When the plan leaves something unfixed (a move budget, no node that may take a replica, a
full disk with too few known sizes) it stops short of the goals and may make fewer moves
than the bound; the plan says what it left.

Moves inside brokers (``all_moves``: between brokers and between log dirs of one)
    A broker i with emptied or full dirs moves at least ``nᵢ`` of its replicas, within it or
    off it: ``nᵢ`` = the replicas of its emptied dirs plus, for each other dir over the soft
    limit whose excess its other open dirs have room for (relieving it is then a goal), the
    fewest of its largest replicas that take it under. With ``Xᵢ`` its moves off
    and ``Zᵢ`` its moves inside, ``Xᵢ + Zᵢ ≥ o′ᵢ = max(oᵢ, nᵢ)`` and ``Xᵢ ≥ oᵢ``. Each form above
    stays a bound on all moves with ``o′ᵢ`` for ``oᵢ``: the first because its rack term only
    needs ``X + Z + Y ≥ max(O′, R, O′ + R − M)``, which follows from ``X + Y ≥ max(R, X + R −
    M)``, ``X + Z ≥ O′`` and ``Z ≥ 0``; the third because crediting every one of the ``o′ᵢ``
    moves as a possible repair only lowers it; by partition, p moves its ``dₚ`` replicas on
    emptied nodes and its ``cₚ`` in emptied dirs once each, and ``rₚ`` to repair its racks:
    ``Σₚ max(dₚ + cₚ, rₚ)``. Moves inside carry no network bytes: ``bytes`` is unchanged.

Worked example: brokers 1–6, 120 RF3 partitions, ``--drain 6`` holding 62 replicas: the bound
is 62 moves and their bytes; a plan moving exactly broker 6's replicas is optimal.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from trimtab.allocation.balance_plan import (
    CORDON,
    COUNTS,
    DECOMMISSION,
    DISK_FULL,
    RACK,
    UNAVAILABLE,
    InFlight,
    Key,
)
from trimtab.allocation.health import NodeStatus, NodeView
from trimtab.allocation.log_dirs import DirNeed
from trimtab.allocation.model import PartitionAssignment
from trimtab.allocation.replica_constraints import disk_ratios
from trimtab.allocation.shares import target_shares
from trimtab.allocation.shedding import fewest_extra
from trimtab.allocation.state import AllocationState
from trimtab.cluster import ClusterState, NodeId
from trimtab.config.redpanda import AllocationConfig, BalancerMode

__all__ = ["LowerBounds", "bounds_of", "lower_bounds", "planning_state"]

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class LowerBounds:
    """At least ``moves`` replica moves between nodes and ``bytes`` bytes; ``terms`` is each
    goal's own bound by reason (the rack term beyond the moves off emptied nodes, the count
    term what balancing adds to the bound of the others); ``all_moves`` counts the moves
    between log dirs of one node too (equal to ``moves`` when no log dir asks for any)."""

    moves: int
    bytes: int
    terms: dict[str, int] = field(default_factory=dict)
    all_moves: int = -1

    def __post_init__(self) -> None:
        if self.all_moves < self.moves:
            object.__setattr__(self, "all_moves", self.moves)


def lower_bounds(
    cluster: ClusterState,
    assignments: Iterable[PartitionAssignment],
    config: AllocationConfig | None = None,
    *,
    health: Iterable[NodeStatus] = (),
    drain: Collection[NodeId] = (),
    now: float | None = None,
    in_flight: Iterable[InFlight] = (),
    mode: str | None = None,
    rack_aware: bool | None = None,
    balance: bool | None = None,
    evict: Collection[tuple[str, int, NodeId]] = (),
    dir_needs: Mapping[NodeId, DirNeed] | None = None,
) -> LowerBounds:
    """The bound for the plan :func:`~trimtab.allocation.planner.plan_rebalance` makes of
    the same arguments: the required goals, and count balancing when it is part of the plan
    (``balance``; by default when ``mode`` is given or nothing is required). Reassignments
    under way (``in_flight``) are left out, as the planner leaves them."""
    cfg = config or AllocationConfig()
    view, state = planning_state(cluster, assignments, cfg, health=health, drain=drain, now=now)
    required, balanced = bounds_of(
        state,
        view,
        mode=BalancerMode(mode or cfg.balancer_mode),
        rack_aware=cfg.enable_rack_awareness if rack_aware is None else rack_aware,
        soft=disk_ratios(cfg)[0],
        frozen={(f.topic, f.partition) for f in in_flight},
        evicted=evict,
        dirs=dir_needs,
    )
    included = balance if balance is not None else (mode is not None or required.moves == 0)
    return balanced if included else required


def planning_state(
    cluster: ClusterState,
    assignments: Iterable[PartitionAssignment],
    config: AllocationConfig,
    *,
    health: Iterable[NodeStatus],
    drain: Collection[NodeId],
    now: float | None,
) -> tuple[NodeView, AllocationState]:
    """The cluster as the planner sees it and the allocation state over it (one definition
    for the planner and the bound, so both see the same instance)."""
    held = list(assignments)
    view = NodeView.of(
        cluster,
        held,
        health=health,
        drain=drain,
        now=now,
        timeout_s=config.node_availability_timeout_sec,
    )
    return view, AllocationState.of(view.cluster, config, held)


@dataclass(slots=True)
class _Instance:
    """What the terms are computed from: per partition (replica node indices, size, dₚ, rₚ,
    cₚ) and per node (movable replica sizes)."""

    parts: list[tuple[list[int], int, int, int, int]] = field(default_factory=list)
    sizes: dict[int, list[int]] = field(default_factory=dict)
    # per node: the sizes of its replicas whose move to a new rack also repairs one (Rₚ)
    repairing: dict[int, list[int]] = field(default_factory=dict)
    evicted: dict[int, tuple[int, int]] = field(default_factory=dict)  # node: (replicas, bytes)
    inside: dict[int, int] = field(default_factory=dict)  # node: replicas in its emptied dirs
    emptied_by: dict[str, int] = field(default_factory=dict)
    emptied_bytes: int = 0


def bounds_of(
    state: AllocationState,
    view: NodeView,
    *,
    mode: BalancerMode,
    rack_aware: bool,
    soft: float,
    frozen: Collection[Key] = (),
    evicted: Collection[tuple[str, int, NodeId]] = (),
    dirs: Mapping[NodeId, DirNeed] | None = None,
) -> tuple[LowerBounds, LowerBounds]:
    """(required goals only, with count balancing too) for ``state`` as ``view`` sees it
    (the planner's own working state, before it moves anything). ``evicted`` replicas leave
    their node, as the caller chose them; with ``dirs`` (what each node's log dirs need) only
    those on nodes with no open dir are taken as given, the others' choice is left open."""
    continuous = mode is BalancerMode.CONTINUOUS
    dirs = dirs or {}
    index = state.index
    draining = {index[n] for n in view.draining}
    timed_out = {index[n] for n in view.timed_out} - draining if continuous else set()
    emptied = draining | timed_out
    opened = {
        index[n]: need.emptied
        for n, need in dirs.items()
        if n in index and not need.closed and index[n] not in emptied
    }
    leaving = {(t, p, index[n]) for t, p, n in evicted if index[n] not in opened}
    racks = rack_aware and continuous
    inst = _collect(state, view, draining, timed_out, racks, frozen, leaving, opened)
    disk = _disk_needs(state, inst, soft, emptied) if continuous else {}
    deficits = {i: dirs[state.ids[i]].deficit for i in opened}
    cordon = {i: _fewest_reaching(inst.sizes.get(i, ()), e) for i, e in deficits.items() if e > 0}
    shed = {
        i: (
            max(disk.get(i, (0, 0))[0], cordon.get(i, (0, 0))[0]),
            max(disk.get(i, (0, 0))[1], cordon.get(i, (0, 0))[1]),
        )
        for i in {*disk, *cordon}
    }
    inside = {i: inst.inside.get(i, 0) for i in opened}
    for n, need in dirs.items():
        if n in index and index[n] not in emptied and need.full:
            inside[index[n]] = inside.get(index[n], 0) + need.full
    named = {
        DISK_FULL: sum(k for k, _ in disk.values()),
        CORDON: inst.emptied_by[CORDON] + sum(k for k, _ in cordon.values()),
    }
    required = _both(inst, {i: k for i, (k, _) in shed.items()}, shed, inside)
    required.terms.update({r: n for r, n in named.items() if r != CORDON or n})
    if mode is BalancerMode.OFF:
        return required, required
    live = [
        i for i in range(len(state)) if state.active[i] and state.capacity[i] > 0 and i not in disk
    ]
    # what the balanced nodes hold at least (the full disks shed kᵢ) and at most (they shed all)
    # replicas that join the balanced nodes: those off emptied nodes, and evicted ones whose
    # node is not among them (a broker closed by its cordons: in maintenance)
    moved_in = sum(n for r, n in inst.emptied_by.items() if r != CORDON)
    balanced_nodes = set(live)
    moved_in += sum(n for i, (n, _) in inst.evicted.items() if i not in balanced_nodes)
    low = sum(state.counts[i] for i in live) + moved_in + sum(k for k, _ in disk.values())
    high = low + sum(state.counts[i] - k for i, (k, _) in disk.items())
    least = target_shares(state, rack_aware=rack_aware, total=low, excluded=disk)
    # the same as least unless the total may grow or full disks' rack slots shift the shares
    most = (
        _most_shares(state, rack_aware, high, disk)
        if high != low or (rack_aware and disk)
        else least
    )
    over, short = {}, 0
    for i in live:
        excess = state.counts[i] - math.ceil(most[i] - _EPS)
        excess -= inst.evicted.get(i, (0, 0))[0]  # those leave anyway
        if excess > 0:
            over[i] = min(excess, len(inst.sizes.get(i, ())))
        short += max(0, math.floor(least[i] + _EPS) - state.counts[i])
    needs = {i: max(over.get(i, 0), shed.get(i, (0, 0))[0]) for i in {*over, *shed}}
    balanced = _both(inst, needs, shed, inside)
    balanced.terms.update({r: n for r, n in named.items() if r != CORDON or n})
    # by target: every move lands on one node, and a node below ⌊tᵢ⌋ must receive the gap.
    # Not with racks and a full disk: the replicas the full disk keeps hold their partitions'
    # slot in its rack, which the shares do not see, so ⌊tᵢ⌋ may be out of reach (found by
    # test_the_optimum_lies_between_the_lower_bound_and_the_planner: optimum 8, this form 9)
    if short > balanced.moves and not (rack_aware and disk):
        balanced = LowerBounds(
            short, balanced.bytes, balanced.terms, max(short, balanced.all_moves)
        )
    # a plan that also balances meets the required goals: their bound holds for it too
    balanced = LowerBounds(
        max(required.moves, balanced.moves),
        max(required.bytes, balanced.bytes),
        balanced.terms,
        max(required.all_moves, balanced.all_moves),
    )
    balanced.terms[COUNTS] = balanced.moves - required.moves  # what balancing adds to it
    required.terms[COUNTS] = 0
    return required, balanced


def _most_shares(
    state: AllocationState, rack_aware: bool, high: int, disk: Mapping[int, tuple[int, int]]
) -> list[float]:
    """The largest share each balanced node can have (shares grow with the total; with
    racks, a full disk keeps up to ``countᵢ − kᵢ`` replicas in its rack, which lowers that
    rack's room and raises the others': for a node, none kept in its own rack and all kept
    in the others)."""
    if not rack_aware or not disk:
        return target_shares(state, rack_aware=rack_aware, total=high, excluded=disk)
    kept: dict[int, float] = {}
    for i, (k, _) in disk.items():
        kept[state.rack_ids[i]] = kept.get(state.rack_ids[i], 0.0) + max(0, state.counts[i] - k)
    out = [0.0] * len(state)
    for rack in {state.rack_ids[i] for i in range(len(state))}:
        held = {r: n for r, n in kept.items() if r != rack}
        shares = target_shares(state, rack_aware=True, total=high, excluded=disk, rack_held=held)
        for i in range(len(state)):
            if state.rack_ids[i] == rack:
                out[i] = shares[i]
    return out


def _collect(
    state: AllocationState,
    view: NodeView,
    draining: set[int],
    timed_out: set[int],
    racks: bool,
    frozen: Collection[Key],
    leaving: Collection[tuple[str, int, int]] = (),
    opened: Mapping[int, Collection[Key]] | None = None,
) -> _Instance:
    """One pass over the partitions the planner may move (quorum, not under way); ``opened``
    holds, per node with open dirs, the partitions of its emptied dirs (cₚ)."""
    opened = opened or {}
    index, rack_ids = state.index, state.rack_ids
    down = {index[n] for n in view.down}
    usable = {rack_ids[i] for i in range(len(state)) if state.active[i]}
    inst = _Instance(emptied_by={DECOMMISSION: 0, UNAVAILABLE: 0, CORDON: 0})
    for a in state.assignments():
        if (a.topic, a.partition) in frozen:
            continue
        nodes = [index[n] for n in a.nodes]
        if 2 * sum(i not in down for i in nodes) < len(nodes):
            continue
        d = c = 0
        kept: set[int] = set()
        stays: list[int] = []
        for i in nodes:
            if i in draining or i in timed_out:
                d += 1
                inst.emptied_by[DECOMMISSION if i in draining else UNAVAILABLE] += 1
                inst.emptied_bytes += a.size_bytes
            elif (a.topic, a.partition, i) in leaving:
                d += 1
                inst.emptied_by[CORDON] += 1
                inst.emptied_bytes += a.size_bytes
                n, b = inst.evicted.get(i, (0, 0))
                inst.evicted[i] = (n + 1, b + a.size_bytes)
            else:
                kept.add(rack_ids[i])
                stays.append(i)
                inst.sizes.setdefault(i, []).append(a.size_bytes)
                if i in opened and (a.topic, a.partition) in opened[i]:
                    c += 1
                    inst.inside[i] = inst.inside.get(i, 0) + 1
        r = max(0, min(len(nodes) - len(kept), len(usable - kept))) if racks else 0
        if r > d:  # its replicas in a crowded rack (or one no active node is in) may repair it
            crowd = [rack_ids[i] for i in stays]
            for i in stays:
                if crowd.count(rack_ids[i]) > 1 or rack_ids[i] not in usable:
                    inst.repairing.setdefault(i, []).append(a.size_bytes)
        inst.parts.append((nodes, a.size_bytes, d, r, c))
    return inst


def _disk_needs(
    state: AllocationState, inst: _Instance, soft: float, emptied: set[int]
) -> dict[int, tuple[int, int]]:
    """(kᵢ, bytes) for each node above the soft disk limit that is not emptied."""
    out = {}
    for i in range(len(state)):
        total = state.disk_total[i]
        used = state.disk_used[i] + state.assigned_bytes[i] - inst.evicted.get(i, (0, 0))[1]
        if total <= 0 or i in emptied or used <= soft * total:
            continue
        out[i] = _fewest_reaching(inst.sizes.get(i, ()), used - soft * total)
    return out


def _node_with_repairs(mine: list[tuple[int, int]], movable: Counter[int], excess: int) -> int:
    """The least of (moves off node i) + (its T partitions' repairs elsewhere): every such
    partition needs its ``rₚ − dₚ`` moves whatever happens, and moving one off i also carries
    its bytes, so the disk's excess left for the others is at most ``excess`` less all of
    theirs, covered by the fewest largest of the rest."""
    rest = movable.copy()
    rest.subtract(Counter(s for _, s in mine))
    left = excess - sum(s for _, s in mine)
    need = 0
    for part in sorted(rest.elements(), reverse=True):
        if left <= 0:
            break
        left -= part
        need += 1
    return sum(n for n, _ in mine) + need


def _fewest_reaching(sizes: Iterable[int], need: float) -> tuple[int, int]:
    """(k, bytes): the fewest of ``sizes``, largest first, whose bytes reach ``need``, and the
    least bytes any k replicas carrying ``need`` move (``need``, or all of them if short)."""
    sized = sorted((s for s in sizes if s > 0), reverse=True)
    k = carried = 0
    while carried < need and k < len(sized):
        carried += sized[k]
        k += 1
    return k, min(math.ceil(need - _EPS), carried)


def _both(
    inst: _Instance,
    needs: dict[int, int],
    shed: dict[int, tuple[int, int]],
    inside: Mapping[int, int],
) -> LowerBounds:
    """The bound between nodes, and with the moves inside nodes (``all_moves``: each node
    sheds ``o′ᵢ = max(oᵢ, nᵢ)``, ``inside`` the nᵢ; module docstring)."""
    between = _combine(inst, needs, shed)
    if not any(inside.values()):
        return between
    wider = {i: max(needs.get(i, 0), inside.get(i, 0)) for i in {*needs, *inside}}
    everything = _combine(inst, wider, shed, inside=True)
    return LowerBounds(between.moves, between.bytes, between.terms, everything.moves)


def _combine(
    inst: _Instance,
    needs: dict[int, int],
    disk: dict[int, tuple[int, int]],
    *,
    inside: bool = False,
) -> LowerBounds:
    """The combined bound of the module docstring for the nodes that must shed ``needs``
    (with ``inside``, moves within a node count and each partition moves ``cₚ`` more)."""
    shedding = {i: o for i, o in needs.items() if o > 0}
    moves = sum(inst.emptied_by.values()) + sum(shedding.values())
    size = inst.emptied_bytes
    for i, o in shedding.items():
        smallest = sum(sorted(inst.sizes.get(i, ()))[:o])
        size += max(smallest, disk.get(i, (0, 0))[1])
    rack_extra = rack_bytes = 0
    touching = shared = 0  # over T's partitions on several nodes of F: Σ (rₚ − dₚ), Σ min(…, fₚ)
    alone: dict[int, list[tuple[int, int]]] = {}  # i: (rₚ − dₚ, size) of T's partitions on i only
    movable = {i: Counter(inst.sizes.get(i, ())) for i in shedding}
    by_partition = 0
    for nodes, part_size, d, r, c in inst.parts:
        by_partition += max(d + c, r) if inside else max(d, r)
        on = [i for i in nodes if i in shedding]
        if r > d and not on:
            moves += r - d
            size += (r - d) * part_size
        elif r > d and len(on) == 1 and movable[on[0]][part_size] > 0:
            alone.setdefault(on[0], []).append((r - d, part_size))
        elif r > d:
            touching += r - d
            shared += min(r - d, len(on))
        rack_extra += max(0, r - d)
        rack_bytes += max(0, r - d) * part_size
    # T's rack repairs: at most Σ min(rₚ − dₚ, fₚ) of them can be moves off F (counted above)
    moves += max(0, touching - sum(shedding.values()), touching - shared)
    for i, mine in alone.items():
        moves += max(0, _node_with_repairs(mine, movable[i], disk.get(i, (0, 0))[1]) - shedding[i])
    # by partition: each partition's own moves number at least max(dₚ, rₚ)
    moves = max(moves, by_partition)
    # every repair its own move, less those a shedding node's moves can do too
    extra = sum(_shed_extra(inst, i, o, disk.get(i, (0, 0))[1]) for i, o in shedding.items())
    moves = max(moves, sum(inst.emptied_by.values()) + rack_extra + extra)
    size = max(size, inst.emptied_bytes + rack_bytes)
    terms = {r: n for r, n in inst.emptied_by.items() if r != CORDON or n}
    terms[DISK_FULL] = sum(k for k, _ in disk.values())
    terms[RACK] = rack_extra
    return LowerBounds(moves, size, terms)


def _shed_extra(inst: _Instance, i: int, least: int, need: int) -> int:
    """The fewest moves off node i beyond the rack repairs they do too: ``min (mᵢ − jᵢ)``
    over mᵢ ≥ oᵢ replicas carrying ``need`` bytes, jᵢ of them repairing (module docstring)."""
    sizes = sorted(inst.sizes.get(i, ()), reverse=True)
    repairing = sorted(inst.repairing.get(i, ()), reverse=True)
    left = Counter(sizes) - Counter(repairing)
    others = sorted(left.elements(), reverse=True)
    best = fewest_extra(repairing, others, least, need)
    return least if best is None else best[0] - best[1]
