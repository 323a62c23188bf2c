"""Properties over random topologies and requests, checked against independent brute force.

Each example builds a small cluster (up to 10 nodes, 4 racks, 3 regions; some nodes read-only,
some on the default rack), draws ``(E, W, A, exclude)`` and checks: members distinct and
writable, exclusions honoured, coverage met whenever some ensemble could meet it, the error
raised exactly when the request cannot be met, adherence equal to an independent computation.
"""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.strategies import placement_clusters, placement_requests
from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.errors import InvalidQuorumError, NotEnoughNodesError
from trimtab.placement import (
    Adherence,
    DefaultPolicy,
    QuorumCoverage,
    RackAwarePolicy,
    RegionAwarePolicy,
    solve_racks,
)

from .support import (
    brute_force_feasible,
    independent_rack_adherence,
    independent_region_adherence,
    region_of,
    sequence_ok,
)

DEFAULT_RACK = "/default-region/default-rack"
FAST = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def scenarios(
    draw: st.DrawFn,
) -> tuple[dict[NodeId, str], frozenset[NodeId], tuple[int, int, int, frozenset[NodeId]], int]:
    """(locations, read-only nodes, request, seed); a few nodes moved to the default rack."""
    where = draw(placement_clusters())
    nodes = sorted(where)
    for node in draw(st.lists(st.sampled_from(nodes), max_size=2, unique=True)):
        where[node] = DEFAULT_RACK
    readonly = frozenset(draw(st.lists(st.sampled_from(nodes), max_size=2, unique=True)))
    request = draw(placement_requests(nodes))
    return where, readonly, request, draw(st.integers(0, 2**16))


def _candidates(
    where: dict[NodeId, str],
    readonly: frozenset[NodeId],
    exclude: frozenset[NodeId],
    *,
    skip_default: bool,
) -> dict[NodeId, str]:
    return {
        n: r
        for n, r in where.items()
        if n not in readonly and n not in exclude and not (skip_default and r == DEFAULT_RACK)
    }


def _capacity(candidates: dict[NodeId, str]) -> dict[str, int]:
    return dict(Counter(candidates.values()))


@FAST
@given(scenarios(), st.integers(1, 3), st.booleans())
def test_rack_aware_properties(scenario, min_racks: int, enforce: bool) -> None:
    """Rack-aware: distinct writable members, exclusions kept, covered when feasible, the error
    exactly when infeasible, adherence equal to the independent check."""
    where, readonly, (size, write, ack, exclude), seed = scenario
    policy = RackAwarePolicy(
        config=Config.of(
            minNumRacksPerWriteQuorum=min_racks, enforceMinNumRacksPerWriteQuorum=enforce
        ),
        resolver={str(k): v for k, v in where.items()},
        rng=random.Random(seed),
    )
    policy.on_cluster_changed([n for n in where if n not in readonly], readonly)
    candidates = _candidates(where, readonly, exclude, skip_default=enforce)
    need = min(write, min_racks)
    feasible = brute_force_feasible(_capacity(candidates), size, write, ack, min_racks=min_racks)
    possible = feasible if enforce and need >= 2 else len(candidates) >= size
    try:
        placed = policy.new_ensemble(size, write, ack, exclude)
    except NotEnoughNodesError:
        event(f"rack-aware: error, {len(candidates)} candidates for {size}")
        assert not possible
        return
    assert possible
    event(f"rack-aware: {placed.adherence.name}, feasible={feasible}")
    ensemble = placed.ensemble
    assert len(ensemble) == size and len(set(ensemble)) == size
    assert set(ensemble) <= set(candidates)
    forbidden = DEFAULT_RACK if enforce else None
    independent = independent_rack_adherence(ensemble, write, where, min_racks, forbidden=forbidden)
    assert placed.adherence is independent
    if feasible:
        assert placed.adherence is Adherence.MEETS_STRICT


@st.composite
def durable_requests(draw: st.DrawFn) -> tuple[int, int, int]:
    """Sizes region durability accepts with minRegions 2: ``A >= 2`` and ``A > W - W // 2``."""
    size = draw(st.integers(2, 6))
    write = draw(st.integers(2, size))
    ack = draw(st.integers(max(2, write - write // 2 + 1), write))
    return size, write, ack


@FAST
@given(scenarios(), st.integers(1, 3), st.booleans(), st.booleans(), durable_requests())
def test_region_aware_properties(
    scenario, min_racks: int, durable: bool, enforce: bool, sizes: tuple[int, int, int]
) -> None:
    """Region-aware: the same invariants, with region durability (minRegions 2) switched on
    or off, against brute force over rack sequences honouring both rules."""
    where, readonly, (size, write, ack, exclude), seed = scenario
    if durable:
        size, write, ack = sizes
    all_regions = sorted({region_of(r) for r in where.values()})
    keys: dict[str, object] = {
        "minNumRacksPerWriteQuorum": min_racks,
        "enforceMinNumRacksPerWriteQuorum": enforce,
    }
    if durable and len(all_regions) >= 2:
        keys |= {"reppRegionsToWrite": ";".join(all_regions), "reppMinimumRegionsForDurability": 2}
    else:
        durable = False
    policy = RegionAwarePolicy(
        config=Config.of(**keys),
        resolver={str(k): v for k, v in where.items()},
        rng=random.Random(seed),
    )
    policy.on_cluster_changed([n for n in where if n not in readonly], readonly)
    min_regions = 2 if durable else 0
    candidates = _candidates(where, readonly, exclude, skip_default=enforce)
    capacity = _capacity(candidates)
    full = brute_force_feasible(
        capacity, size, write, ack, min_racks=min_racks, min_regions=min_regions
    )
    if enforce:
        possible = full
    elif durable:
        possible = brute_force_feasible(capacity, size, write, ack, min_racks=1, min_regions=2)
    else:
        possible = len(candidates) >= size
    try:
        placed = policy.new_ensemble(size, write, ack, exclude)
    except NotEnoughNodesError:
        event(f"region-aware: not enough nodes (durable={durable})")
        assert not possible
        return
    assert possible
    event(f"region-aware: {placed.adherence.name}, durable={durable}")
    ensemble = placed.ensemble
    assert len(set(ensemble)) == size and set(ensemble) <= set(candidates)
    writable = _candidates(where, readonly, frozenset(), skip_default=False)
    independent = independent_region_adherence(
        ensemble,
        write,
        ack,
        where,
        min_racks=min_racks,
        min_regions=min_regions,
        regions_in_play=len({region_of(r) for r in writable.values()}),
        forbidden=DEFAULT_RACK if enforce else None,
    )
    assert placed.adherence is independent
    if full:
        assert placed.adherence is not Adherence.FAIL


def test_durable_sizes_are_validated() -> None:
    """With minRegions 2, sizes that could not survive a region loss are refused up front."""
    where = {NodeId(f"n{i}:3181"): f"/dc{i % 2}/r0" for i in range(6)}
    policy = RegionAwarePolicy(
        config=Config.of(reppRegionsToWrite="dc0;dc1"),
        resolver={str(k): v for k, v in where.items()},
    )
    policy.on_cluster_changed(where, [])
    for size, write, ack in [(3, 3, 1), (4, 4, 2), (6, 2, 1), (3, 2, 1)]:
        try:
            policy.new_ensemble(size, write, ack)
        except InvalidQuorumError:
            continue
        raise AssertionError(f"E{size} W{write} A{ack} should be refused")


@FAST
@given(scenarios())
def test_default_policy_properties(scenario) -> None:
    """Default: distinct writable members outside the exclusions; raises exactly when fewer
    candidates than E remain."""
    where, readonly, (size, write, ack, exclude), seed = scenario
    policy = DefaultPolicy(rng=random.Random(seed))
    policy.on_cluster_changed([n for n in where if n not in readonly], readonly)
    candidates = _candidates(where, readonly, exclude, skip_default=False)
    try:
        placed = policy.new_ensemble(size, write, ack, exclude)
    except NotEnoughNodesError as exc:
        assert len(candidates) < size
        assert exc.requested == size
        return
    assert len(set(placed.ensemble)) == size and set(placed.ensemble) <= set(candidates)
    assert placed.adherence is Adherence.MEETS_STRICT


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["/a/r0", "/a/r1", "/b/r0", "/b/r1", "/c/r0"]),
        st.integers(0, 3),
        min_size=1,
    ),
    st.integers(1, 6),
    st.data(),
)
def test_exact_search_agrees_with_brute_force(
    capacity: dict[str, int], size: int, data: st.DataObject
) -> None:
    """solve_racks finds a sequence exactly when brute force does, and its answer is valid."""
    write = data.draw(st.integers(1, size))
    ack = data.draw(st.integers(1, write))
    min_racks = data.draw(st.integers(1, 3))
    min_regions = data.draw(st.sampled_from([0, 2, 3]))
    coverage = QuorumCoverage(size, write, ack, min_racks=min_racks, min_regions=min_regions)
    found = solve_racks(capacity, coverage, random.Random(0))
    expected = brute_force_feasible(
        capacity, size, write, ack, min_racks=min_racks, min_regions=min_regions
    )
    assert (found.racks is not None) == expected and not found.exhausted
    if found.racks is not None:
        assert all(Counter(found.racks)[r] <= capacity[r] for r in found.racks)
        assert sequence_ok(found.racks, write, ack, min_racks=min_racks, min_regions=min_regions)


@settings(max_examples=60, deadline=None)
@given(scenarios())
def test_same_seed_same_ensemble(scenario) -> None:
    """Two policies with the same seed and membership make the same ensembles."""
    where, readonly, (size, write, ack, exclude), seed = scenario
    results = []
    for _ in range(2):
        policy = RackAwarePolicy(
            resolver={str(k): v for k, v in where.items()}, rng=random.Random(seed)
        )
        policy.on_cluster_changed([n for n in where if n not in readonly], readonly)
        try:
            results.append(
                [policy.new_ensemble(size, write, ack, exclude).ensemble for _ in range(3)]
            )
        except NotEnoughNodesError:
            results.append([])
    assert results[0] == results[1]
