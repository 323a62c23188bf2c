"""trimtab's planner side by side with Meta's Rebalancer, on the same instances, one evaluator.

    bench/peers/setup_rebalancer.sh                # once: the peer's own venv (Python 3.12)
    .venv/bin/python -m bench.peers.rebalancer     # the small instances
    .venv/bin/python -m bench.peers.rebalancer --instances drain12,down60,add10 --cap 300

Instances (seeded, :func:`bench.rebalance.setup`: nodes of 4–64 cores in 20 racks, RF 3
partitions of 0.2–1.8 GB, about half of every disk):
- ``drain12``: 12 nodes, 1,200 replicas, node 5 drained;
- ``down60``: 60 nodes, 9,000 replicas, node 0 down for an hour, nodes 1 and 2 at 86 % and
  88 % of their disks;
- ``add10``: 10 empty nodes added to 300 nodes holding 90,000 replicas;
- ``bench1000``: trimtab's own 1,000-node bench (1,000,000 replicas), Rebalancer capped.

trimtab runs here (its venv): one ``continuous`` plan, rack-aware, no move budget. Rebalancer
runs in bench/peers/.venv-rebalancer as a subprocess (bench/peers/rebalancer_solve.py),
exchanging JSON files, with the configuration stated there and in README.md, and a time cap
(``--cap`` seconds). Both results are scored by bench/peers/evaluate.py.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.peers.evaluate import evaluate
from bench.rebalance import CONFIG, NOW, inventory, nodes, setup
from trimtab.allocation.health import NodeStatus, NodeView
from trimtab.allocation.model import PartitionAssignment
from trimtab.allocation.planner import plan_rebalance
from trimtab.allocation.replica_constraints import disk_ratios
from trimtab.allocation.state import AllocationState
from trimtab.cluster import ClusterState, NodeHealth, NodeId

HERE = Path(__file__).parent
PEER = HERE / ".venv-rebalancer" / "bin" / "python"
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
    cluster: ClusterState, held: list[PartitionAssignment], kw: dict[str, Any]
) -> tuple[dict[str, list[str]], float]:
    t = time.perf_counter()
    plan = plan_rebalance(cluster, held, CONFIG, max_moves=10**9, **kw)
    seconds = time.perf_counter() - t
    return {f"{a.topic}/{a.partition}": list(a.nodes) for a in plan.after}, seconds


def run_peer(doc: dict[str, Any], cap: float) -> tuple[dict[str, list[str]], float, str]:
    """Rebalancer in its own venv; the wall time includes its process start and JSON."""
    if not PEER.exists():
        raise SystemExit("error: no peer venv: run bench/peers/setup_rebalancer.sh first")
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "instance.json", Path(tmp) / "result.json"
        src.write_text(json.dumps(doc | {"time_cap_s": cap}))
        t = time.perf_counter()
        subprocess.run(
            [str(PEER), "-P", str(HERE / "rebalancer_solve.py"), str(src), str(dst)],
            check=True,
            timeout=cap * 3 + 600,
        )
        seconds = time.perf_counter() - t
        result = json.loads(dst.read_text())
    return result["assignment"], seconds, result["end_reason"]


def line(name: str, who: str, f: dict[str, Any], note: str = "") -> str:
    return (
        f"| {name} | {who} | {f['moves']:,} | {f['bytes'] / 1e9:,.0f} | {f['share_min']:.3f} "
        f"| {f['share_max']:.3f} | {f['disk_max']:.1%} | {f['rack_violations']} "
        f"| {f['left_on_emptied']} | {f['seconds']:.2f} | {note} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", default="drain12,down60")
    parser.add_argument("--cap", type=float, default=60.0, help="Rebalancer's time cap, s")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load:.1f} on {os.cpu_count()} CPUs; Rebalancer capped at {args.cap:g} s")
    print(
        "| instance | planner | moves | GB moved | count/share min | max | disk max "
        "| rack viol. | left on emptied | wall s | note |"
    )
    print("|:--|:--|---:|---:|---:|---:|---:|---:|---:|---:|:--|")
    for name in args.instances.split(","):
        cluster, held, kw = scenario(name, args.seed)
        doc = instance(cluster, held, kw)
        final, seconds = run_trimtab(cluster, held, kw)
        ours = evaluate(doc, final, seconds)
        print(line(name, "trimtab", ours), flush=True)
        final, seconds, why = run_peer(doc, args.cap)
        theirs = evaluate(doc, final, seconds)
        moves = theirs["moves"] / max(ours["moves"], 1)
        slower = theirs["seconds"] / max(ours["seconds"], 1e-9)
        note = f"end reason {why}; moves ×{moves:.2f}, time ×{slower:.0f} of trimtab's"
        print(line(name, "Rebalancer", theirs, note), flush=True)


if __name__ == "__main__":
    main()
