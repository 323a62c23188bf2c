"""The least-movement plan as a mixed-integer program: the arrays, no solver.

Goals
    The fewest replica moves (then the fewest bytes) that meet the plan's hard goals and the
    balance the fast planner (:func:`~trimtab.allocation.planner.plan_rebalance`) reached,
    so that a solver (:mod:`trimtab.allocation.optimal`) proves how far the planner is from
    the least movement possible.

Variables
    One binary ``x[p, n]`` per partition ``p`` and candidate node ``n``: 1 when a replica of
    ``p`` is on ``n`` after the plan. Candidates are the active nodes (up, writable, not
    draining nor in maintenance) and the nodes already holding ``p`` that may keep it
    (read-only, in maintenance, down within the timeout: they keep, they never gain).
    Partitions without quorum (most replicas on down nodes) and the replicas they hold stay
    where they are, as the planner leaves them.

Objective
    ``moves + bytes / (S + 1)`` with ``S`` the bytes of every replica: keeping a replica on
    its node earns ``1 + size/(S + 1)``. Moved bytes can never add up to one move, so the
    fewest moves come first and the fewest bytes break ties (lexicographic, in one solve).

Constraints
    1. Replication: ``Σₙ x[p, n] = RF(p)``; distinct nodes are implied (binaries).
    2. Nothing on nodes that must be emptied (draining; down past the timeout in
       ``continuous``): no candidate there.
    3. Disk: ``base(n) + Σₚ size(p)·x[p, n] <= limit(n)``, ``limit`` the soft disk limit
       (``partition_autobalancing_max_disk_usage_percent``).
    4. Racks, when rack-aware: ``Σ_{n in rack} x[p, n] <= 1``.
    5. Balance: each active node no further from its target share ``share(n)`` (the
       replicas the planner left on active nodes, in proportion to capacity, rack-constrained
       when rack-aware: :func:`~trimtab.allocation.shares.target_shares`) than the planner
       left it: ``min(h(n), ⌊share(n)⌋) <= count(n) <= max(h(n), ⌈share(n)⌉)``,
       ``h(n)`` the planner's count, and within the node's partition slots.

    Where the planner could not meet a hard goal (a node it could not empty, a disk it left
    over the limit, a rack it could not repair), the bound is relaxed to what the planner
    reached, so the planner's result is always a feasible solution (the solver's warm start)
    and the optimum is never worse than the planner on any goal.

Worked example: nodes a, b, c, d of one core; partitions P0 on (a, b) and P1 on (a, c);
``--drain a``. Candidates: b, c, d (a must be emptied). Keeping P0 on b and P1 on c earns 2;
each partition needs one replica more on a node it is not on: 2 moves, the optimum, equal to
the replicas on the drained node.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from trimtab.allocation.health import NodeView
from trimtab.allocation.model import PartitionAssignment
from trimtab.allocation.shares import target_shares
from trimtab.allocation.state import AllocationState
from trimtab.cluster import NodeId

__all__ = ["MipArrays", "build_model"]


@dataclass(frozen=True, slots=True)
class MipArrays:
    """A MIP in column form (CSC), with what maps it back to partitions and nodes.

    ``part``/``node`` name each column's partition (index into ``partitions``) and node
    (index into the state's nodes); ``start`` is the heuristic's solution; the objective is
    ``offset + cost @ x``. ``forced`` counts the replicas on nodes that are no candidate of
    their partition (they move in every solution: a lower bound on moves).
    """

    part: np.ndarray
    node: np.ndarray
    cost: np.ndarray
    offset: float
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_start: np.ndarray
    row_index: np.ndarray
    value: np.ndarray
    start: np.ndarray
    scale: float
    partitions: tuple[PartitionAssignment, ...]
    forced: int

    @property
    def columns(self) -> int:
        return len(self.cost)

    @property
    def rows(self) -> int:
        return len(self.row_lower)


def build_model(
    state: AllocationState,
    view: NodeView,
    partitions: Sequence[PartitionAssignment],
    heuristic: Sequence[PartitionAssignment],
    *,
    emptied: Collection[NodeId],
    soft: float,
    rack_aware: bool,
    evicted: Collection[tuple[int, int]] = (),
) -> MipArrays:
    """The MIP of moving ``partitions`` (the current assignment) given the planner's result
    ``heuristic`` (same partitions, same order), the nodes that must be ``emptied`` and the
    ``evicted`` (partition index, node index) replicas that must leave their node."""
    n_nodes = len(state)
    cur = _incidence(state, partitions)
    heur = _incidence(state, heuristic)
    sizes = np.array([a.size_bytes for a in partitions], dtype=np.float64)
    down = np.zeros(n_nodes, dtype=bool)
    down[[state.index[n] for n in view.down if n in state.index]] = True
    movable = 2 * (cur & ~down[None, :]).sum(axis=1) >= cur.sum(axis=1)
    gone = np.zeros(n_nodes, dtype=bool)
    gone[[state.index[n] for n in emptied if n in state.index]] = True
    active = np.array(state.active, dtype=bool)
    cand = (active[None, :] | (cur & ~gone[None, :]) | (cur & heur)) & movable[:, None]
    for p, i in evicted:
        cand[p, i] = False
    part, node = np.nonzero(cand)
    fixed = cur & ~movable[:, None]
    scale = float((sizes * cur.sum(axis=1)).sum()) + 1.0
    held = cur[part, node]
    cost = np.where(held, -(1.0 + sizes[part] / scale), 0.0)
    mine = cur & movable[:, None]  # every replica that may move, a column or not (emptied)
    offset = float(mine.sum() + (sizes @ mine).sum() / scale)
    rows = _Rows()
    rf = cur.sum(axis=1)
    rf_row = rows.add(rf[movable], rf[movable])
    rf_of = np.full(len(partitions), -1, dtype=np.int64)
    rf_of[movable] = rf_row
    entries = [(rf_of[part], np.ones(len(part)))]
    entries.append(_count_rows(rows, state, heur, fixed, node, active, rack_aware))
    if sizes.any():
        entries.append(_disk_rows(rows, state, heur, fixed, sizes, part, node, active, soft))
    if rack_aware:
        entries.append(_rack_rows(rows, state, heur, part, node))
    col_start, row_index, value = _csc(len(part), entries)
    return MipArrays(
        part=part,
        node=node,
        cost=cost,
        offset=offset,
        row_lower=np.array(rows.lower, dtype=np.float64),
        row_upper=np.array(rows.upper, dtype=np.float64),
        col_start=col_start,
        row_index=row_index,
        value=value,
        start=heur[part, node].astype(np.float64),
        scale=scale,
        partitions=tuple(partitions),
        forced=int((mine & ~cand).sum()),
    )


def _incidence(state: AllocationState, assignments: Sequence[PartitionAssignment]) -> np.ndarray:
    """Partition × node booleans: which node holds a replica of which partition."""
    out = np.zeros((len(assignments), len(state)), dtype=bool)
    index = state.index
    rows = [k for k, a in enumerate(assignments) for _ in a.nodes]
    cols = [index[n] for a in assignments for n in a.nodes]
    out[rows, cols] = True
    return out


class _Rows:
    """Row bounds collected as rows are added; ``add`` returns the new rows' indices."""

    def __init__(self) -> None:
        self.lower: list[float] = []
        self.upper: list[float] = []

    def add(self, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        first = len(self.lower)
        self.lower.extend(np.asarray(lower, dtype=np.float64).tolist())
        self.upper.extend(np.asarray(upper, dtype=np.float64).tolist())
        return np.arange(first, len(self.lower), dtype=np.int64)


def _count_rows(
    rows: _Rows,
    state: AllocationState,
    heur: np.ndarray,
    fixed: np.ndarray,
    node: np.ndarray,
    active: np.ndarray,
    rack_aware: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Each active node's replica count no further from its capacity share than the planner
    left it, or within rounding of it (module doc, 5)."""
    counts = heur.sum(axis=0)
    cap = np.array(state.capacity, dtype=np.float64)
    live = active & (cap > 0)
    total = int(counts[live].sum())
    share = np.array(target_shares(state, rack_aware=rack_aware, total=total), dtype=np.float64)
    low = np.minimum(np.floor(share + 1e-9), counts)
    high = np.maximum(np.minimum(np.ceil(share - 1e-9), cap), counts)
    const = fixed.sum(axis=0)
    ids = np.flatnonzero(live)
    row_of = np.full(len(state), -1, dtype=np.int64)
    row_of[ids] = rows.add(low[ids] - const[ids], high[ids] - const[ids])
    return row_of[node], np.ones(len(node))


def _disk_rows(
    rows: _Rows,
    state: AllocationState,
    heur: np.ndarray,
    fixed: np.ndarray,
    sizes: np.ndarray,
    part: np.ndarray,
    node: np.ndarray,
    active: np.ndarray,
    soft: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Each active node's bytes under the soft disk limit, or under what the planner left."""
    total = np.array(state.disk_total, dtype=np.float64)
    base = np.array(state.disk_used, dtype=np.float64)
    after = base + sizes @ heur
    limit = np.maximum(soft * total, after)
    const = sizes @ fixed
    ids = np.flatnonzero(active & (total > 0))
    row_of = np.full(len(state), -1, dtype=np.int64)
    row_of[ids] = rows.add(np.full(len(ids), -np.inf), limit[ids] - base[ids] - const[ids])
    return row_of[node], sizes[part]


def _rack_rows(
    rows: _Rows, state: AllocationState, heur: np.ndarray, part: np.ndarray, node: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """At most one replica of a partition per rack, or as many as the planner left there."""
    rack = np.array(state.rack_ids, dtype=np.int64)
    racks = int(rack.max()) + 1 if len(rack) else 1
    key = part * racks + rack[node]
    keys, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    shared = counts >= 2
    held = np.zeros(len(keys), dtype=np.int64)
    np.add.at(held, inverse, heur[part, node].astype(np.int64))
    limit = np.maximum(1, held[shared])
    row_of = np.full(len(keys), -1, dtype=np.int64)
    row_of[shared] = rows.add(np.full(int(shared.sum()), -np.inf), limit)
    return row_of[inverse], np.ones(len(node))


def _csc(
    columns: int, entries: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Column-wise (CSC) arrays from per-column (row, value) entries; row -1 or a zero
    value = no entry."""
    col = np.concatenate([np.arange(columns, dtype=np.int64)] * len(entries))
    row = np.concatenate([r for r, _ in entries])
    val = np.concatenate([v for _, v in entries])
    keep = (row >= 0) & (val != 0)
    col, row, val = col[keep], row[keep], val[keep]
    order = np.lexsort((row, col))
    col, row, val = col[order], row[order], val[order]
    start = np.zeros(columns + 1, dtype=np.int64)
    np.cumsum(np.bincount(col, minlength=columns), out=start[1:])
    return start, row, val
