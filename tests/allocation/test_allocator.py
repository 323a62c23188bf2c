"""The constraint allocator: the fast path against the spec, balance relative to capacity,
heterogeneous clusters, interleaving, racks and disks."""

from __future__ import annotations

import contextlib
import itertools
import math
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.allocation.helpers import make_cluster
from tests.strategies import allocation_clusters, allocation_scripts
from trimtab.allocation import (
    AllocationRequest,
    AllocationState,
    ConstraintAllocator,
    FastPathMismatchError,
    _fast,
)
from trimtab.cluster import ClusterState, NodeId
from trimtab.errors import AllocationError


def request(topic: str, partitions: int, rf: int = 3, size: int = 0) -> AllocationRequest:
    return AllocationRequest(
        topic=topic, partitions=partitions, replication_factor=rf, partition_size_bytes=size
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cluster=allocation_clusters(max_nodes=10),
    script=allocation_scripts(max_steps=8),
    rack_aware=st.booleans(),
    topic_aware=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_the_fast_path_picks_from_the_specs_best_ties(
    cluster: ClusterState,
    script: list[tuple[int, ...]],
    rack_aware: bool,
    topic_aware: bool,
    seed: int,
) -> None:
    """On every replica the incremental index chooses a node the constraint objects rank best
    (verify=True raises otherwise), through failures, rollbacks and deallocations."""
    state = AllocationState(cluster, partitions_per_shard=16, reserve_shard0=seed % 3)
    alloc = ConstraintAllocator(
        state, rng=random.Random(seed), rack_aware=rack_aware, topic_aware=topic_aware, verify=True
    )
    for step in script:
        if step[0] == 1:
            held = state.assignments()
            if held:
                state.deallocate(held[step[1] % len(held)])
            continue
        _, topic, partitions, rf, size = step
        excluded = [state.ids[seed % len(state)]] if seed % 5 == 0 else []
        with contextlib.suppress(AllocationError):
            alloc.allocate(request(f"t{topic}", partitions, rf, size), excluded=excluded)


def test_verify_catches_a_fast_path_that_strays(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fast path choosing outside the best ties is reported, not silently used."""
    state = AllocationState(make_cluster([1, 8]), partitions_per_shard=16, reserve_shard0=0)
    monkeypatch.setattr(_fast.FastChooser, "_pick_plain", lambda self, chosen: 0)
    alloc = ConstraintAllocator(state, rng=random.Random(1), verify=True)
    with pytest.raises(FastPathMismatchError, match="fast path chose n00"):
        alloc.allocate(request("t", 1, rf=1))
    assert state.counts == [0, 0]


@pytest.mark.parametrize("fast", [True, False], ids=["fast path", "reference"])
def test_the_same_seed_gives_the_same_plan(fast: bool) -> None:
    """Two allocators with one seed make identical assignments; another seed differs."""

    def plan(seed: int) -> tuple[object, ...]:
        state = AllocationState(make_cluster([4] * 8), partitions_per_shard=100, reserve_shard0=0)
        alloc = ConstraintAllocator(state, rng=random.Random(seed), fast=fast)
        return tuple(a.replicas for a in alloc.allocate(request("t", 30)))

    assert plan(7) == plan(7)
    assert plan(7) != plan(8)


def test_interleaving_keeps_replica_pairs_near_their_expected_frequency() -> None:
    """600 RF3 partitions on 12 equal nodes: every node pair shares partitions within
    ±3√expected of expected = 600·3/66 (Redpanda's test_replica_pair_frequency bound)."""
    state = AllocationState.of(make_cluster([4] * 12))
    made = ConstraintAllocator(state, rng=random.Random(4)).allocate(request("t", 600))
    pairs = Counter(frozenset(p) for a in made for p in itertools.combinations(a.nodes, 2))
    expected = 600 * 3 / 66
    for pair in itertools.combinations(state.ids, 2):
        assert abs(pairs[frozenset(pair)] - expected) <= 3 * math.sqrt(expected)


@pytest.mark.parametrize("fast", [True, False], ids=["fast path", "reference"])
def test_with_more_replicas_than_racks_the_racks_are_used_evenly(fast: bool) -> None:
    """RF4 on two racks: two replicas in each rack, never three in one."""
    cluster = make_cluster([4] * 6, racks=["a", "a", "a", "b", "b", "b"])
    state = AllocationState.of(cluster)
    alloc = ConstraintAllocator(state, rng=random.Random(5), rack_aware=True, fast=fast)
    for a in alloc.allocate(request("t", 20, rf=4)):
        racks = Counter(state.racks[state.index[n]] for n in a.nodes)
        assert sorted(racks.values()) == [2, 2]


def test_disks_above_the_hard_limit_take_no_replicas_and_emptier_disks_win_ties() -> None:
    """A node at 96 % full is never chosen; among equal nodes the emptiest disk wins."""
    total = 10**12
    free = [4 * 10**10, 5 * 10**11, 9 * 10**11, 3 * 10**11]  # 96 %, 50 %, 10 %, 70 % full
    state = AllocationState.of(make_cluster([4] * 4, disk_total=total, disk_free=free))
    alloc = ConstraintAllocator(state, rng=random.Random(6))
    (first,) = alloc.allocate(request("t", 1, rf=1))
    assert first.nodes == (NodeId("n02"),)
    made = alloc.allocate(request("u", 30, rf=3))
    assert NodeId("n00") not in {n for a in made for n in a.nodes}


def test_a_partition_size_fills_disks_and_stops_at_the_hard_limit() -> None:
    """Replicas of 100 GB on 1 TB disks: at most 9 per node fit under 95 %, then it fails."""
    state = AllocationState.of(make_cluster([4, 4, 4], disk_total=10**12))
    alloc = ConstraintAllocator(state, rng=random.Random(7))
    alloc.allocate(request("big", 9, size=10**11))
    assert state.counts == [9, 9, 9]
    with pytest.raises(AllocationError, match="must not fill the disk"):
        alloc.allocate(request("more", 1, size=10**11))
    assert state.counts == [9, 9, 9]
