"""Partition allocation benchmark: time per replica and the balance reached, per mode.

    .venv/bin/python -m bench.allocation                 # 1,000,000 replicas on 1,000 nodes
    .venv/bin/python -m bench.allocation --partitions 33334 --nodes 100   # a quick look

Cluster: ``--nodes`` nodes of mixed core counts (4 to 64) in 20 racks, disks 30–90 % full,
Redpanda's current defaults (1,000 partitions per core, no core-0 reserve). Workload:
``--partitions`` partitions of replication factor 3 in topics of log-uniform size (1 to
~3,000 partitions), seeded. Figures: CPU and wall time per replica (the machine may be shared:
CPU time is the steadier figure), the balance figure N·Σx²/(Σx)² with x = replicas/capacity,
the largest node deviation from its capacity share, core spread, and rack spread. The
constraint allocator's rows run ``--repeat`` times: the row is the median run by CPU time, with
the fastest and slowest CPU time per replica beside it.

Also printed: the multi-pick bias of weighted rendezvous hashing (Ceph's example and this
cluster), exactly and measured, with and without the correction; Redpanda's
test_counts_rebalancing scenario; and DRF's paper example. Anchors: Cruise Control plans at
0.4–2 ms per replica; the goal for the constraint allocator is 10 µs per replica.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from trimtab.allocation import (
    AllocationRequest,
    AllocationState,
    ConstraintAllocator,
    RendezvousAllocator,
    RfcAllocator,
    plan_allocations,
)
from trimtab.allocation.base import Allocator
from trimtab.allocation.drf import Resources, drf
from trimtab.allocation.multipick import corrected_weights, fair_shares, inclusion_probabilities
from trimtab.allocation.rendezvous import scores, stable_hash
from trimtab.cluster import Capacity, ClusterState, Node, NodeId
from trimtab.config import AllocationConfig

CORES = (4, 8, 8, 16, 16, 32, 64)
RACKS = 20
TB = 10**12
CONFIG = AllocationConfig(profile="redpanda")


def cluster(nodes: int, seed: int) -> ClusterState:
    rng = random.Random(seed)
    out = []
    for i in range(nodes):
        total = rng.choice((4, 8, 16)) * TB
        out.append(
            Node(
                id=NodeId(f"broker-{i:04d}"),
                location=f"/dc1/rack{i % RACKS:02d}",
                capacity=Capacity(
                    cores=rng.choice(CORES),
                    memory_bytes=rng.choice((64, 128, 256)) * 2**30,
                    disk_total_bytes=total,
                    disk_free_bytes=int(total * rng.uniform(0.1, 0.7)),
                    nic_bps=25 * 10**9,
                ),
            )
        )
    return ClusterState.of("bench", out)


def workload(partitions: int, seed: int) -> list[AllocationRequest]:
    rng = random.Random(seed)
    requests: list[AllocationRequest] = []
    left = partitions
    while left:
        size = min(left, int(10 ** rng.uniform(0, 3.5)))
        requests.append(
            AllocationRequest(topic=f"topic-{len(requests)}", partitions=size, replication_factor=3)
        )
        left -= size
    return requests


@dataclass
class Figures:
    replicas: int
    cpu_s: float
    wall_s: float
    balance: float
    worst_deviation: float  # largest |count − share| / share over active nodes
    core_spread: int  # largest max − min of core replica counts on one node
    rack_shortfalls: int  # partitions with fewer distinct racks than min(RF, racks)

    def row(self, name: str) -> str:
        per = 1e6 / max(1, self.replicas)
        return (
            f"{name:<34} {self.replicas:>9,} {self.cpu_s * per:>8.2f} {self.wall_s * per:>8.2f} "
            f"{self.balance:>10.6f} {self.worst_deviation:>8.2%} {self.core_spread:>5} "
            f"{self.rack_shortfalls:>6}"
        )


HEADER = (
    f"{'mode':<34} {'replicas':>9} {'cpu µs':>8} {'wall µs':>8} {'balance':>10} "
    f"{'max dev':>8} {'cores':>5} {'racks':>6}  {'cpu min–max':>13}"
)


def measure(
    run: Callable[[], tuple[Callable[[], AllocationState], list[tuple[NodeId, ...]]]],
) -> Figures:
    """Time ``run``, which returns the replica sets it made and how to get the state they
    leave (called after the clock stops)."""
    cpu, wall = time.process_time(), time.perf_counter()
    final, sets = run()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    state = final()
    live = [i for i in range(len(state)) if state.active[i]]
    total = sum(state.counts[i] for i in live)
    whole = sum(state.capacity[i] for i in live)
    worst = max(
        abs(state.counts[i] - total * state.capacity[i] / whole)
        / (total * state.capacity[i] / whole)
        for i in live
    )
    racks = len(set(state.racks))
    short = sum(
        1
        for nodes in sets
        if len({state.racks[state.index[n]] for n in nodes}) < min(len(nodes), racks)
    )
    return Figures(
        replicas=sum(len(s) for s in sets),
        cpu_s=cpu,
        wall_s=wall,
        balance=state.balance(),
        worst_deviation=worst,
        core_spread=max(max(w) - min(w) for w in state.weights),
        rack_shortfalls=short,
    )


def median_of(repeat: int, run: Callable[[], Figures]) -> tuple[Figures, str]:
    """The median of ``repeat`` runs by CPU time, and the fastest–slowest CPU µs per replica."""
    runs = sorted((run() for _ in range(repeat)), key=lambda f: f.cpu_s)
    fastest, slowest = (f.cpu_s * 1e6 / max(1, f.replicas) for f in (runs[0], runs[-1]))
    return runs[len(runs) // 2], f"{fastest:.2f}–{slowest:.2f}"


def run_allocator(
    make: Callable[[AllocationState], Allocator],
    nodes: ClusterState,
    requests: list[AllocationRequest],
) -> Figures:
    def go() -> tuple[Callable[[], AllocationState], list[tuple[NodeId, ...]]]:
        state = AllocationState.of(nodes, CONFIG)
        alloc = make(state)
        return (lambda: state), [a.nodes for r in requests for a in alloc.allocate(r)]

    return measure(go)


def run_plan(nodes: ClusterState, requests: list[AllocationRequest], rack_aware: bool) -> Figures:
    """plan_allocations: allocation, evening out, leader order, and the summary."""

    def go() -> tuple[Callable[[], AllocationState], list[tuple[NodeId, ...]]]:
        plan = plan_allocations(nodes, requests, CONFIG, rack_aware=rack_aware, seed=1)
        return (
            lambda: AllocationState.of(nodes, CONFIG, plan.assignments),
            [a.nodes for a in plan.assignments],
        )

    return measure(go)


def bias_table(nodes: ClusterState) -> None:
    print("\nMulti-pick bias of weighted rendezvous hashing (picks / fair share k·w/Σw)")
    weights = [1.0] * 8 + [4.0] * 2
    fair = fair_shares(weights, 3)
    keys = 200_000
    hashes = np.array([stable_hash(f"osd.{i}") for i in range(10)], dtype=np.uint64)
    key_hashes = [stable_hash(f"pg-{i}") for i in range(keys)]
    for label, w in (
        ("plain weights", weights),
        ("corrected", list(corrected_weights(weights, 3))),
    ):
        exact = inclusion_probabilities(w, 3) / fair
        top = np.argsort(-scores(key_hashes, hashes, np.array(w)), axis=1)[:, :3]
        seen = np.bincount(top.ravel(), minlength=10) / keys / fair
        print(
            f"  Ceph example 1×8 + 4×2, RF3, {label:<13}: heavy {seen[-1]:.4f} (exact "
            f"{exact[-1]:.4f}), light {seen[0]:.4f} (exact {exact[0]:.4f}); 200,000 keys"
        )
    capacity = [n.capacity.cores * CONFIG.topic_partitions_per_shard for n in nodes]
    ratio = inclusion_probabilities(capacity, 3) / fair_shares(capacity, 3)
    corrected = inclusion_probabilities(corrected_weights(capacity, 3), 3) / fair_shares(
        capacity, 3
    )
    print(
        f"  this cluster ({len(capacity)} nodes, 4–64 cores), RF3: plain {ratio.min():.4f}–"
        f"{ratio.max():.4f}, corrected {corrected.min():.6f}–{corrected.max():.6f} (exact)"
    )


def small_cluster(cores: list[int]) -> ClusterState:
    """Nodes n00, n01… of the given core counts, one rack, 1 TB disks."""
    return ClusterState.of(
        "sim",
        (
            Node(
                id=NodeId(f"n{i:02d}"),
                location="/dc1/rack0",
                capacity=Capacity(cores=c, memory_bytes=2**34, disk_total_bytes=TB, nic_bps=10**10),
            )
            for i, c in enumerate(cores)
        ),
    )


def join_scenario() -> None:
    make_cluster = small_cluster
    rng = random.Random(0)
    first = [
        AllocationRequest(topic=f"topic_{n}", partitions=rng.randint(20, 100), replication_factor=3)
        for n in range(10)
    ]
    before = plan_allocations(make_cluster([4, 4, 4]), first, CONFIG)
    after = plan_allocations(
        make_cluster([4, 4, 4, 4, 8]), [], CONFIG, existing=before.assignments, rebalance=True
    )
    total = sum(after.per_node.values())
    whole = sum(after.capacity.values())
    worst = max(
        abs(c - total * after.capacity[n] / whole) / (total * after.capacity[n] / whole)
        for n, c in after.per_node.items()
    )
    print(
        "\nRedpanda test_counts_rebalancing (3×4 cores + 10 topics, then a 4- and an 8-core node"
        f" join): {after.moved_replicas} of {total} replicas moved, worst node off its share by"
        f" {worst:.2%} (limit 1 %), balance {after.balance:.6f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=333_334)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs of the constraint allocator rows (the median shown, with min and max)",
    )
    args = parser.parse_args()
    nodes = cluster(args.nodes, args.seed)
    requests = workload(args.partitions, args.seed)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{args.nodes} nodes ({sum(n.capacity.cores for n in nodes):,} cores, {RACKS} racks), "
        f"{args.partitions:,} RF3 partitions in {len(requests)} topics; "
        f"load average {load:.1f} on {os.cpu_count()} CPUs at start\n"
    )
    print(HEADER)
    rows: list[tuple[str, Callable[[], Figures]]] = [
        ("rfc (round robin)", lambda: run_allocator(RfcAllocator, nodes, requests)),
        (
            "constraints (allocator only)",
            lambda: run_allocator(
                lambda s: ConstraintAllocator.from_config(s, CONFIG, rng=random.Random(1)),
                nodes,
                requests,
            ),
        ),
        (
            "constraints rack-aware (allocator)",
            lambda: run_allocator(
                lambda s: ConstraintAllocator.from_config(
                    s, CONFIG, rng=random.Random(1), rack_aware=True
                ),
                nodes,
                requests,
            ),
        ),
        ("constraints plan (+even out)", lambda: run_plan(nodes, requests, False)),
        ("constraints plan, rack-aware", lambda: run_plan(nodes, requests, True)),
        ("rendezvous (corrected)", lambda: run_allocator(RendezvousAllocator, nodes, requests)),
        (
            "rendezvous rack-aware",
            lambda: run_allocator(
                lambda s: RendezvousAllocator(s, rack_aware=True), nodes, requests
            ),
        ),
    ]
    sample = workload(max(1, args.partitions // 200), args.seed + 1)
    rows.append(
        (
            f"constraints spec path ({sum(r.partitions for r in sample):,} p.)",
            lambda: run_allocator(
                lambda s: ConstraintAllocator.from_config(
                    s, CONFIG, rng=random.Random(1), fast=False
                ),
                nodes,
                sample,
            ),
        )
    )
    for name, run in rows:
        if name.startswith("constraints") and "spec" not in name and args.repeat > 1:
            figures, spread = median_of(args.repeat, run)
            print(f"{figures.row(name)}  {spread:>13}", flush=True)
        else:
            print(run().row(name), flush=True)
    if args.repeat > 1:
        print(f"(rows with a min–max: the median of {args.repeat} runs by CPU time)")
    bias_table(nodes)
    join_scenario()
    paper = drf(
        Resources(cores=9, memory_bytes=18 * 10**9),
        {
            "A": Resources(cores=1, memory_bytes=4 * 10**9),
            "B": Resources(cores=3, memory_bytes=10**9),
        },
    )
    print(f"\nDRF, the paper's example (9 CPU, 18 GB; ⟨1, 4 GB⟩, ⟨3, 1 GB⟩): {dict(paper.tasks)}")
    shares = ", ".join(f"{k} {v:.3f}" for k, v in paper.dominant_shares.items())
    print(f"  dominant shares {shares}")
    if not math.isnan(load):
        print(f"\nload average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
