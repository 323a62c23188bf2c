"""trimtab's planner side by side with Meta's Rebalancer, on the same instances, one evaluator.

    bench/peers/setup_rebalancer.sh                # once: the peer's own venv (Python 3.12)
    .venv/bin/python -m bench.peers.rebalancer     # the small instances (about a minute)
    nice -n 10 .venv/bin/python -m bench.peers.rebalancer --instances all --cap 300

Instances (seeded, :func:`bench.rebalance.setup`: nodes of 4–64 cores in 20 racks, RF 3
partitions of 0.2–1.8 GB, about half of every disk):
- ``drain12``: 12 nodes, 1,200 replicas, node 5 drained;
- ``down60``: 60 nodes, 9,000 replicas, node 0 down for an hour, nodes 1 and 2 at 86 % and
  88 % of their disks;
- ``add10``: 10 empty nodes added to 300 nodes holding 90,000 replicas (nodes 1 and 2 at
  86 % and 88 % too);
- ``bench1000``: trimtab's own 1,000-node bench (1,000,000 replicas, node 0 down, nodes 1
  and 2 full), Rebalancer capped.
The initial placement is not rack-aware, so each instance but drain12 starts with partitions
in rack violation, which both planners must repair.

trimtab runs here (its venv): one ``continuous`` plan, rack-aware, no move budget, twice: as
configured (topic-aware balancing on, its default) and with ``--no-topic-aware``, the same
goals as Rebalancer's (balance in proportion to capacity, then least movement: no topic
spread among them), the like-for-like row for issue 40's goal. Rebalancer
runs in bench/peers/.venv-rebalancer as a subprocess (bench/peers/rebalancer_solve.py),
exchanging JSON files, with the configuration stated there and in README.md, and a time cap
(``--cap`` seconds). Both results are scored by bench/peers/evaluate.py; the rows, the ratios
trimtab/Rebalancer and issue 40's goal (balance as good, fewer moves, a tenth of the time)
are printed per instance.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.peers.evaluate import evaluate, hard_goals_met
from bench.rebalance import CONFIG, NOW, inventory, nodes, setup
from trimtab.allocation.health import NodeStatus, NodeView
from trimtab.allocation.model import PartitionAssignment
from trimtab.allocation.planner import plan_rebalance
from trimtab.allocation.replica_constraints import disk_ratios
from trimtab.allocation.state import AllocationState
from trimtab.cluster import ClusterState, NodeHealth, NodeId

HERE = Path(__file__).parent
PEER = HERE / ".venv-rebalancer" / "bin" / "python"
# The binding reports the EndReason enum as its Thrift integer (1-based, in specs.py's order).
END = {1: "OPTIMAL", 2: "HIT_TIME_LIMIT", 5: "HIT_PLATEAU_TIME", 9: "UNABLE_TO_FIND_MORE_MOVES"}
ALL = "drain12,down60,add10,bench1000"
POLICY = "DEFAULT"  # the policy that fixes constraints broken at the start: see README.md
TOLERANCE = 0.005  # count/share figures within this are "as good"
SIZES = {
    "drain12": (12, 400),
    "down60": (60, 3000),
    "add10": (300, 30000),
    "bench1000": (1000, 333_334),
}


def scenario(
    name: str, seed: int
) -> tuple[ClusterState, list[PartitionAssignment], dict[str, Any]]:
    """The cluster, the assignment and the planner's keyword arguments of one instance."""
    count, partitions = SIZES[name]
    cluster, held, _ = setup(count, partitions, seed)
    kw: dict[str, Any] = {"now": NOW, "mode": "continuous", "rack_aware": True}
    if name == "drain12":
        kw["drain"] = [NodeId("5")]
    elif name == "add10":
        specs = nodes(count + 10, seed)
        disks = [cluster.node(NodeId(str(i))).capacity for i in range(count)]  # index order
        used = [c.disk_total_bytes - (c.disk_free_bytes or 0) for c in disks]
        fresh = inventory(specs[:count] + specs[count:], used + [0] * 10)
        joining = [n for n in fresh.nodes if int(n.id) >= count]  # nodes are kept by id
        cluster = ClusterState.of(cluster.name, [*cluster.nodes, *joining])
    else:
        kw["health"] = [NodeStatus(NodeId("0"), NodeHealth.DOWN, down_since=NOW - 3600)]
    return cluster, held, kw


def instance(
    cluster: ClusterState, held: list[PartitionAssignment], kw: dict[str, Any]
) -> dict[str, Any]:
    """The JSON both sides plan from: nodes as the planner sees them, partitions as held."""
    view = NodeView.of(
        cluster, held, health=kw.get("health", ()), drain=kw.get("drain", ()), now=NOW
    )
    state = AllocationState.of(view.cluster, CONFIG, held)
    soft, _ = disk_ratios(CONFIG)
    emptied = view.draining | view.timed_out
    return {
        "nodes": [
            {
                "id": node,
                "rack": state.racks[i],
                "capacity": state.capacity[i],
                "disk_total": state.disk_total[i],
                "base": state.disk_used[i],
                "disk_free": max(0.0, soft * state.disk_total[i] - state.disk_used[i]),
                "emptied": node in emptied,
            }
            for i, node in enumerate(state.ids)
        ],
        "partitions": [
            {"key": f"{a.topic}/{a.partition}", "size": a.size_bytes, "nodes": list(a.nodes)}
            for a in held
        ],
    }


def run_trimtab(
    cluster: ClusterState,
    held: list[PartitionAssignment],
    kw: dict[str, Any],
    topic_aware: bool | None = None,
) -> tuple[dict[str, list[str]], float, int]:
    """trimtab's final assignment, its plan time and the planner's lower bound on moves
    (``topic_aware`` None: the configuration's default, on)."""
    t = time.perf_counter()
    plan = plan_rebalance(cluster, held, CONFIG, max_moves=10**9, topic_aware=topic_aware, **kw)
    seconds = time.perf_counter() - t
    final = {f"{a.topic}/{a.partition}": [str(n) for n in a.nodes] for a in plan.after}
    return final, seconds, plan.lower_bound_moves


def run_peer(doc: dict[str, Any], cap: float) -> tuple[dict[str, list[str]], float, str, str]:
    """Rebalancer in its own venv; the wall time includes its process start and JSON.

    Returns the assignment (empty when it failed), the wall time, its end reason and, when it
    failed, what happened (exit status, last line of its error, peak memory)."""
    if not PEER.exists():
        raise SystemExit("error: no peer venv: run bench/peers/setup_rebalancer.sh first")
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "instance.json", Path(tmp) / "result.json"
        src.write_text(json.dumps(doc | {"time_cap_s": cap, "policy": POLICY}))
        solve = [str(PEER), "-P", str(HERE / "rebalancer_solve.py"), str(src), str(dst)]
        timed = ["/usr/bin/time", "-v"] if Path("/usr/bin/time").exists() else []
        t = time.perf_counter()
        try:
            done = subprocess.run(
                [*timed, "nice", "-n", "10", *solve],
                capture_output=True,
                text=True,
                timeout=cap * 3 + 600,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {}, time.perf_counter() - t, "-", f"killed after {cap * 3 + 600:.0f} s"
        seconds = time.perf_counter() - t
        peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
        memory = f"peak {int(peak.group(1)) / 2**20:.1f} GiB" if peak else "peak memory unknown"
        if done.returncode != 0 or not dst.exists():
            errors = [x for x in done.stderr.splitlines() if "rror" in x or "xception" in x]
            last = (errors or done.stderr.strip().splitlines() or ["no output"])[-1]
            return {}, seconds, "-", f"exit {done.returncode}, {memory}: {last[:300]}"
        result = json.loads(dst.read_text())
    why = f"{END.get(result['end_reason'], '?')}, solve {result['seconds']:.1f} s, {memory}"
    return result["assignment"], seconds, why, ""


HEADER = (
    "| instance | planner | moves | GB moved | count/share min | max | disk min | disk max "
    "| rack viol. | left on emptied | over disk limit | hard goals met | wall s |"
)


def line(name: str, who: str, f: dict[str, Any]) -> str:
    return (
        f"| {name} | {who} | {f['moves']:,} | {f['bytes'] / 1e9:,.0f} | {f['share_min']:.3f} "
        f"| {f['share_max']:.3f} | {f['disk_min']:.1%} | {f['disk_max']:.1%} "
        f"| {f['rack_violations']} | {f['left_on_emptied']} | {f['over_disk_limit']} "
        f"| {'yes' if hard_goals_met(f) else 'no'} | {f['seconds']:.2f} |"
    )


def verdict(ours: dict[str, Any], theirs: dict[str, Any]) -> str:
    """The ratios trimtab/Rebalancer and whether issue 40's goal holds on one instance."""
    moves = ours["moves"] / max(theirs["moves"], 1)
    slower = ours["seconds"] / max(theirs["seconds"], 1e-9)
    balance = (
        ours["share_max"] <= theirs["share_max"] + TOLERANCE
        and ours["share_min"] >= theirs["share_min"] - TOLERANCE
    )
    fewer, tenth = ours["moves"] < theirs["moves"], slower <= 0.1
    head = f"trimtab/Rebalancer: moves {moves:.2f}, time {slower:.4f}"
    if not hard_goals_met(ours):
        return f"{head}; goal NOT met: trimtab misses a hard goal"
    if not hard_goals_met(theirs):
        return f"{head}; Rebalancer misses a hard goal (moves not comparable); time goal " + (
            "met" if tenth else "NOT met"
        )
    parts = [
        f"balance as good: {'yes' if balance else 'no'}",
        f"fewer moves: {'yes' if fewer else 'no'}",
        f"a tenth of the time: {'yes' if tenth else 'no'}",
    ]
    held = "goal met" if balance and fewer and tenth else "goal NOT met"
    return f"{head}; {', '.join(parts)}: {held}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--instances", default="drain12,down60", help=f"comma-separated, or all ({ALL})"
    )
    parser.add_argument("--cap", type=float, default=60.0, help="Rebalancer's time cap, s")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    names = ALL.split(",") if args.instances == "all" else args.instances.split(",")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"load average {load:.1f} on {os.cpu_count()} CPUs; Rebalancer {POLICY} policy, "
        f"local search capped at {args.cap:g} s"
    )
    print(HEADER)
    print("|:--|:--|" + "---:|" * 9 + ":-:|---:|")
    notes = []
    for name in names:
        cluster, held, kw = scenario(name, args.seed)
        doc = instance(cluster, held, kw)
        final, seconds, bound = run_trimtab(cluster, held, kw)
        ours = evaluate(doc, final, seconds)
        print(line(name, "trimtab", ours), flush=True)
        final, seconds, _ = run_trimtab(cluster, held, kw, topic_aware=False)
        same = evaluate(doc, final, seconds)  # Rebalancer's goals: no topic spread among them
        print(line(name, "trimtab --no-topic-aware", same), flush=True)
        final, seconds, why, failed = run_peer(doc, args.cap)
        if failed:
            print(f"| {name} | Rebalancer | {failed} after {seconds:.0f} s |", flush=True)
            notes.append(f"- {name}: Rebalancer failed ({failed}); trimtab's bound {bound:,}")
            continue
        theirs = evaluate(doc, final, seconds)
        print(line(name, "Rebalancer", theirs), flush=True)
        notes.append(
            f"- {name}: {verdict(ours, theirs)}; trimtab's lower bound {bound:,} moves "
            f"(Rebalancer: {why})"
        )
        notes.append(f"- {name}, the same goals (--no-topic-aware): {verdict(same, theirs)}")
    print()
    print("\n".join(notes))


if __name__ == "__main__":
    main()
