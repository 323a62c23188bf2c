"""plan_allocations: one call per cluster, all requests or none, leaders spread."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

import pytest

from tests.allocation.helpers import make_cluster
from trimtab.allocation import (
    AllocationRequest,
    PartitionAssignment,
    evens_out,
    plan_allocations,
)
from trimtab.allocation.plan import order_leaders
from trimtab.cluster import NodeId
from trimtab.config import AllocationConfig
from trimtab.errors import AllocationError, ConfigError


def req(topic: str, partitions: int, rf: int = 3, cluster: str | None = None) -> AllocationRequest:
    return AllocationRequest(
        topic=topic, partitions=partitions, replication_factor=rf, cluster=cluster
    )


@pytest.mark.parametrize("mode", ["rfc", "constraints", "rendezvous"])
def test_a_failing_request_fails_the_whole_batch_and_says_which(mode: str) -> None:
    """The third request cannot be met: the error names it (request_index 2), nothing stays."""
    cluster = make_cluster([1, 1, 1])
    cfg = AllocationConfig(topic_partitions_per_shard=16, topic_partitions_reserve_shard0=0)
    with pytest.raises(AllocationError) as info:
        plan_allocations(cluster, [req("a", 4), req("b", 4), req("c", 9)], cfg, mode=mode)
    assert info.value.request_index == 2 and info.value.topic == "c"
    plan = plan_allocations(cluster, [req("a", 4), req("b", 4)], cfg, mode=mode)
    assert plan.replicas == 24 and sum(plan.per_node.values()) == 24


def test_leaders_are_spread_in_proportion_to_capacity() -> None:
    """First replicas (Kafka's preferred leaders) follow capacity, whatever the placement order."""
    plan = plan_allocations(make_cluster([4, 4, 8, 16]), [req("t", 320)], seed=0)
    leaders = Counter(a.replicas[0].node for a in plan.assignments)
    assert (
        leaders
        == Counter(plan.leaders)
        == {
            NodeId("n00"): 40,
            NodeId("n01"): 40,
            NodeId("n02"): 80,
            NodeId("n03"): 160,
        }
    )
    reordered, _ = order_leaders(plan.assignments, plan.capacity)
    assert [set(a.nodes) for a in reordered] == [set(a.nodes) for a in plan.assignments]


def test_requests_for_another_cluster_are_refused() -> None:
    """A request naming a different cluster is a caller error, not silently skipped."""
    with pytest.raises(ValueError, match="is for cluster 'other'"):
        plan_allocations(make_cluster([4] * 3), [req("t", 1, cluster="other")])


def test_rebalancing_needs_the_constraint_rules() -> None:
    """Moving existing replicas is only offered by the constraints mode."""
    with pytest.raises(ConfigError, match="constraints"):
        plan_allocations(make_cluster([4] * 3), [], mode="rfc", rebalance=True)


def test_excluded_nodes_are_left_alone_by_placement_and_evening_out() -> None:
    """An excluded node gets no new replica, even when it is far below its share."""
    plan = plan_allocations(make_cluster([4, 4, 4, 4]), [req("t", 30)], excluded=[NodeId("n00")])
    assert plan.per_node[NodeId("n00")] == 0 and plan.replicas == 90


def _pairs_even(assignments: Sequence[PartitionAssignment], nodes: int) -> bool:
    """Every ordered node pair shares partitions within mean ± 3·√mean (upstream's bound)."""
    freq = Counter(p for a in assignments for p in itertools.permutations(a.nodes, 2))
    mean = sum(freq.values()) / (nodes * (nodes - 1))
    ids = {n for a in assignments for n in a.nodes}
    return len(ids) == nodes and all(
        abs(freq[(x, y)] - mean) <= 3 * math.sqrt(mean) for x in ids for y in ids if x != y
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rebalancing_after_nodes_join_keeps_replica_pairs_even(seed: int) -> None:
    """150 RF3 partitions on 3 nodes, 3 nodes join: the rebalance moves the 225 replicas it
    must (no more) and forms no replica clusters (the pick of least pair cost; moving the
    first eligible partition put 135 of 150 partitions on two replica sets)."""
    old = plan_allocations(make_cluster([4] * 3), [req("t", 150)], seed=seed)
    plan = plan_allocations(
        make_cluster([4] * 6), [], existing=old.assignments, rebalance=True, seed=seed
    )
    after = {(a.topic, a.partition): a for a in old.assignments}
    after |= {(a.topic, a.partition): a for _, a in plan.moves}
    assert plan.moved_replicas == 225 and set(plan.per_node.values()) == {75}
    assert _pairs_even(list(after.values()), 6)


def test_a_topic_created_after_nodes_join_spreads_its_replica_sets() -> None:
    """Upstream's first check in test_replica_pair_frequency: the new nodes are empty, yet the
    new topic's replicas go round all nodes (the topic level's fill order), not only to them."""
    old = plan_allocations(make_cluster([4] * 3), [req("topic_1", 150)])
    plan = plan_allocations(make_cluster([4] * 6), [req("topic_2", 150)], existing=old.assignments)
    assert _pairs_even(plan.assignments, 6)


@pytest.mark.parametrize(
    ("mode", "even_out_batch", "rebalance", "expected"),
    [
        pytest.param("constraints", True, False, True, id="constraints evens out its batch"),
        pytest.param("constraints", False, True, True, id="constraints rebalancing evens out"),
        pytest.param("constraints", False, False, False, id="constraints without either does not"),
        pytest.param("rendezvous", True, True, False, id="rendezvous never evens out"),
        pytest.param(None, True, False, True, id="the config's allocator when no mode is given"),
    ],
)
def test_evens_out_is_the_phase_the_plan_runs(
    mode: str | None, even_out_batch: bool, rebalance: bool, expected: bool
) -> None:
    """evens_out says whether plan_allocations evens out (what the CLI's progress shows)."""
    cfg = replace(AllocationConfig(), allocator="constraints", even_out_batch=even_out_batch)
    assert evens_out(cfg, mode=mode, rebalance=rebalance) is expected
