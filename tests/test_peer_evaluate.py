"""The shared evaluator of bench/peers (issue 40 part 4): the figures both planners are scored by.

A small instance by hand: four nodes in three racks, two of them with room on their disks,
one drained. Each figure is checked against what a reader counts on the page.
"""

from __future__ import annotations

from typing import Any

from bench.peers.evaluate import evaluate, hard_goals_met
from bench.peers.rebalancer import verdict

GB = 10**9


def node(name: str, rack: str, *, free: float = 50 * GB, emptied: bool = False) -> dict[str, Any]:
    return {
        "id": name,
        "rack": rack,
        "capacity": 1,
        "disk_total": 100 * GB,
        "base": 10 * GB,
        "disk_free": free,
        "emptied": emptied,
    }


INSTANCE: dict[str, Any] = {
    "nodes": [
        node("a", "r1"),
        node("b", "r2"),
        node("c", "r3"),
        node("d", "r1", emptied=True),
    ],
    "partitions": [
        {"key": "t/0", "size": 2 * GB, "nodes": ["a", "d"]},
        {"key": "t/1", "size": 4 * GB, "nodes": ["b", "c"]},
    ],
}


def test_the_initial_assignment_breaks_the_drain_and_a_rack() -> None:
    f = evaluate(INSTANCE, {}, 0.0)
    assert (f["moves"], f["bytes"]) == (0, 0)
    assert f["left_on_emptied"] == 1
    assert f["rack_violations"] == 1  # a and d share r1
    assert not hard_goals_met(f)


def test_a_plan_moving_the_drained_replica_meets_every_goal() -> None:
    f = evaluate(INSTANCE, {"t/0": ["a", "b"]}, 1.5)
    assert (f["moves"], f["bytes"], f["seconds"]) == (1, 2 * GB, 1.5)
    assert f["left_on_emptied"] == f["rack_violations"] == f["over_disk_limit"] == 0
    assert hard_goals_met(f)
    # counts 1, 2, 1 on equal capacities: shares 0.75, 1.5, 0.75
    assert (f["share_min"], f["share_max"]) == (0.75, 1.5)
    assert f["disk_max"] == (10 + 2 + 4) / 100


def test_a_node_past_its_disk_limit_and_two_replicas_on_one_node_are_counted() -> None:
    tight = INSTANCE | {"nodes": [node("a", "r1", free=1 * GB), *INSTANCE["nodes"][1:]]}
    f = evaluate(tight, {"t/0": ["a", "a"]}, 0.0)
    assert f["over_disk_limit"] == 1  # 4 GB of partitions where 1 GB is free
    assert f["broken_partitions"] == 1
    assert not hard_goals_met(f)


def test_a_node_with_no_room_is_left_out_of_the_shares() -> None:
    full = INSTANCE | {
        "nodes": [*INSTANCE["nodes"][:2], node("c", "r3", free=0.0), node("d", "r1", emptied=True)]
    }
    f = evaluate(full, {"t/0": ["a", "b"], "t/1": ["b", "a"]}, 0.0)
    assert (f["share_min"], f["share_max"]) == (1.0, 1.0)  # c may hold nothing


def test_the_verdict_needs_balance_fewer_moves_and_a_tenth_of_the_time() -> None:
    ours = evaluate(INSTANCE, {"t/0": ["a", "b"]}, 0.1)
    theirs = evaluate(INSTANCE, {"t/0": ["b", "c"], "t/1": ["b", "a"]}, 2.0)
    assert hard_goals_met(theirs)
    assert verdict(ours, theirs).endswith("goal met")
    slow = ours | {"seconds": 1.0}
    assert "a tenth of the time: no" in verdict(slow, theirs)
    assert verdict(slow, theirs).endswith("goal NOT met")
    broken = evaluate(INSTANCE, {}, 0.0)
    assert "Rebalancer misses a hard goal" in verdict(ours, broken)
