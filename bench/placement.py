"""Placement benchmark: ``new_ensemble`` and ``replace_bookie`` time per call.

Run ``.venv/bin/python -m bench.placement`` (``--quick`` for a smoke run). For each policy and
each cluster shape (10 / 100 / 1,000 nodes over 1 / 10 / 50 racks; racks never outnumber
nodes) it times E=5, W=3, A=2 requests and prints microseconds per call over several repeats:
the median of the process's CPU time (which a shared, busy machine inflates far less than
wall-clock time) with the fastest and slowest repeat beside it, and the median wall-clock time.
It also prints the quality figures placement exists for: the share of ensembles meeting the
policy strictly, and how evenly nodes are included (coefficient of variation of per-node
inclusion counts, next to what uniform sampling alone would give).

Goal (issue 3): rack-aware ``new_ensemble`` under 50 µs at 1,000 nodes in 50 racks, judged on
the median CPU time per call.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.placement import Adherence, Policy
from trimtab.systems.bookkeeper.placement_setup import make_policy

__all__ = ["main"]

SHAPES = [(10, 1), (10, 10), (100, 1), (100, 10), (100, 50), (1000, 1), (1000, 10), (1000, 50)]
E, W, A = 5, 3, 2


def cluster(nodes: int, racks: int, regions: int = 1) -> dict[str, str]:
    """``nodes`` nodes dealt round-robin over ``racks`` racks, racks over ``regions`` regions."""
    return {
        str(NodeId(f"bk{i}.example:3181")): f"/dc{(i % racks) % regions}/rack{i % racks}"
        for i in range(nodes)
    }


def build(kind: str, where: dict[str, str], seed: int = 1) -> Policy:
    policy = make_policy(
        Config.of(ensemblePlacementPolicy=kind), resolver=where, rng=random.Random(seed)
    )
    policy.on_cluster_changed(where, [])
    return policy


class Spread(NamedTuple):
    """The median of several repeats, with the fastest and the slowest."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        return cls(statistics.median(values), min(values), max(values))

    def __str__(self) -> str:
        return f"{self.median:6.1f} ({self.low:.1f}–{self.high:.1f})"


def per_call_us(call: Callable[[], object], calls: int, repeats: int) -> tuple[Spread, Spread]:
    """(CPU, wall-clock) microseconds per call over ``repeats`` runs of ``calls``."""
    call()  # warm the pools
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(calls):
            call()
        wall.append((time.perf_counter() - start) / calls * 1e6)
        cpu.append((time.process_time() - start_cpu) / calls * 1e6)
    return Spread.of(cpu), Spread.of(wall)


def quality(
    policy: Policy, count: int, sizes: tuple[int, int, int] = (E, W, A)
) -> tuple[float, float, float]:
    """(share of MEETS_STRICT ensembles, CV of per-node inclusion, CV uniform sampling gives)
    over ``count`` ensembles of ``sizes`` = (E, W, A)."""
    strict = 0
    seen: Counter[NodeId] = Counter(dict.fromkeys(policy.view.writable, 0))
    for _ in range(count):
        placed = policy.new_ensemble(*sizes)
        strict += placed.adherence is Adherence.MEETS_STRICT
        seen.update(placed.ensemble)
    counts = list(seen.values())
    mean = statistics.fmean(counts)
    cv = statistics.pstdev(counts) / mean
    uniform = ((1 - sizes[0] / len(counts)) / mean) ** 0.5  # binomial sd / mean
    return strict / count, cv, uniform


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--quick", action="store_true", help="fewer calls, for a smoke run")
    args = parser.parse_args(argv)
    calls, repeats, sample = (300, 3, 500) if args.quick else (3000, 7, 20_000)
    print(
        f"placement benchmark: E={E} W={W} A={A}; µs per call over {repeats} repeats: "
        "median CPU (min–max) / median wall"
    )
    header = (
        f"{'policy':<12}{'nodes':>6}{'racks':>6}  {'new_ensemble':>26}  {'replace_bookie':>26}"
        f"  {'strict':>7}  {'incl. CV':>8} {'(uniform)':>9}"
    )
    print(header)
    print("-" * len(header))
    for kind in ("rackaware", "regionaware", "default"):
        for nodes, racks in SHAPES:
            where = cluster(nodes, racks, regions=3 if kind == "regionaware" and racks >= 3 else 1)
            policy = build(kind, where)
            first = policy.new_ensemble(E, W, A).ensemble

            def new(p: Policy = policy) -> object:
                return p.new_ensemble(E, W, A)

            def swap(p: Policy = policy, ensemble: tuple[NodeId, ...] = first) -> object:
                return p.replace_bookie(E, W, A, ensemble, ensemble[1])

            new_cpu, new_wall = per_call_us(new, calls, repeats)
            rep_cpu, rep_wall = per_call_us(swap, calls, repeats)
            strict, cv, uniform = quality(build(kind, where, seed=2), sample)
            print(
                f"{kind:<12}{nodes:>6}{racks:>6}  {_cell(new_cpu, new_wall):>26}"
                f"  {_cell(rep_cpu, rep_wall):>26}  {strict:>7.1%}  {cv:>8.3f} {uniform:>9.3f}"
            )
    goal = build("rackaware", cluster(1000, 50))
    cpu, wall = per_call_us(lambda: goal.new_ensemble(E, W, A), calls, repeats)
    verdict = "met" if cpu.median < 50 else "NOT met"
    print(
        f"\ngoal: rack-aware new_ensemble < 50 µs at 1,000 nodes / 50 racks, on the median CPU"
        f" time: {cpu.median:.1f} µs CPU (min {cpu.low:.1f}, max {cpu.high:.1f}),"
        f" {wall.median:.1f} µs wall (min {wall.low:.1f}, max {wall.high:.1f}): {verdict}"
    )


def _cell(cpu: Spread, wall: Spread) -> str:
    return f"{cpu} / {wall.median:6.1f}"


if __name__ == "__main__":
    main()
