"""One evaluator for trimtab's plan and a peer's: the same figures from the same instance.

An instance is the JSON document bench/peers/rebalancer.py writes (nodes: id, rack,
capacity, disk_total, base bytes, bytes free under the soft limit, emptied; partitions: key,
size, nodes). A result is the final assignment (partition key → nodes) and the wall time.
Figures: replica moves and bytes moved against the initial assignment; each node's replica
count over its capacity share (least and largest, nodes not emptied); disk use (largest,
over total); partitions with two replicas in one rack or on one node; replicas left on
emptied nodes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ["evaluate"]


def evaluate(
    instance: dict[str, Any], final: dict[str, list[str]], seconds: float
) -> dict[str, Any]:
    """The figures of ``final`` (every partition of ``instance``) taken ``seconds`` to plan."""
    nodes = {n["id"]: n for n in instance["nodes"]}
    moves = moved = 0
    counts: Counter[str] = Counter()
    used = {i: float(n["base"]) for i, n in nodes.items()}
    racks = dupes = left = 0
    for p in instance["partitions"]:
        now = final.get(p["key"], p["nodes"])
        gone = len(set(p["nodes"]) - set(now))
        moves += gone
        moved += gone * p["size"]
        for n in now:
            counts[n] += 1
            used[n] += p["size"]
        racks += len({nodes[n]["rack"] for n in now}) < len(now)
        dupes += len(set(now)) < len(now) or len(now) != len(p["nodes"])
        left += sum(nodes[n]["emptied"] for n in now)
    live = [i for i, n in nodes.items() if not n["emptied"]]
    total = sum(counts[i] for i in live)
    weight = sum(nodes[i]["capacity"] for i in live)
    ratio = [counts[i] / (total * nodes[i]["capacity"] / weight) for i in live]
    disk = [used[i] / nodes[i]["disk_total"] for i in live if nodes[i]["disk_total"]]
    return {
        "moves": moves,
        "bytes": moved,
        "share_min": min(ratio),
        "share_max": max(ratio),
        "disk_max": max(disk) if disk else 0.0,
        "rack_violations": racks,
        "broken_partitions": dupes,
        "left_on_emptied": left,
        "seconds": seconds,
    }
