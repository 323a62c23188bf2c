"""Mixed clusters end in proportion to capacity: Redpanda's simulator checks (±1 % per node,
±3 % per topic), for a fresh allocation and for nodes joining a cluster that holds data."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from tests.allocation.helpers import make_cluster
from trimtab.allocation import AllocationPlan, AllocationRequest, plan_allocations
from trimtab.allocation.model import PartitionAssignment
from trimtab.cluster import NodeId
from trimtab.config import AllocationConfig

REDPANDA = AllocationConfig(profile="redpanda")


def topics(rng: random.Random, count: int, prefix: str) -> list[AllocationRequest]:
    """Redpanda's test_counts_rebalancing topics: 20 to 100 partitions, RF 3."""
    return [
        AllocationRequest(
            topic=f"{prefix}_{n}", partitions=rng.randint(20, 100), replication_factor=3
        )
        for n in range(count)
    ]


def node_misses(plan: AllocationPlan) -> list[tuple[NodeId, int, int]]:
    """Nodes off ⌊total·cap/Σcap⌋ by more than ⌈1 %⌉ of it (validate_even_replica_distribution)."""
    total = sum(plan.per_node.values())
    whole = sum(plan.capacity.values())
    misses = []
    for node, count in plan.per_node.items():
        expected = math.floor(total * plan.capacity[node] / whole)
        if abs(count - expected) > math.ceil(0.01 * expected):
            misses.append((node, count, expected))
    return misses


def topic_misses(plan: AllocationPlan, held: list[PartitionAssignment]) -> list[tuple[str, NodeId]]:
    """(topic, node) off ⌈topic·cap/Σcap⌉ by more than ⌈3 %⌉ (validate_even_topic_distribution)."""
    final = {(a.topic, a.partition): a for a in [*held, *plan.assignments]}
    for _, after in plan.moves:
        final[(after.topic, after.partition)] = after
    per = Counter((a.topic, r.node) for a in final.values() for r in a.replicas)
    sizes = Counter(a.topic for a in final.values() for _ in a.replicas)
    whole = sum(plan.capacity.values())
    misses = []
    for topic, replicas in sizes.items():
        if replicas < len(plan.capacity):
            continue
        for node, cap in plan.capacity.items():
            expected = math.ceil(replicas * cap / whole)
            if abs(per[(topic, node)] - expected) > math.ceil(0.03 * expected):
                misses.append((topic, node))
    return misses


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_four_core_nodes_and_an_8_core_node_end_within_one_percent(seed: int) -> None:
    """Allocating on 4-core nodes plus an 8-core node (whose share is one replica of every
    partition) leaves each node within ±1 % of its share and each topic within ±3 %."""
    plan = plan_allocations(
        make_cluster([4, 4, 4, 4, 8]), topics(random.Random(seed), 10, "topic"), REDPANDA, seed=seed
    )
    assert node_misses(plan) == [] and topic_misses(plan, []) == []
    assert plan.moves == ()


def test_without_evening_out_the_greedy_pass_falls_short() -> None:
    """The greedy pass alone leaves the 8-core node below its share (why even_out exists)."""
    cfg = AllocationConfig(profile="redpanda", even_out_batch=False)
    plan = plan_allocations(make_cluster([4, 4, 4, 4, 8]), topics(random.Random(0), 10, "t"), cfg)
    big = plan.per_node[NodeId("n04")]
    assert big < plan.partitions and node_misses(plan) != []


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nodes_joining_a_cluster_with_data_are_caught_up_by_rebalancing(seed: int) -> None:
    """Redpanda's test_counts_rebalancing: three 4-core nodes hold ten topics, a 4-core and an
    8-core node join; rebalancing brings every node within ±1 % and every topic within ±3 %,
    moving exactly the newcomers' share of replicas (the fewest possible)."""
    rng = random.Random(seed)
    before = plan_allocations(
        make_cluster([4, 4, 4]), topics(rng, 10, "topic"), REDPANDA, seed=seed
    )
    plan = plan_allocations(
        make_cluster([4, 4, 4, 4, 8]),
        [],
        REDPANDA,
        seed=seed,
        existing=before.assignments,
        rebalance=True,
    )
    assert node_misses(plan) == [] and topic_misses(plan, list(before.assignments)) == []
    newcomers = plan.per_node[NodeId("n03")] + plan.per_node[NodeId("n04")]
    assert plan.moved_replicas == newcomers


def test_allocation_alone_cannot_catch_up_an_8_core_newcomer() -> None:
    """Without moves the newcomer takes at most one replica per new partition, below its
    third of all replicas: existing data has to move (rebalance=True)."""
    rng = random.Random(4)
    before = plan_allocations(make_cluster([4, 4, 4]), topics(rng, 10, "old"), REDPANDA)
    plan = plan_allocations(
        make_cluster([4, 4, 4, 4, 8]), topics(rng, 20, "new"), REDPANDA, existing=before.assignments
    )
    assert plan.per_node[NodeId("n04")] == plan.partitions  # in every new partition...
    assert node_misses(plan) != []  # ...and still short of its share


def test_a_move_budget_is_respected() -> None:
    """max_moves bounds how many replicas of existing partitions change node."""
    rng = random.Random(5)
    before = plan_allocations(make_cluster([4, 4, 4]), topics(rng, 4, "t"), REDPANDA)
    plan = plan_allocations(
        make_cluster([4, 4, 4, 8]),
        [],
        REDPANDA,
        existing=before.assignments,
        rebalance=True,
        max_moves=7,
    )
    assert plan.moved_replicas == 7 and len(plan.moves) <= 7


def test_evening_out_keeps_racks_and_core_balance() -> None:
    """Moves never put two replicas of a partition in one rack when racks allow, and core
    weights stay within one."""
    cluster = make_cluster([4, 4, 8, 4, 4, 8, 2], racks=["a", "a", "a", "b", "b", "b", "c"])
    plan = plan_allocations(
        cluster, topics(random.Random(6), 6, "t"), REDPANDA, rack_aware=True, seed=3
    )
    rack = {n.id: n.rack for n in cluster}
    assert all(len({rack[n] for n in a.nodes}) == 3 for a in plan.assignments)
    assert all(max(c) - min(c) <= 1 for c in plan.per_core.values())
