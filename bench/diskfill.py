"""Disk-fill benchmark: how full each cluster gets before its first node turns read-only.

Run ``.venv/bin/python -m bench.diskfill`` (``--quick``: the seed cluster only). For (a) the
seed's six nodes (100/100/200/200/300/100 GB, default policy, E3/W3/A2) and (b) a 60-node fleet
of 4/8/16 TB disks in three racks (rack-aware, E3/W2/A2) it compares weights off, disk weights
without a cap and with the default cap (3 × median), each in both sampling modes, and prints
the usable fraction at first read-only (1.0 = the physical limit) and the largest per-node
share of one window's writes. Free space is refreshed before every ledger (the seed's quick
model) and every ``getBookieInfoIntervalSeconds`` = 1 day (default; each cluster fills in
about 30 days). Then the events: an empty 1 TB node joining the half-full seed cluster (its
weight share against what the cap allows), a node failure (recovery), load-aware weights, and a
fleet with uneven racks.

Goal (issue 4): >= 97 % on both clusters with the defaults, also with the daily refresh, and a
joining node never weighted above its cap.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from trimtab.sim.diskfill import (
    GB,
    MONTH,
    SCENARIOS,
    DiskFillRun,
    Failure,
    Join,
    NodeSpec,
    run_diskfill,
)

__all__ = ["main"]

VARIANTS = [
    ("off", "-", 3),
    ("disk", "successive", -1),
    ("disk", "successive", 3),
    ("disk", "proportional", -1),
    ("disk", "proportional", 3),
]


def base(name: str, **changes: object) -> DiskFillRun:
    nodes, workload, policy = SCENARIOS[name]
    run = DiskFillRun(nodes=nodes, workload=workload, policy=policy, sample_every=10**9)
    return replace(run, **changes)  # type: ignore[arg-type]


def pct(x: float | None) -> str:
    return "   n/a" if x is None else f"{100 * x:6.2f}"


def table(name: str, refresh: float | None) -> None:
    label = "every ledger" if refresh is None else f"every {refresh / 3600:g} h"
    print(f"\n{name} cluster, free space refreshed {label}")
    print(f"  {'weights':8} {'sampling':13} {'cap':>4}  {'usable %':>8}  {'max share %':>11}  s")
    for weights, sampling, cap in VARIANTS:
        t0 = time.perf_counter()
        run = base(
            name,
            weights=weights,
            sampling="proportional" if sampling == "-" else sampling,
            cap=cap,
            refresh_seconds=refresh,
        )
        r = run_diskfill(run)
        cap_s = "-" if weights == "off" or cap <= 0 else f"{cap}x"
        print(
            f"  {weights:8} {sampling:13} {cap_s:>4}  {pct(r.usable_fraction_at_first_readonly):>8}"
            f"  {pct(r.max_write_share):>11}  {time.perf_counter() - t0:.1f}"
        )


def events(quick: bool) -> None:
    print("\nevents (default settings: disk weights, proportional, cap 3x median, daily refresh)")
    joiner = NodeSpec("new:3181", "/default-rack", 1000 * GB)
    r = run_diskfill(base("seed", joins=(Join(MONTH / 2, joiner),)))
    print(
        f"  seed + empty 1 TB node at day 15: joined node's weight share max"
        f" {pct(r.joined_max_weight_share)} %, cap allows {pct(r.joined_cap_share)} %;"
        f" usable {pct(r.usable_fraction_at_first_readonly)} %"
    )
    r = run_diskfill(base("seed", failures=(Failure(MONTH / 2, "b5:3181"),)))
    print(
        f"  seed, b5 (300 GB) fails at day 15: {r.recovered_ledgers} ledgers re-replicated in"
        f" {r.recovery_seconds or 0:.0f} s; usable {pct(r.usable_fraction_at_first_readonly)} %"
    )
    # Every disk absorbs 130 kB/s: at the seed's write rate the 300 GB node, taking ~30 % of
    # the writes, runs at ~85 % I/O utilisation, above the 70 % threshold.
    r = run_diskfill(base("seed", weights="disk+load", disk_bandwidth=130e3))
    print(
        f"  seed, load-aware (every disk 130 kB/s; above 70 % busy weighted down):"
        f" usable {pct(r.usable_fraction_at_first_readonly)} %,"
        f" max share {pct(r.max_write_share)} %"
    )
    if not quick:
        r = run_diskfill(base("uneven-fleet"))
        print(
            f"  uneven racks (196/196/168 TB), defaults: usable"
            f" {pct(r.usable_fraction_at_first_readonly)} % (one replica per rack: bound by"
            f" the small rack, {100 * 168 / 196:.1f} % of the others)"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the seed cluster only")
    args = parser.parse_args(argv)
    print("Disk-fill bench: usable fraction at first read-only (100 % = physical limit)")
    table("seed", None)
    table("seed", 86_400.0)
    if not args.quick:
        table("fleet", 86_400.0)
    events(args.quick)


if __name__ == "__main__":
    main()
