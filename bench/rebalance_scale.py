"""Partition balancer at scale: the continuous pass from an unbalanced start, with and without
topic-aware balancing.

    .venv/bin/python -m bench.rebalance_scale                               # 200 nodes, 100,000
    .venv/bin/python -m bench.rebalance_scale --nodes 1000 --replicas 1000000   # issue 40's size

Cluster: ``--nodes`` nodes of 4 to 64 cores (mixed, as :mod:`bench.rebalance`) in 20 racks,
RF3 partitions in topics of log-uniform size, each replica set drawn uniformly at random
among all nodes (so counts ignore capacity: an 8-core node holds as many as a 64-core one, and
no topic is spread in proportion to capacity). Nothing is down, drained or full: the plan is
the count-balancing pass alone (``--mode continuous``, no move budget).

The same instance is planned twice, topic-aware (the default) and with
``topic_aware = false`` (``--no-topic-balance``). Figures: wall and CPU time of each, the
time ratio (issue 40's goal: at most 2), moves against the balancing lower bound
(:func:`trimtab.allocation.lower_bound.lower_bounds`), the balance reached, and the topic
spread (replicas above their node's topic band ⌈q⌉) before and after.
"""

from __future__ import annotations

import argparse
import os
import random
import time

from bench.allocation import workload
from bench.rebalance import CONFIG, inventory, nodes
from trimtab.allocation import PartitionAssignment, Replica
from trimtab.allocation.planner import plan_rebalance
from trimtab.cluster import ClusterState, NodeId


def setup(count: int, replicas: int, seed: int) -> tuple[ClusterState, list[PartitionAssignment]]:
    """Nodes of mixed cores; RF3 partitions whose replica sets are drawn uniformly."""
    specs = nodes(count, seed)
    cluster = inventory(specs, [0] * count)
    rng = random.Random(seed + 1)
    held = []
    for request in workload(replicas // 3, seed):
        for p in range(request.partitions):
            chosen = rng.sample(range(count), 3)
            reps = tuple(Replica(NodeId(str(i)), rng.randrange(specs[i][0])) for i in chosen)
            held.append(PartitionAssignment(request.topic, p, reps))
    return cluster, held


def run(
    cluster: ClusterState, held: list[PartitionAssignment], topic_aware: bool
) -> tuple[float, float]:
    cfg = CONFIG.__class__(profile="redpanda", topic_aware=topic_aware)
    wall, cpu = time.perf_counter(), time.process_time()
    plan = plan_rebalance(cluster, held, cfg, mode="continuous", max_moves=10**9)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    b = plan.balancing
    spread = (
        f"topic spread {b.topic_spread_before:,} → {b.topic_spread_after:,}"
        if b is not None and b.topic_aware
        else ""
    )
    name = "topic-aware" if topic_aware else "counts only"
    print(
        f"{name:<12} {wall:8.1f} s wall {cpu:8.1f} s CPU  {len(plan.moves):>9,} moves / "
        f"{plan.lower_bound_moves:,} lower bound  balance {plan.balance_before:.6f} → "
        f"{plan.balance_after:.6f}  {spread}"
    )
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--replicas", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    cluster, held = setup(args.nodes, args.replicas, args.seed)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{args.nodes:,} nodes, {3 * len(held):,} replicas in {len(held):,} partitions, "
        f"replica sets at random; load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    plain = run(cluster, held, topic_aware=False)
    aware = run(cluster, held, topic_aware=True)
    print(
        f"time ratio topic-aware / counts only: {aware[0] / max(plain[0], 1e-9):.2f} wall, "
        f"{aware[1] / max(plain[1], 1e-9):.2f} CPU (goal ≤ 2)"
    )


if __name__ == "__main__":
    main()
