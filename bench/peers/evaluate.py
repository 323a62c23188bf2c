"""One evaluator for trimtab's plan and a peer's: the same figures from the same instance.

An instance is the JSON document bench/peers/rebalancer.py writes (nodes: id, rack,
capacity, disk_total, base bytes, bytes free under the soft limit, emptied; partitions: key,
size, nodes). A result is the final assignment (partition key → nodes) and the wall time.
Figures: replica moves and bytes moved against the initial assignment; each node's replica
count over its capacity share, least and largest, over the nodes that may hold replicas (not
emptied, and with room under the soft disk limit: a node whose other files alone fill it is
emptied by the disk limit in every plan that meets it); disk use over total, largest and
least; the hard goals: partitions with two replicas in one rack, or on one node, replicas left
on emptied nodes, nodes whose partitions exceed the bytes free under the soft limit.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ["evaluate", "hard_goals_met"]


def hard_goals_met(figures: dict[str, Any]) -> bool:
    """Whether ``figures`` (from :func:`evaluate`) meet every hard goal."""
    keys = ("rack_violations", "broken_partitions", "left_on_emptied", "over_disk_limit")
    return all(figures[k] == 0 for k in keys)


def evaluate(
    instance: dict[str, Any], final: dict[str, list[str]], seconds: float
) -> dict[str, Any]:
    """The figures of ``final`` (every partition of ``instance``) taken ``seconds`` to plan."""
    nodes = {n["id"]: n for n in instance["nodes"]}
    moves = moved = 0
    counts: Counter[str] = Counter()
    held = dict.fromkeys(nodes, 0.0)
    racks = dupes = left = 0
    for p in instance["partitions"]:
        now = final.get(p["key"], p["nodes"])
        gone = len(set(p["nodes"]) - set(now))
        moves += gone
        moved += gone * p["size"]
        for n in now:
            counts[n] += 1
            held[n] += p["size"]
        racks += len({nodes[n]["rack"] for n in now}) < len(now)
        dupes += len(set(now)) < len(now) or len(now) != len(p["nodes"])
        left += sum(nodes[n]["emptied"] for n in now)
    live = [i for i, n in nodes.items() if not n["emptied"]]
    usable = [i for i in live if nodes[i]["disk_free"] > 0]
    total = sum(counts[i] for i in usable)
    weight = sum(nodes[i]["capacity"] for i in usable)
    ratio = [counts[i] / (total * nodes[i]["capacity"] / weight) for i in usable]
    disk = [(nodes[i]["base"] + held[i]) / nodes[i]["disk_total"] for i in live]
    over = sum(held[i] > nodes[i]["disk_free"] + 1.0 for i in live if held[i])
    return {
        "moves": moves,
        "bytes": moved,
        "share_min": min(ratio),
        "share_max": max(ratio),
        "disk_min": min(disk),
        "disk_max": max(disk),
        "rack_violations": racks,
        "broken_partitions": dupes,
        "left_on_emptied": left,
        "over_disk_limit": over,
        "seconds": seconds,
    }
