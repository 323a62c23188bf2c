"""``rebalance --optimal``: the least movement for the plan's goals, proven by a MIP solver.

Goals
    Solve the program of :mod:`trimtab.allocation.optimal_model` (the fewest moves, then the
    fewest bytes, under the hard goals and the balance the fast planner reached) and return
    it as a plan of the same shape as the planner's, with the solver's proof: its status,
    the lower bound on moves it proved and the gap that is left when the time runs out.

Solver
    HiGHS (``highspy``, MIT), an optional extra (``pip install 'trimtab[optimal]'``):
    imported only when a plan is solved, so the engine stays plain Python + NumPy for
    everyone else. HiGHS rather than OR-Tools CP-SAT, measured on a 2,000-replica instance
    (see docs/architecture.md): HiGHS solved it at the root of its LP relaxation, which is
    nearly integral for this transportation-like program, while CP-SAT needs more time on
    it and pins protobuf below 7, which trimtab's gRPC code cannot use.

Algorithm
    The planner's result is passed as the starting solution, so a time limit still returns a
    plan at least as good as the planner's. The proven bound on the objective
    (``moves + bytes/(S+1)``, a fraction below one move for the bytes) gives the bound on
    moves: ``ceil(bound - 1)``, and never less than the replicas on nodes they must leave
    (when the time runs out before the solver proves any bound). Moves are listed by their
    net effect, one per node that lost a replica, paired with a node that gained one,
    keeping the replica's place in the list (the preferred leader's slot).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trimtab.allocation.balance_plan import (
    CORDON,
    COUNTS,
    DECOMMISSION,
    DISK_FULL,
    RACK,
    UNAVAILABLE,
    PlannedMove,
    RebalancePlan,
)
from trimtab.allocation.health import NodeStatus, NodeView
from trimtab.allocation.lower_bound import planning_state
from trimtab.allocation.model import PartitionAssignment, Replica
from trimtab.allocation.optimal_model import MipArrays, build_model
from trimtab.allocation.replica_constraints import disk_ratios
from trimtab.allocation.shares import target_balance
from trimtab.allocation.state import AllocationState
from trimtab.cluster import ClusterState, NodeId
from trimtab.config.redpanda import AllocationConfig, BalancerMode
from trimtab.errors import TrimtabError

__all__ = ["INSTALL_HINT", "OptimalPlan", "plan_optimal"]

INSTALL_HINT = "pip install 'trimtab[optimal]'"


@dataclass(frozen=True, slots=True)
class OptimalPlan:
    """The solver's plan and its proof.

    ``status`` is ``optimal`` (``moves`` is the least possible and ``bytes`` the least among
    plans of that many moves) or ``time limit`` (the best plan found; at least
    ``bound_moves`` moves are needed, ``gap`` = (moves - bound)/moves is left open).
    """

    plan: RebalancePlan
    status: str
    moves: int
    bytes: int
    bound_moves: int
    gap: float
    seconds: float
    solver: str
    columns: int
    rows: int


def plan_optimal(
    cluster: ClusterState,
    assignments: Iterable[PartitionAssignment],
    heuristic: RebalancePlan,
    config: AllocationConfig | None = None,
    *,
    health: Iterable[NodeStatus] = (),
    drain: Collection[NodeId] = (),
    now: float | None = None,
    mode: str | None = None,
    rack_aware: bool | None = None,
    time_limit_s: float = 60.0,
    evict: Collection[tuple[str, int, NodeId]] = (),
) -> OptimalPlan:
    """The least-movement plan for the same inputs the planner was given (its ``heuristic``
    result sets the balance to keep); raises ``TrimtabError`` when HiGHS is not installed.
    ``evict`` are the replicas the planner was told must leave their node (an emptied log
    dir's that its broker's other dirs do not take): the program takes that split as given,
    it does not model log dirs."""
    highspy = _solver()
    cfg = config or AllocationConfig()
    held = sorted(assignments, key=lambda a: (a.topic, a.partition))
    view, state = planning_state(cluster, held, cfg, health=health, drain=drain, now=now)
    chosen = BalancerMode(mode or cfg.balancer_mode)
    emptied = set(view.draining)
    if chosen is BalancerMode.CONTINUOUS:
        emptied |= view.timed_out
    after = {(a.topic, a.partition): a for a in heuristic.after}
    final = [after.get((a.topic, a.partition), a) for a in held]
    aware = cfg.enable_rack_awareness if rack_aware is None else rack_aware
    soft, _ = disk_ratios(cfg)
    row = {(a.topic, a.partition): k for k, a in enumerate(held)}
    leave = [
        (row[(t, p)], state.index[n]) for t, p, n in evict if (t, p) in row and n in state.index
    ]
    model = build_model(
        state, view, held, final, emptied=emptied, soft=soft, rack_aware=aware, evicted=leave
    )
    began = time.perf_counter()
    values, status, bound, version = _solve(highspy, model, time_limit_s)
    seconds = time.perf_counter() - began
    chosen_nodes = _chosen(model, values, len(held))
    why = _Reasons(view, heuristic, state, aware, {(t, p, n) for t, p, n in evict})
    plan = _plan(state, heuristic, held, chosen_nodes, why)
    moves = len(plan.moves)
    # the replicas that must move, and the planner's own bound, hold even when the solver
    # proved nothing in its time
    bound_moves = max(model.forced, heuristic.lower_bound_moves)
    if status == "optimal":
        bound_moves = moves
    elif math.isfinite(bound):
        bound_moves = max(bound_moves, math.ceil(bound - 1 - 1e-9))
    return OptimalPlan(
        plan=plan,
        status=status,
        moves=moves,
        bytes=plan.bytes_moved,
        bound_moves=min(bound_moves, moves),
        gap=(moves - min(bound_moves, moves)) / moves if moves else 0.0,
        seconds=seconds,
        solver=f"HiGHS {version}",
        columns=model.columns,
        rows=model.rows,
    )


def _solver() -> Any:
    """The highspy module, imported here only (the optional extra)."""
    try:
        import highspy  # the optional extra: only --optimal needs it
    except ImportError:
        raise TrimtabError(
            f"--optimal needs the HiGHS solver, which is not installed: {INSTALL_HINT}"
        ) from None
    return highspy


def _quiet_highs(highspy: Any) -> Any:
    """A ``Highs`` object; its constructor prints a banner on the process's standard output
    (from C++, the first time), which would corrupt ``--json``: it goes to /dev/null."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with Path(os.devnull).open("wb") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    return h


def _solve(
    highspy: Any, model: MipArrays, time_limit_s: float
) -> tuple[np.ndarray, str, float, str]:
    """HiGHS on ``model`` from the planner's solution: (values, status, proven bound,
    HiGHS version)."""
    h = _quiet_highs(highspy)
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(time_limit_s))
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 1e-7)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = model.columns, model.rows
    lp.col_cost_ = model.cost
    lp.offset_ = model.offset
    lp.col_lower_ = np.zeros(model.columns)
    lp.col_upper_ = np.ones(model.columns)
    lp.row_lower_ = np.where(np.isinf(model.row_lower), -highspy.kHighsInf, model.row_lower)
    lp.row_upper_ = model.row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = model.col_start
    lp.a_matrix_.index_ = model.row_index
    lp.a_matrix_.value_ = model.value
    lp.integrality_ = [highspy.HighsVarType.kInteger] * model.columns
    h.passModel(lp)
    start = highspy.HighsSolution()
    start.col_value = model.start.tolist()
    h.setSolution(start)
    h.run()
    found = h.getModelStatus()
    statuses = highspy.HighsModelStatus
    if found == statuses.kOptimal:
        status = "optimal"
    elif found == statuses.kTimeLimit:
        status = "time limit"
    else:
        raise TrimtabError(f"the HiGHS solver stopped with {h.modelStatusToString(found)}")
    info = h.getInfo()
    values = np.asarray(h.getSolution().col_value, dtype=np.float64)
    return values, status, float(info.mip_dual_bound), str(h.version())


def _chosen(model: MipArrays, values: np.ndarray, partitions: int) -> list[list[int]]:
    """The node indices each partition is on in the solution (movable partitions only)."""
    on = values > 0.5
    out: list[list[int]] = [[] for _ in range(partitions)]
    for p, n in zip(model.part[on].tolist(), model.node[on].tolist(), strict=True):
        out[p].append(n)
    return out


class _Reasons:
    """Why a replica leaves a node: the planner's reasons, by the node it leaves."""

    def __init__(
        self,
        view: NodeView,
        heuristic: RebalancePlan,
        state: AllocationState,
        rack: bool,
        evicted: Collection[tuple[str, int, NodeId]] = frozenset(),
    ) -> None:
        self.view, self.full, self.state, self.rack = view, heuristic.full, state, rack
        self.evicted = evicted

    def of(self, a: PartitionAssignment, source: NodeId) -> str:
        if (a.topic, a.partition, source) in self.evicted:
            return CORDON
        if source in self.view.draining:
            return DECOMMISSION
        if source in self.view.timed_out:
            return UNAVAILABLE
        if source in self.full:
            return DISK_FULL
        if self.rack:
            racks = [self.state.racks[self.state.index[n]] for n in a.nodes]
            if racks.count(self.state.racks[self.state.index[source]]) > 1:
                return RACK
        return COUNTS


def _plan(
    state: AllocationState,
    heuristic: RebalancePlan,
    held: list[PartitionAssignment],
    chosen: list[list[int]],
    why: _Reasons,
) -> RebalancePlan:
    """The solution as a plan: changed partitions before and after, and their moves."""
    before, after, moves = [], [], []
    with state.transaction() as tx:
        for a, nodes in zip(held, chosen, strict=True):
            target = {state.ids[i] for i in nodes}
            if not nodes or target == set(a.nodes):
                continue
            gained = sorted(target - set(a.nodes), key=state.index.__getitem__)
            tx.remove(a)
            replicas, pairs = [], iter(gained)
            for r in a.replicas:
                if r.node in target:
                    replicas.append(r)
                    continue
                come = next(pairs)
                replicas.append(Replica(come, state.least_loaded_core(state.index[come])))
                reason = why.of(a, r.node)
                moves.append(
                    PlannedMove(
                        a.topic, a.partition, r.node, come, reason, a.size_bytes, reason != COUNTS
                    )
                )
            new = PartitionAssignment(a.topic, a.partition, tuple(replicas), a.size_bytes)
            tx.add(new)
            before.append(a)
            after.append(new)
        pinned = frozenset(state.index[n] for n in heuristic.full if n in state.index)
        balance_after = target_balance(state, rack_aware=why.rack, pinned=pinned)
        per_node = state.per_node()
    return RebalancePlan(
        cluster=heuristic.cluster,
        mode=heuristic.mode,
        moves=tuple(moves),
        before=tuple(before),
        after=tuple(after),
        cancelled=heuristic.cancelled,
        unfixable=(),
        unavailable=heuristic.unavailable,
        full=heuristic.full,
        balance_before=heuristic.balance_before,
        balance_after=balance_after,
        per_node=per_node,
        lower_bound_moves=heuristic.lower_bound_moves,
        lower_bound_bytes=heuristic.lower_bound_bytes,
        lower_bound_terms=heuristic.lower_bound_terms,
        lower_bound_all_moves=heuristic.lower_bound_all_moves,
        balancing=heuristic.balancing,
        diversity_lowered=heuristic.diversity_lowered,
    )
