"""``trimtab rebalance --optimal``: the solver's proof beside the fast planner's figures.

The options and the printing of :func:`trimtab.allocation.optimal.plan_optimal`, kept out of
:mod:`trimtab.cli.rebalance` so that the command's module stays about reading inputs and
writing documents. The documents (reassignment, rollback, ``--json``) are those of the
optimal plan; the ``--json`` document gains an ``optimal`` object with the proof.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from trimtab._format import plural
from trimtab.allocation.balance_plan import RebalancePlan
from trimtab.allocation.optimal import OptimalPlan
from trimtab.cli._common import out

__all__ = ["OptimalFlag", "TimeLimitOption", "print_proof", "proof_document"]

OptimalFlag = Annotated[
    bool,
    typer.Option(
        "--optimal",
        help="Solve the plan exactly (fewest moves, then bytes) with the HiGHS MIP solver: "
        "pip install 'trimtab\\[optimal]'.",
    ),
]
TimeLimitOption = Annotated[
    float,
    typer.Option(
        "--time-limit",
        min=0.1,
        help="Seconds the solver may take with --optimal; then its best plan and bound.",
    ),
]


def proof_document(proof: OptimalPlan, heuristic: RebalancePlan) -> dict[str, Any]:
    """The ``optimal`` object of ``--json``: the solver's status, bound and gap, and the
    fast planner's figures for comparison."""
    return {
        "status": proof.status,
        "solver": proof.solver,
        "seconds": round(proof.seconds, 3),
        "moves": proof.moves,
        "bytes": proof.bytes,
        "lower_bound_moves": proof.bound_moves,
        "gap": proof.gap,
        "heuristic_moves": len(heuristic.moves),
        "heuristic_bytes": heuristic.bytes_moved,
        "heuristic_balance_after": heuristic.balance_after,
        "variables": proof.columns,
        "constraints": proof.rows,
    }


def print_proof(proof: OptimalPlan, heuristic: RebalancePlan) -> None:
    """One paragraph under the plan: the proof, then how far the fast planner was."""
    if proof.status == "optimal":
        head = (
            f"[bold]optimal[/] ({proof.solver}, {proof.seconds:.1f} s): "
            f"{plural(proof.moves, 'move')} is the least possible, "
            f"{proof.bytes:,} bytes the least for that many moves"
        )
    else:
        head = (
            f"[bold]time limit[/] ({proof.solver}, {proof.seconds:.1f} s): best plan "
            f"{plural(proof.moves, 'move')} ({proof.bytes:,} bytes); at least "
            f"{proof.bound_moves:,} needed (gap {proof.gap:.1%})"
        )
    out.print(head, highlight=False)
    fast = len(heuristic.moves)
    extra = f" ({fast - proof.moves:+,} moves)" if fast != proof.moves else " (as few)"
    out.print(
        f"fast planner: {plural(fast, 'move')}, {heuristic.bytes_moved:,} bytes{extra}; "
        f"balance {heuristic.balance_after:.6f}, optimal plan {proof.plan.balance_after:.6f}",
        highlight=False,
    )
