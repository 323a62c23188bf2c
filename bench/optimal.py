"""The fast planner against the exact optimum (``rebalance --optimal``), over seeded instances.

    .venv/bin/python -m bench.optimal                      # the family, then one larger instance
    .venv/bin/python -m bench.optimal --time-limit 30 --large 0     # the family only

Instances are those of :mod:`bench.rebalance` (nodes of 4 to 64 cores in 20 racks, RF 3
partitions of 0.2–1.8 GB placed by the constraint allocator, about half of every disk), at
sizes from 600 to 20,000 replicas: node 0 down for an hour, nodes 1 and 2 pushed to 86 % and
88 % of their disks, one ``continuous`` plan (no move budget), rack-aware. The fast planner
(:func:`~trimtab.allocation.planner.plan_rebalance`) plans; HiGHS then solves the same plan
exactly (the fewest moves, then bytes, under the same hard goals and no node further from its
capacity share than the planner left it). Printed per instance: both plans' moves, bytes and
time, the solver's status and the planner's gap to the optimum (moves, bytes). On the larger
instance (``--large`` partitions) the solver stops at the time limit: its proven lower bound
on moves is printed instead.
"""

from __future__ import annotations

import argparse
import os
import time

from bench.rebalance import CONFIG, GB, NOW, setup
from trimtab.allocation.health import NodeStatus
from trimtab.allocation.optimal import plan_optimal
from trimtab.allocation.planner import plan_rebalance
from trimtab.cluster import NodeHealth, NodeId

FAMILY = ((12, 200), (12, 667), (30, 2000), (60, 3334), (60, 6667))


def one(nodes: int, partitions: int, seed: int, limit: float) -> dict[str, object]:
    """Plan one instance both ways; the figures of the table's row."""
    cluster, held, _ = setup(nodes, partitions, seed)
    health = [NodeStatus(NodeId("0"), NodeHealth.DOWN, down_since=NOW - 3600)]
    common = {"health": health, "now": NOW, "mode": "continuous", "rack_aware": True}
    t = time.perf_counter()
    fast = plan_rebalance(cluster, held, CONFIG, max_moves=10**9, **common)  # type: ignore[arg-type]
    fast_s = time.perf_counter() - t
    t = time.perf_counter()
    best = plan_optimal(cluster, held, fast, CONFIG, time_limit_s=limit, **common)  # type: ignore[arg-type]
    return {
        "nodes": nodes,
        "replicas": sum(len(a.replicas) for a in held),
        "fast_moves": len(fast.moves),
        "fast_gb": fast.bytes_moved / GB,
        "fast_s": fast_s,
        "opt_moves": best.moves,
        "opt_gb": best.bytes / GB,
        "bound": best.bound_moves,
        "status": best.status,
        "opt_s": time.perf_counter() - t,
        "columns": best.columns,
    }


def row(r: dict[str, object]) -> str:
    fm, om, bound = int(r["fast_moves"]), int(r["opt_moves"]), int(r["bound"])  # type: ignore[call-overload]
    fb, ob = float(r["fast_gb"]), float(r["opt_gb"])  # type: ignore[arg-type]
    gap_m = (fm - bound) / bound if bound else 0.0
    # the bytes gap is known only when the solver proved its plan optimal
    gap_b = f"{(fb - ob) / ob:>7.2%}" if ob and r["status"] == "optimal" else f"{'–':>7}"
    return (
        f"| {r['nodes']:>5} | {r['replicas']:>7,} | {fm:>6,} | {fb:>8,.0f} | {r['fast_s']:>6.2f} "
        f"| {om:>6,} | {bound:>6,} | {ob:>8,.0f} | {r['status']:<10} | {r['opt_s']:>7.1f} "
        f"| {gap_m:>7.2%} | {gap_b} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--large", type=int, default=20_000, help="partitions (0: none)")
    parser.add_argument("--large-nodes", type=int, default=100)
    parser.add_argument("--large-only", action="store_true", help="skip the family")
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"load average {load:.1f} on {os.cpu_count()} CPUs; solver time limit {args.time_limit:g} s"
    )
    print(
        "| nodes | replicas | fast moves | fast GB | fast s | opt moves | bound | opt GB "
        "| status | opt s | moves gap | bytes gap |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|:--|---:|---:|---:|")
    sizes = ([] if args.large_only else list(FAMILY)) + (
        [(args.large_nodes, args.large)] if args.large else []
    )
    for nodes, partitions in sizes:
        print(row(one(nodes, partitions, args.seed, args.time_limit)), flush=True)
    print(
        "moves gap = (fast moves - proven bound) / bound; bytes gap = (fast bytes - optimal "
        "bytes) / optimal bytes, when optimal"
    )


if __name__ == "__main__":
    main()
