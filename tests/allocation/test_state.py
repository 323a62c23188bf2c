"""The allocation state: capacity, core weights, transactions, and counts that match a recount."""

from __future__ import annotations

import contextlib
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.allocation.helpers import make_cluster, recount, snapshot
from tests.strategies import allocation_clusters, allocation_scripts
from trimtab.allocation import (
    AllocationRequest,
    AllocationState,
    ConstraintAllocator,
    PartitionAssignment,
    RendezvousAllocator,
    Replica,
    RfcAllocator,
)
from trimtab.allocation.base import Allocator
from trimtab.cluster import ClusterState, NodeId
from trimtab.config import AllocationConfig
from trimtab.errors import AllocationError


def test_capacity_is_cores_times_per_core_minus_the_core0_reserve() -> None:
    """Capacity = cores × topic_partitions_per_shard − topic_partitions_reserve_shard0."""
    state = AllocationState(make_cluster([1, 2, 16]), partitions_per_shard=1000, reserve_shard0=2)
    assert state.capacity == (998, 1998, 15998)
    assert state.weights[1] == [2, 0]


def test_the_least_loaded_core_is_the_first_of_least_weight() -> None:
    """The module's worked example: weights (2, 0) take five replicas on cores 1, 1, 0, 1, 0."""
    state = AllocationState(make_cluster([2]), partitions_per_shard=1000, reserve_shard0=2)
    with state.transaction() as tx:
        cores = [tx.place(0, "t", 0) for _ in range(5)]
        tx.commit()
    assert cores == [1, 1, 0, 1, 0] and state.weights[0] == [4, 3]
    assert state.core_counts("n00") == (2, 3)


def test_config_profiles_set_the_per_core_numbers() -> None:
    """The RFC profile gives 7,000 per core and reserve 2; today's Redpanda 1,000 and 0."""
    cluster = make_cluster([4])
    assert AllocationState.of(cluster).capacity == (27998,)
    redpanda = AllocationConfig(profile="redpanda")
    assert AllocationState.of(cluster, redpanda).capacity == (4000,)


class TestTransaction:
    def test_leaving_the_block_without_commit_undoes_everything(self) -> None:
        """A tentative allocation is undone when the block ends uncommitted."""
        state = AllocationState(make_cluster([2, 2]), partitions_per_shard=16, reserve_shard0=0)
        before = snapshot(state)
        with state.transaction() as tx:
            tx.place(0, "t", 10)
            tx.register(PartitionAssignment("t", 0, (Replica(NodeId("n00"), 0),), 10))
            assert state.counts == [1, 0] and state.assigned_bytes == [10, 0]
        assert snapshot(state) == before

    def test_commit_keeps_the_changes_and_closes(self) -> None:
        """Committed changes stay; a closed transaction refuses more changes."""
        state = AllocationState(make_cluster([2]), partitions_per_shard=16, reserve_shard0=0)
        with state.transaction() as tx:
            tx.place(0, "t", 0)
            tx.commit()
        assert state.counts == [1] and tx.closed
        with pytest.raises(RuntimeError, match="closed"):
            tx.place(0, "t", 0)

    def test_undo_is_idempotent(self) -> None:
        """Rolling back twice, or after a commit, changes nothing."""
        state = AllocationState(make_cluster([2]), partitions_per_shard=16, reserve_shard0=0)
        tx = state.transaction()
        tx.place(0, "t", 0)
        tx.rollback()
        tx.rollback()
        assert state.counts == [0]
        done = state.transaction()
        done.place(0, "t", 0)
        done.commit()
        done.rollback()
        assert state.counts == [1]

    def test_rollback_to_a_mark_keeps_what_came_before(self) -> None:
        """Changes after the mark are undone, newest first; earlier ones stay."""
        state = AllocationState(make_cluster([2, 2]), partitions_per_shard=16, reserve_shard0=0)
        with state.transaction() as tx:
            tx.place(0, "t", 0)
            mark = tx.mark()
            tx.place(1, "t", 0)
            tx.place(1, "u", 0)
            tx.rollback_to(mark)
            assert state.counts == [1, 0] and state.topic_counts == {"t": {0: 1}}
            tx.commit()


def test_existing_assignments_are_counted_and_checked() -> None:
    """Existing partitions count; unknown nodes, missing cores or doubled nodes are refused."""
    cluster = make_cluster([2, 2])
    held = PartitionAssignment("t", 3, (Replica(NodeId("n00"), 1), Replica(NodeId("n01"), 0)))
    state = AllocationState(cluster, partitions_per_shard=16, reserve_shard0=0, existing=[held])
    assert state.counts == [1, 1] and state.next_partition("t") == 4
    bad = [
        PartitionAssignment("t", 0, (Replica(NodeId("n09"), 0),)),
        PartitionAssignment("t", 0, (Replica(NodeId("n00"), 2),)),
        PartitionAssignment("t", 0, (Replica(NodeId("n00"), 0), Replica(NodeId("n00"), 1))),
    ]
    for assignment in bad:
        with pytest.raises((KeyError, ValueError)):
            AllocationState(
                cluster, partitions_per_shard=16, reserve_shard0=0, existing=[assignment]
            )


def test_deallocation_frees_slots_and_full_nodes_come_back() -> None:
    """A full node takes replicas again once one of its partitions is released."""
    state = AllocationState(make_cluster([1, 1]), partitions_per_shard=16, reserve_shard0=0)
    alloc = RfcAllocator(state)
    made = alloc.allocate(AllocationRequest(topic="t", partitions=16, replication_factor=2))
    assert len(alloc.ring) == 0
    state.deallocate(made[3])
    assert list(alloc.ring) == [NodeId("n00"), NodeId("n01")] and state.counts == [15, 15]
    again = alloc.allocate(AllocationRequest(topic="t", partitions=1, replication_factor=2))
    assert again[0].partition == 16 and state.counts == [16, 16]
    with pytest.raises(KeyError):
        state.deallocate(made[3])


def _allocator(mode: str, state: AllocationState, seed: int) -> Allocator:
    if mode == "rfc":
        return RfcAllocator(state)
    if mode == "rendezvous":
        return RendezvousAllocator(state, rack_aware=seed % 2 == 0)
    return ConstraintAllocator(
        state, rng=random.Random(seed), rack_aware=seed % 2 == 0, verify=mode == "verified"
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cluster=allocation_clusters(),
    script=allocation_scripts(),
    mode=st.sampled_from(["rfc", "constraints", "verified", "rendezvous"]),
    seed=st.integers(0, 2**16),
)
def test_counts_always_equal_a_recount(
    cluster: ClusterState, script: list[tuple[int, ...]], mode: str, seed: int
) -> None:
    """After any allocations and deallocations (failed ones too), per-node and per-core counts
    equal what the held assignments give, no node holds two replicas of a partition, and no
    node is over capacity."""
    state = AllocationState(cluster, partitions_per_shard=16, reserve_shard0=seed % 3)
    alloc = _allocator(mode, state, seed)
    for step in script:
        if step[0] == 1:
            held = state.assignments()
            if held:
                state.deallocate(held[step[1] % len(held)])
            continue
        _, topic, partitions, rf, size = step
        request = AllocationRequest(
            topic=f"t{topic}",
            partitions=partitions,
            replication_factor=rf,
            partition_size_bytes=size,
        )
        with contextlib.suppress(AllocationError):
            alloc.allocate(request)
        per_node, per_core = recount(state, state.assignments())
        assert per_node == state.per_node()
        assert per_core == state.per_core()
        assert all(len(set(a.nodes)) == len(a.nodes) for a in state.assignments())
        assert all(c <= cap for c, cap in zip(state.counts, state.capacity, strict=True))
