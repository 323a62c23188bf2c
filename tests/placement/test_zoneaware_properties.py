"""Zone-aware invariants over random zone / upgrade-domain layouts (hypothesis, fixed seeds).

Every ensemble returned has distinct, writable, non-excluded members off the default fault
domain and never FAILs; with at least E zones to draw from it is MEETS_STRICT (every write
quorum on ``min(W, desired)`` zones); a replacement keeps the same guarantees.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.errors import NotEnoughNodesError
from trimtab.placement import Adherence
from trimtab.placement.zoneaware import DEFAULT_FAULT_DOMAIN, ZoneAwarePolicy, zone_and_domain

FAST = settings(max_examples=150, deadline=None, derandomize=True)


@st.composite
def layouts(draw: st.DrawFn) -> dict[NodeId, str]:
    """1-5 zones of 1-3 upgrade domains of 1-2 nodes; a few nodes on the default domain."""
    where: dict[NodeId, str] = {}
    for zone in range(draw(st.integers(1, 5))):
        for ud in range(draw(st.integers(1, 3))):
            for k in range(draw(st.integers(1, 2))):
                where[NodeId(f"z{zone}u{ud}n{k}:3181")] = f"/z{zone}/u{ud}"
    for k in range(draw(st.integers(0, 2))):
        where[NodeId(f"default{k}:3181")] = DEFAULT_FAULT_DOMAIN
    return where


def policy_for(where: dict[NodeId, str], seed: int) -> ZoneAwarePolicy:
    policy = ZoneAwarePolicy(
        config=Config.of(ensemblePlacementPolicy="zoneaware"),
        resolver={n.host: loc for n, loc in where.items()},
        rng=random.Random(seed),
    )
    policy.on_cluster_changed(where, [])
    return policy


@FAST
@given(
    where=layouts(),
    write=st.integers(3, 4),
    groups=st.integers(1, 2),
    seed=st.integers(0, 10_000),
    data=st.data(),
)
def test_new_ensembles_are_distinct_covered_and_strict_when_zones_allow(
    where: dict[NodeId, str], write: int, groups: int, seed: int, data: st.DataObject
) -> None:
    size = write * groups
    policy = policy_for(where, seed)
    exclude = set(data.draw(st.lists(st.sampled_from(sorted(where)), max_size=2)))
    try:
        result = policy.new_ensemble(size, write, 2, exclude=exclude)
    except NotEnoughNodesError:
        usable = {n for n, loc in where.items() if loc != DEFAULT_FAULT_DOMAIN} - exclude
        zones = {zone_and_domain(where[n]) for n in usable}
        assert len(usable) < size or len({z[0] for z in zones if z}) < size
        return
    members = result.ensemble
    assert len(members) == size and len(set(members)) == size
    assert not exclude & set(members)
    assert all(where[n] != DEFAULT_FAULT_DOMAIN for n in members)
    assert result.adherence is not Adherence.FAIL
    zones_free = {where[n].split("/")[1] for n in where if n not in exclude} - {"default-zone"}
    if len(zones_free) >= size:
        assert result.adherence is Adherence.MEETS_STRICT


@FAST
@given(where=layouts(), seed=st.integers(0, 10_000), data=st.data())
def test_replacements_keep_members_distinct_and_never_fail(
    where: dict[NodeId, str], seed: int, data: st.DataObject
) -> None:
    policy = policy_for(where, seed)
    try:
        ensemble = policy.new_ensemble(3, 3, 2).ensemble
    except NotEnoughNodesError:
        return
    target = data.draw(st.sampled_from(ensemble))
    try:
        result = policy.replace_bookie(3, 3, 2, ensemble, target)
    except NotEnoughNodesError:
        return
    assert result.node not in ensemble
    assert len(set(result.ensemble)) == 3
    assert where[result.node] != DEFAULT_FAULT_DOMAIN
    assert result.adherence is not Adherence.FAIL
