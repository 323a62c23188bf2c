"""Zone-aware placement benchmark: µs per new_ensemble / replace_bookie, adherence and spread.

Nodes are dealt round-robin over zones, then over upgrade domains inside each zone; E=6 W=3
A=2 (strict zone-aware placement needs E a multiple of W). Also times ``replace_to_adhere`` on
an ensemble whose members all sit in one zone. ``python -m bench.zoneaware [--quick]``.
"""

from __future__ import annotations

import argparse
import random

from bench.placement import per_call_us, quality
from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.placement.catalog import Policy
from trimtab.systems.bookkeeper.placement_setup import make_policy

__all__ = ["main"]

SHAPES = [(12, 3, 2), (100, 3, 5), (100, 5, 4), (1000, 3, 10), (1000, 5, 10)]
E, W, A = 6, 3, 2


def cluster(nodes: int, zones: int, domains: int) -> dict[str, str]:
    return {
        str(NodeId(f"bk{i}.example:3181")): f"/zone{i % zones}/ud{(i // zones) % domains}"
        for i in range(nodes)
    }


def build(where: dict[str, str], seed: int = 1) -> Policy:
    policy = make_policy(
        Config.of(ensemblePlacementPolicy="zoneaware"), resolver=where, rng=random.Random(seed)
    )
    policy.on_cluster_changed(where, [])
    return policy


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--quick", action="store_true", help="fewer calls, for a smoke run")
    args = parser.parse_args(argv)
    calls, repeats, sample = (100, 3, 300) if args.quick else (1000, 5, 5000)
    print(f"zone-aware benchmark: E={E} W={W} A={A}; median CPU µs per call over {repeats} runs")
    header = (
        f"{'nodes':>6}{'zones':>6}{'UDs':>5}  {'new':>8}  {'replace':>8}  {'to adhere':>9}"
        f"  {'strict':>7}  {'incl. CV':>8} {'(uniform)':>9}"
    )
    print(header)
    print("-" * len(header))
    for nodes, zones, domains in SHAPES:
        where = cluster(nodes, zones, domains)
        policy = build(where)
        first = policy.new_ensemble(E, W, A).ensemble
        one_zone = [n for n, loc in where.items() if loc.startswith("/zone0/")][:E]

        def new(p: Policy = policy) -> object:
            return p.new_ensemble(E, W, A)

        def swap(p: Policy = policy, e: tuple[NodeId, ...] = first) -> object:
            return p.replace_bookie(E, W, A, e, e[1])

        def fix(p: Policy = policy, e: list[str] = one_zone) -> object:
            return p.replace_to_adhere(len(e), W, A, e)

        new_us, _ = per_call_us(new, calls, repeats)
        swap_us, _ = per_call_us(swap, calls, repeats)
        fix_us, _ = per_call_us(fix, max(1, calls // 10), repeats)
        strict, cv, uniform = quality(build(where, seed=2), sample, (E, W, A))
        print(
            f"{nodes:>6}{zones:>6}{domains:>5}  {new_us.median:>8.1f}  {swap_us.median:>8.1f}"
            f"  {fix_us.median:>9.1f}  {strict:>7.1%}  {cv:>8.3f} {uniform:>9.3f}"
        )


if __name__ == "__main__":
    main()
