"""Redpanda's ``partition_allocator_tests.cc`` cases, for every allocator that they apply to."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from tests.allocation.helpers import make_cluster, snapshot
from trimtab.allocation import (
    AllocationRequest,
    AllocationState,
    ConstraintAllocator,
    PartitionAssignment,
    RendezvousAllocator,
    Replica,
    RfcAllocator,
    plan_allocations,
)
from trimtab.allocation.base import Allocator
from trimtab.cluster import ClusterState, NodeId
from trimtab.config import AllocationConfig
from trimtab.constraints import Hard
from trimtab.errors import (
    AllocationError,
    CapacityExhaustedError,
    ClusterLimitError,
    InvalidReplicationFactorError,
    TopicExistsError,
)

MODES = ["rfc", "constraints", "constraints-reference", "rendezvous"]


def allocator(mode: str, state: AllocationState, seed: int = 1) -> Allocator:
    if mode == "rfc":
        return RfcAllocator(state)
    if mode == "rendezvous":
        return RendezvousAllocator(state)
    return ConstraintAllocator(state, rng=random.Random(seed), fast=mode == "constraints")


def request(topic: str = "t", partitions: int = 1, rf: int = 3) -> AllocationRequest:
    return AllocationRequest(topic=topic, partitions=partitions, replication_factor=rf)


def state_of(cluster: ClusterState, **kw: object) -> AllocationState:
    return AllocationState(cluster, partitions_per_shard=1000, reserve_shard0=2, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
def test_max_allocation_is_exactly_1998_partitions(mode: str) -> None:
    """3 nodes × 2 cores at 1,000 per core, reserve 2, hold 1,998 RF3 partitions; one more fails."""
    state = state_of(make_cluster([2, 2, 2]))
    alloc = allocator(mode, state)
    made = alloc.allocate(request(partitions=1998))
    assert len(made) == 1998 and state.counts == [1998, 1998, 1998]
    before = snapshot(state)
    with pytest.raises(CapacityExhaustedError) as info:
        alloc.allocate(request("next"))
    assert info.value.free_slots == 0 and info.value.needed == 3
    assert snapshot(state) == before


@pytest.mark.parametrize("mode", MODES)
def test_allocation_over_core_capacity_fails(mode: str) -> None:
    """A 1-core node takes per_shard − reserve replicas and not one more (the core limit)."""
    state = state_of(make_cluster([1]))
    alloc = allocator(mode, state)
    alloc.allocate(request(partitions=998, rf=1))
    with pytest.raises(CapacityExhaustedError, match="0 free partition slot"):
        alloc.allocate(request("more", partitions=1, rf=1))
    assert state.counts == [998]


@pytest.mark.parametrize("mode", MODES)
def test_unsatisfiable_diversity_rolls_back_leaving_every_node_empty(mode: str) -> None:
    """RF 5 on 3 nodes is an invalid replication factor, and nothing is allocated."""
    state = state_of(make_cluster([2, 2, 2]))
    with pytest.raises(InvalidReplicationFactorError) as info:
        allocator(mode, state).allocate(request(partitions=3, rf=5))
    assert (info.value.replication_factor, info.value.nodes) == (5, 3)
    assert state.counts == [0, 0, 0] and state.assignments() == ()
    assert all(w == [2, 0] for w in state.weights)


def nearly_full_small_nodes() -> AllocationState:
    """n00 and n01 (1 core, reserve 0 → 16 slots) hold 15 replicas each; n02 has 128 slots."""
    cluster = make_cluster([1, 1, 8])
    existing = [
        PartitionAssignment("old", p, (Replica(NodeId("n00"), 0), Replica(NodeId("n01"), 0)))
        for p in range(15)
    ]
    return AllocationState(cluster, partitions_per_shard=16, reserve_shard0=0, existing=existing)


@pytest.mark.parametrize("mode", MODES)
def test_partial_request_leaks_nothing(mode: str) -> None:
    """Two RF3 partitions where only one fits on distinct nodes: the request fails whole."""
    state = nearly_full_small_nodes()
    before = snapshot(state)
    with pytest.raises(CapacityExhaustedError) as info:
        allocator(mode, state).allocate(request(partitions=2))
    assert info.value.placed >= 3  # the first partition was placed, then undone
    assert snapshot(state) == before


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_request_inside_a_batch_keeps_the_earlier_ones(mode: str) -> None:
    """With a caller's transaction, only the failing request is undone; rollback undoes all."""
    state = nearly_full_small_nodes()
    before = snapshot(state)
    alloc = allocator(mode, state)
    with state.transaction() as tx:
        alloc.allocate(request("first", partitions=1, rf=1), tx)
        kept = snapshot(state)
        with pytest.raises(CapacityExhaustedError):
            alloc.allocate(request("second", partitions=2), tx)
        assert snapshot(state) == kept
    assert snapshot(state) == before


@pytest.mark.parametrize("mode", ["constraints", "constraints-reference", "rendezvous"])
def test_all_replica_sets_are_used_over_many_requests(mode: str) -> None:
    """6 nodes, RF3, 1,000 one-partition requests hit all 20 possible replica sets."""
    state = AllocationState(make_cluster([4] * 6), partitions_per_shard=1000, reserve_shard0=0)
    alloc = allocator(mode, state)
    seen = set()
    for n in range(1000):
        (made,) = alloc.allocate(request(f"t{n}"))
        seen.add(frozenset(made.nodes))
    assert seen == {frozenset(c) for c in itertools.combinations(state.ids, 3)}


def test_the_rfc_pointer_uses_only_n_over_rf_replica_sets() -> None:
    """With 6 nodes and RF3 the RFC's round robin repeats two replica sets (why Redpanda moved)."""
    state = AllocationState(make_cluster([4] * 6), partitions_per_shard=1000, reserve_shard0=0)
    alloc = RfcAllocator(state)
    seen = {frozenset(a.nodes) for n in range(100) for a in alloc.allocate(request(f"t{n}"))}
    assert len(seen) == 2


@pytest.mark.parametrize("mode", ["constraints", "constraints-reference", "rendezvous"])
def test_rack_aware_assignment_puts_one_replica_per_rack(mode: str) -> None:
    """Three racks of two nodes, RF3: every partition spans the three racks."""
    cluster = make_cluster([4] * 6, racks=["a", "a", "b", "b", "c", "c"])
    state = state_of(cluster)
    alloc = (
        RendezvousAllocator(state, rack_aware=True)
        if mode == "rendezvous"
        else ConstraintAllocator(
            state, rng=random.Random(3), rack_aware=True, fast=mode == "constraints"
        )
    )
    for a in alloc.allocate(request(partitions=50)):
        assert len({state.racks[state.index[n]] for n in a.nodes}) == 3


@pytest.mark.parametrize("mode", ["constraints", "constraints-reference", "rendezvous"])
def test_rack_awareness_outranks_capacity(mode: str) -> None:
    """Rack b is one 1-core node beside three 10-core rack-a nodes: RF2 still uses both racks."""
    cluster = make_cluster([10, 10, 10, 1], racks=["a", "a", "a", "b"])
    state = state_of(cluster)
    alloc = (
        RendezvousAllocator(state, rack_aware=True)
        if mode == "rendezvous"
        else ConstraintAllocator(
            state, rng=random.Random(5), rack_aware=True, fast=mode == "constraints"
        )
    )
    made = alloc.allocate(request(partitions=40, rf=2))
    assert all(NodeId("n03") in a.nodes for a in made)


@pytest.mark.parametrize("fast", [True, False], ids=["fast path", "reference"])
def test_topic_spread_outranks_total_counts(fast: bool) -> None:
    """A node least loaded in total but already holding the topic loses to nodes without it."""
    cluster = make_cluster([4, 4, 4, 4])
    existing = [PartitionAssignment("t", 0, (Replica(NodeId("n00"), 0),))] + [
        PartitionAssignment("busy", p, (Replica(NodeId(f"n0{1 + p % 3}"), 0),)) for p in range(30)
    ]
    state = AllocationState(cluster, partitions_per_shard=1000, reserve_shard0=0, existing=existing)
    alloc = ConstraintAllocator(state, rng=random.Random(2), fast=fast)
    (made,) = alloc.allocate(request("t", rf=1))
    assert made.nodes != (NodeId("n00"),) and made.partition == 1


def test_a_throwing_constraint_leaves_the_state_consistent() -> None:
    """An exception from a rule midway through a request undoes what the request did."""
    state = state_of(make_cluster([2, 2, 2, 2]))
    alloc = ConstraintAllocator(state, rng=random.Random(1), fast=False)
    calls = Counter[str]()

    def prepare(ctx: object) -> object:
        calls["n"] += 1
        if calls["n"] > 5:
            raise RuntimeError("rule failed")
        return lambda node: True

    alloc.rules = alloc.rules.add_hard(Hard("explodes", prepare))  # type: ignore[arg-type]
    before = snapshot(state)
    with pytest.raises(RuntimeError, match="rule failed"):
        alloc.allocate(request(partitions=4))
    assert snapshot(state) == before


@pytest.mark.parametrize("mode", MODES)
def test_core_balance_within_a_node_is_never_worse_than_one(mode: str) -> None:
    """Core weights of a node differ by at most one once the other cores have caught up with
    core 0's reserve (2 here), which they do first."""
    state = AllocationState(
        make_cluster([1, 3, 8, 16, 5]), partitions_per_shard=1000, reserve_shard0=2
    )
    alloc = allocator(mode, state)
    for n in range(40):
        alloc.allocate(request(f"t{n}", partitions=1 + n % 7, rf=1 + n % 3))
        for w in state.weights:
            assert max(w) - min(w) <= 1 or (w[0] == 2 and max(w[1:]) < 2)


@pytest.mark.parametrize("mode", MODES)
def test_nodes_that_cannot_take_replicas_never_get_one(mode: str) -> None:
    """Read-only, down and excluded nodes are skipped; errors count only usable nodes."""
    from trimtab.cluster import NodeState

    states = [NodeState.WRITABLE, NodeState.READONLY, NodeState.WRITABLE, NodeState.DOWN]
    states += [NodeState.WRITABLE] * 2
    state = state_of(make_cluster([2] * 6, states=states))
    alloc = allocator(mode, state)
    made = alloc.allocate(request(partitions=30), excluded=[NodeId("n05")])
    used = {n for a in made for n in a.nodes}
    assert used == {NodeId("n00"), NodeId("n02"), NodeId("n04")}
    with pytest.raises(InvalidReplicationFactorError) as info:
        alloc.allocate(request("more", rf=3), excluded=[NodeId("n05"), NodeId("n04")])
    assert (info.value.nodes, info.value.excluded) == (2, 2)


def test_errors_say_why_with_the_numbers() -> None:
    """Both typed errors name the topic and the numbers, and are AllocationErrors."""
    state = nearly_full_small_nodes()
    with pytest.raises(AllocationError) as info:
        RfcAllocator(state).allocate(request("orders", partitions=2))
    text = str(info.value)
    assert "topic 'orders'" in text and "6 replica(s) needed" in text
    assert "nothing was allocated" in text and info.value.topic == "orders"


# -- cluster limits and internal topics (upstream's partition_allocator_tests.cc) ---------------


def _planned(cfg: AllocationConfig, cluster: ClusterState, *topics: str) -> int:
    """Replicas placed by one plan of a 1-partition RF1 request per topic."""
    plan = plan_allocations(cluster, [request(t, 1, 1) for t in topics], cfg)
    return plan.replicas


def test_allocation_over_memory_capacity() -> None:
    """topic_memory_per_partition larger than any node's memory: one replica is refused with
    the memory limit (upstream's ``topic_invalid_partitions_memory_limit``)."""
    cfg = AllocationConfig(topic_memory_per_partition=2**63 - 1)
    with pytest.raises(ClusterLimitError) as info:
        _planned(cfg, make_cluster([1]), "t")
    assert info.value.limit == "memory" and info.value.allowed == 0
    assert _planned(AllocationConfig(topic_memory_per_partition=2**20), make_cluster([1]), "t")


def test_allocation_over_fds_capacity() -> None:
    """topic_fds_per_partition above the open-file limit: ``topic_invalid_partitions_fd_limit``.
    Upstream divides its own RLIMIT_NOFILE; trimtab plans offline, so the brokers' limit is a
    key (node_open_files_limit), and no fd limit applies without it."""
    cfg = AllocationConfig(topic_fds_per_partition=2**31 - 1, node_open_files_limit=1_048_576)
    with pytest.raises(ClusterLimitError) as info:
        _planned(cfg, make_cluster([1]), "t")
    assert info.value.limit == "fds"
    assert _planned(AllocationConfig(topic_fds_per_partition=2**31 - 1), make_cluster([1]), "t")


def test_memory_limit_counts_every_replica_against_the_smallest_node() -> None:
    """3 nodes, the smallest of 2**34 bytes, 2**30 per partition: 3·16 = 48 replicas fit."""
    cfg = AllocationConfig(topic_memory_per_partition=2**30)
    plan = plan_allocations(make_cluster([4, 4, 4]), [request("a", 16, 3)], cfg)
    assert plan.replicas == 48
    with pytest.raises(ClusterLimitError, match="49 partition replicas would exceed"):
        plan_allocations(make_cluster([4, 4, 4]), [request("a", 16, 3), request("b", 1, 1)], cfg)


@pytest.mark.parametrize("reserve", [2, 0], ids=["allocation_over_capacity", "without_shard0"])
def test_allocation_over_capacity(reserve: int) -> None:
    """Saturated nodes refuse a topic, take it once it is internal (listed), and refuse it again
    once it is not (``allocation_over_capacity`` and ``…_without_shard0``). Upstream's last
    check, topics of its internal namespaces (``redpanda/controller``), has no Kafka topic
    name to port: such names are refused as topic names."""
    cfg = AllocationConfig(topic_partitions_per_shard=10, topic_partitions_reserve_shard0=reserve)
    cluster = make_cluster([6, 6, 6])
    full = plan_allocations(cluster, [request("fill", 60 - reserve, 3)], cfg).assignments
    plain = AllocationConfig(
        topic_partitions_per_shard=10, topic_partitions_reserve_shard0=reserve, internal_topics=()
    )
    with pytest.raises(CapacityExhaustedError):
        plan_allocations(cluster, [request("tn", 1, 1)], plain, existing=full)
    listed = AllocationConfig(
        topic_partitions_per_shard=10,
        topic_partitions_reserve_shard0=reserve,
        internal_topics=("tn",),
    )
    plan = plan_allocations(cluster, [request("tn", 1, 1)], listed, existing=full)
    assert plan.replicas == 1 and sum(plan.per_node.values()) == 3 * (60 - reserve) + 1
    with pytest.raises(ValueError, match="bad topic name"):
        request("redpanda/controller", 1, 1)
    with pytest.raises(CapacityExhaustedError):
        plan_allocations(cluster, [request("tn", 1, 1)], plain, existing=full)


def test_internal_topics_by_default_are_kafkas_and_redpandas() -> None:
    """The default list is Redpanda's kafka_nodelete_topics (__consumer_offsets, _schemas, the
    audit log) and Kafka's __transaction_state; the cluster limits skip them too."""
    cfg = AllocationConfig(
        topic_partitions_per_shard=1,
        topic_partitions_reserve_shard0=0,
        topic_memory_per_partition=2**63 - 1,
    )
    cluster = make_cluster([1, 1, 1])
    plan = plan_allocations(cluster, [request("__consumer_offsets", 50, 3)], cfg)
    assert plan.replicas == 150
    with pytest.raises(ClusterLimitError):
        plan_allocations(cluster, [request("orders", 1, 1)], cfg)


def test_creating_an_existing_topic_is_an_error_unless_partitions_are_added() -> None:
    """Redpanda's ``topic_already_exists``: a request for a held topic (or one asked twice in a
    batch) is refused; with add_partitions it gets the next partition ids."""
    cluster = make_cluster([4, 4, 4])
    held = plan_allocations(cluster, [request("t", 3, 3)]).assignments
    with pytest.raises(TopicExistsError, match="topic already exists"):
        plan_allocations(cluster, [request("t", 2, 3)], existing=held)
    with pytest.raises(TopicExistsError) as info:
        plan_allocations(cluster, [request("u", 1, 3), request("u", 1, 3)])
    assert info.value.request_index == 1
    plan = plan_allocations(cluster, [request("t", 2, 3)], existing=held, add_partitions=True)
    assert [a.partition for a in plan.assignments] == [3, 4]
