"""Upstream ``TestRegionAwareEnsemblePlacementPolicy`` (apache/bookkeeper), ported as
conformance tests that keep upstream's test names.

As in the rack-aware port, a host -> location mapping stands in for upstream's static DNS table
and the client's own location is given directly (upstream's ``updateMyRack``). Feature switches
are a small settable provider, as upstream's ``SettableFeatureProvider``.

Departures asserted here, with the reason:
    * a node the resolver cannot place sits in region ``default-region`` (the first part of the
      default rack ``/default-region/default-rack``), not upstream's synthetic ``UnknownRegion``:
      one region name rule for every location;
    * with ``reppDisallowBookiePlacementInRegionFeatureName`` closing regions, no fallback ever
      places in them: too few nodes left is not-enough-nodes (upstream's test expects the same).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest

from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.diskinfo import BookieInfo
from trimtab.errors import NotEnoughNodesError
from trimtab.placement import RegionAwarePolicy
from trimtab.placement.policy import uniform_weights
from trimtab.placement.weights import disk_weights

DEFAULT = "/default-region/default-rack"
DISABLE_DURABILITY = "repp_disable_durability_enforcement"

#: Upstream's test methods (@Test), in file order.
UPSTREAM_TESTS = (
    "testNotReorderReadIfInDefaultRack",
    "testNodeInSameRegion",
    "testNodeNotInSameRegions",
    "testNodeDown",
    "testNodeReadOnly",
    "testNodeSlow",
    "testTwoNodesSlow",
    "testTwoNodesDown",
    "testNodeDownAndNodeSlow",
    "testNodeDownAndReadOnlyAndNodeSlow",
    "testReplaceBookieWithEnoughBookiesInSameRegion",
    "testReplaceBookieWithEnoughBookiesInDifferentRegion",
    "testNewEnsembleBookieWithNotEnoughBookies",
    "testNewEnsembleBookieWithOneEmptyRegion",
    "testReplaceBookieWithNotEnoughBookies",
    "testNewEnsembleWithSingleRegion",
    "testNewEnsembleWithMultipleRegions",
    "testNewEnsembleWithPickDifferentRack",
    "testNewEnsembleWithEnoughRegions",
    "testNewEnsembleWithMultipleRacksWithCommonRack",
    "testNewEnsembleWithThreeRegions",
    "testNewEnsembleWithThreeRegionsWithDisable",
    "testNewEnsembleWithFiveRegions",
    "testEnsembleWithThreeRegionsReplace",
    "testEnsembleWithThreeRegionsReplaceDisableOneRegion",
    "testEnsembleWithThreeRegionsReplaceMinDurabilityOne",
    "testEnsembleWithThreeRegionsReplaceDisableDurability",
    "testEnsembleMinDurabilityOne",
    "testEnsembleDisableDurability",
    "testNewEnsembleFailWithFiveRegions",
    "testBasicReorderReadSequenceWithLocalRegion",
    "testBasicReorderReadLACSequenceWithLocalRegion",
    "testBasicReorderReadSequenceWithRemoteRegion",
    "testBasicReorderReadLACSequenceWithRemoteRegion",
    "testReorderReadSequenceWithUnavailableOrReadOnlyBookies",
    "testReorderReadLACSequenceWithUnavailableOrReadOnlyBookies",
    "testRecoveryOnNodeFailure",
    "testNodeWithFailures",
    "testNewEnsembleSetWithFiveRegions",
    "testRegionsWithDiskWeight",
    "testRegionsWithDifferentDiskWeight",
    "testNotifyRackChangeWithOldRegion",
    "testNotifyRackChangeWithNewRegion",
    "testNewEnsemblePickLocalRegionBookies",
    "testBookieLeftThenJoinWithDNSResolveFailed",
)

NOT_PORTED = {
    "testNewEnsembleBookieWithOneEmptyRegion": "replaces the class's Java logger by reflection",
}


class Switches:
    """Settable feature switches: ``name`` everywhere, or ``(scope, name)`` in one region."""

    def __init__(self) -> None:
        self.on: set[tuple[str | None, str]] = set()

    def set(self, name: str, value: bool, scope: str | None = None) -> None:
        (self.on.add if value else self.on.discard)((scope, name))

    def is_on(self, name: str, scope: str | None = None) -> bool:
        return (None, name) in self.on or (scope, name) in self.on


def a(i: int) -> NodeId:
    """Upstream's ``addr<i>``: 127.0.0.<i+1>:3181."""
    return NodeId(f"127.0.0.{i + 1}:3181")


def make(
    racks: Mapping[NodeId, str],
    *,
    local: str | None = None,
    features: Switches | None = None,
    writable: Iterable[NodeId] | None = None,
    readonly: Sequence[NodeId] = (),
    seed: int = 1,
    **config: Any,
) -> RegionAwarePolicy:
    cfg = Config.of(**config)
    enabled = cfg.placement.disk_weight_based_placement_enabled
    policy = RegionAwarePolicy(
        config=cfg,
        resolver={n.host: r for n, r in racks.items()},
        rng=random.Random(seed),
        local_location=local,
        features=features,
        weights=disk_weights(cfg) if enabled else uniform_weights,
        default_rack=DEFAULT,
    )
    members = list(racks) if writable is None else list(writable)
    policy.on_cluster_changed([n for n in members if n not in readonly], readonly)
    return policy


def region(location: str) -> str:
    return location.split("/")[1]


def regions_in(policy: RegionAwarePolicy, ensemble: Iterable[NodeId]) -> int:
    """Upstream ``getNumRegionsInEnsemble``."""
    return len({region(policy.view.remembered_rack(n) or DEFAULT) for n in ensemble})


def covered_regions(policy: RegionAwarePolicy, ensemble: Sequence[NodeId], wq: int) -> int:
    """Upstream ``getNumCoveredRegionsInWriteQuorum``: write quorums spanning two regions."""
    rack = policy.view.remembered_rack
    size = len(ensemble)
    return sum(
        len({region(rack(ensemble[(i + k) % size]) or DEFAULT) for k in range(wq)}) >= 2
        for i in range(size)
    )


def change_rack(policy: RegionAwarePolicy, moves: Mapping[NodeId, str]) -> None:
    """The resolver's table changes and the policy is told (upstream ``changeRack``)."""
    source = policy.view.locator._source
    assert isinstance(source, dict)
    source.update({n.host: r for n, r in moves.items()})
    policy.on_rack_change(list(moves))


#: Upstream's setUp: addr1 /r1/rack1, addr2 and addr3 default, addr4 /r1/rack2.
SETUP = {a(1): "/r1/rack1", a(2): DEFAULT, a(3): DEFAULT, a(4): "/r1/rack2"}
ENSEMBLE = list(SETUP)


def read_order(
    local: str,
    *,
    down: Sequence[NodeId] = (),
    readonly: Sequence[NodeId] = (),
    slow: Mapping[NodeId, int] | None = None,
    history: Mapping[NodeId, int] | None = None,
    racks: Mapping[NodeId, str] = SETUP,
    ensemble: Sequence[NodeId] = ENSEMBLE,
) -> tuple[int, ...]:
    policy = make(racks, local=local)
    gone = set(down) | set(readonly)
    policy.on_cluster_changed([n for n in racks if n not in gone], readonly)
    for n in slow or {}:
        policy.register_slow_bookie(n, 0)
    return policy.reorder_read_sequence(
        [str(n) for n in ensemble],
        tuple(range(len(ensemble))),
        {str(n): v for n, v in (history or {}).items()},
        pending_requests={str(n): v for n, v in (slow or {}).items()},
    )


THREE_BY_THREE = {a(i): f"/region{(i - 1) // 3 + 1}/r{(i - 1) % 3 + 1}" for i in range(1, 10)}


class TestRegionAwareEnsemblePlacementPolicy:
    # -- read order ------------------------------------------------------------------------

    def testNotReorderReadIfInDefaultRack(self) -> None:
        """A client on the default rack has no region: the write set is read as is."""
        assert read_order(DEFAULT) == (0, 1, 2, 3)

    def testNodeInSameRegion(self) -> None:
        """Client in r1: the two r1 members first, then the others."""
        assert read_order("/r1/rack3") == (0, 3, 1, 2)

    def testNodeNotInSameRegions(self) -> None:
        """Client in r2, where no member is: unchanged."""
        assert read_order("/r2/rack1") == (0, 1, 2, 3)

    def testNodeDown(self) -> None:
        assert read_order("/r1/rack1", down=[a(1)]) == (3, 1, 2, 0)

    def testNodeReadOnly(self) -> None:
        assert read_order("/r1/rack1", readonly=[a(1)]) == (3, 1, 2, 0)

    def testNodeSlow(self) -> None:
        assert read_order("/r1/rack1", slow={a(1): 1}) == (3, 1, 2, 0)

    def testTwoNodesSlow(self) -> None:
        assert read_order("/r1/rack1", slow={a(1): 1, a(2): 2}) == (3, 2, 0, 1)

    def testTwoNodesDown(self) -> None:
        assert read_order("/r1/rack1", down=[a(1), a(2)]) == (3, 2, 0, 1)

    def testNodeDownAndNodeSlow(self) -> None:
        assert read_order("/r1/rack1", down=[a(2)], slow={a(1): 1}) == (3, 2, 0, 1)

    def testNodeDownAndReadOnlyAndNodeSlow(self) -> None:
        got = read_order("/r1/rack1", down=[a(1)], readonly=[a(2)], slow={a(3): 1})
        assert got == (3, 1, 2, 0)

    def testNodeWithFailures(self) -> None:
        """Client /r2/rack1, eight members, failures on a1..a4: healthy local, a remote,
        local with failures, then the rest, older failures first within a class."""
        racks = {
            a(1): "/r1/rack1",
            a(2): "/r2/rack1",
            a(3): "/r2/rack2",
            a(4): "/r1/rack2",
            a(5): "/r1/rack3",
            a(6): "/r2/rack3",
            a(7): "/r2/rack4",
            a(8): "/r1/rack4",
        }
        ensemble = [a(i) for i in range(1, 9)]
        history = {a(1): 20, a(2): 22, a(3): 24, a(4): 25}
        got = read_order("/r2/rack1", racks=racks, ensemble=ensemble, history=history)
        assert [ensemble[i] for i in got] == [a(i) for i in (6, 7, 5, 2, 3, 8, 1, 4)]

    def testBasicReorderReadSequenceWithLocalRegion(self) -> None:
        """Client in region2, E9/W9 over three regions of three: two local, one remote, one
        local, then the remote ones."""
        _local_region_reads(lac=False)

    def testBasicReorderReadLACSequenceWithLocalRegion(self) -> None:
        _local_region_reads(lac=True)

    def testBasicReorderReadSequenceWithRemoteRegion(self) -> None:
        """Client in region4, which holds no member: every write set is read as is."""
        _remote_region_reads(lac=False)

    def testBasicReorderReadLACSequenceWithRemoteRegion(self) -> None:
        _remote_region_reads(lac=True)

    def testReorderReadSequenceWithUnavailableOrReadOnlyBookies(self) -> None:
        """Only region2 writable, region3 read-only, region1 gone: region2's members, then
        region3's, then region1's, each in write-set order."""
        _unavailable_reads(lac=False)

    def testReorderReadLACSequenceWithUnavailableOrReadOnlyBookies(self) -> None:
        _unavailable_reads(lac=True)

    # -- replacement -----------------------------------------------------------------------

    def testReplaceBookieWithEnoughBookiesInSameRegion(self) -> None:
        """addr2 in region1: the other region1 bookie replaces it."""
        racks = {
            a(1): DEFAULT,
            a(2): "/region1/r1",
            a(3): "/region1/r2",
            a(4): "/default-region/r3",
        }
        assert make(racks).replace_bookie(1, 1, 1, [], a(2)).node == a(3)

    def testReplaceBookieWithEnoughBookiesInDifferentRegion(self) -> None:
        """addr2 alone in its region, addr1 excluded: addr3 or addr4."""
        racks = {a(1): DEFAULT, a(2): "/region1/r2", a(3): "/region2/r3", a(4): "/region3/r4"}
        policy = make(racks)
        for _ in range(20):
            assert policy.replace_bookie(1, 1, 1, [], a(2), exclude=[a(1)]).node in {a(3), a(4)}

    def testNewEnsembleBookieWithNotEnoughBookies(self) -> None:
        """Four bookies cannot make E5."""
        racks = {a(1): DEFAULT, **{a(i): f"/region{i}/r{i}" for i in (2, 3, 4)}}
        with pytest.raises(NotEnoughNodesError):
            make(racks).new_ensemble(5, 5, 3)

    def testReplaceBookieWithNotEnoughBookies(self) -> None:
        racks = {a(1): DEFAULT, **{a(i): f"/region{i}/r{i}" for i in (2, 3, 4)}}
        with pytest.raises(NotEnoughNodesError):
            make(racks).replace_bookie(1, 1, 1, [], a(2), exclude=[a(1), a(3), a(4)])

    def testRecoveryOnNodeFailure(self) -> None:
        """addr1 has left; replacing it in [addr1, addr3, addr6] takes its rack mate addr2."""
        racks = {a(i): f"/region{(i + 1) // 2}/r{(i + 1) // 2}" for i in range(1, 7)}
        policy = make(racks)
        policy.on_cluster_changed([n for n in racks if n != a(1)], [])
        assert policy.replace_bookie(3, 3, 2, [a(1), a(3), a(6)], a(1)).node == a(2)

    # -- new ensembles ---------------------------------------------------------------------

    def testNewEnsembleWithSingleRegion(self) -> None:
        """All in region1: E3 and E4 of W2 span no second region in any write quorum."""
        policy = make(dict.fromkeys((a(1), a(2), a(3), a(4)), "/region1/r2"))
        assert covered_regions(policy, policy.new_ensemble(3, 2, 2).ensemble, 2) == 0
        assert covered_regions(policy, policy.new_ensemble(4, 2, 2).ensemble, 2) == 0

    def testNewEnsembleWithMultipleRegions(self) -> None:
        """One default-region bookie, three in region1: some but not all write quorums mix."""
        racks = {a(1): DEFAULT, **dict.fromkeys((a(2), a(3), a(4)), "/region1/r2")}
        policy = make(racks)
        for size in (3, 4):
            assert 1 <= covered_regions(policy, policy.new_ensemble(size, 2, 2).ensemble, 2) < 3

    def testNewEnsembleWithPickDifferentRack(self) -> None:
        """region-1 has r1={a1,a2}, r2, r3; E4/W4 never takes both of r1 while r3 is there,
        and must once a4 (r3) leaves."""
        racks = {
            a(1): "/region-1/r1",
            a(2): "/region-1/r1",
            a(3): "/region-1/r2",
            a(4): "/region-1/r3",
            a(5): "/region-2/r1",
        }
        policy = make(racks, minNumRacksPerWriteQuorum=2, enforceMinNumFaultDomainsForWrite=False)
        for _ in range(50):
            assert not {a(1), a(2)} <= set(policy.new_ensemble(4, 4, 2).ensemble)
        policy.on_cluster_changed([n for n in racks if n != a(4)], [])
        for _ in range(50):
            assert {a(1), a(2)} <= set(policy.new_ensemble(4, 4, 2).ensemble)

    def testNewEnsembleWithEnoughRegions(self) -> None:
        """Four regions of two: every write quorum of E3 and E4 (W2) spans two regions."""
        racks = {
            a(1): "/default-region/default-rack1",
            a(2): "/region1/r2",
            a(3): "/region2/r3",
            a(4): "/region3/r4",
            a(5): "/default-region/default-rack2",
            a(6): "/region1/r12",
            a(7): "/region2/r13",
            a(8): "/region3/r14",
        }
        policy = make(racks)
        assert covered_regions(policy, policy.new_ensemble(3, 2, 2).ensemble, 2) == 3
        assert covered_regions(policy, policy.new_ensemble(4, 2, 2).ensemble, 2) == 4

    def testNewEnsembleWithMultipleRacksWithCommonRack(self) -> None:
        """Six in region1/r1, one each in r2, r3, region2, region3: E10/W10 with 3 racks
        enforced always succeeds."""
        racks = dict.fromkeys([a(i) for i in range(1, 7)], "/region1/r1")
        racks |= {a(7): "/region1/r2", a(8): "/region1/r3"}
        racks |= {a(9): "/region2/r1", a(10): "/region3/r1"}
        policy = make(racks, enforceMinNumRacksPerWriteQuorum=True, minNumRacksPerWriteQuorum=3)
        for _ in range(50):
            assert len(policy.new_ensemble(10, 10, 2).ensemble) == 10

    def testNewEnsembleWithThreeRegions(self) -> None:
        """region3 has only addr4 and addr8: E6..E9 always take both and span 3 regions."""
        policy = make(_TEN_IN_THREE)
        for size in (6, 7, 8, 9):
            ensemble = policy.new_ensemble(size, size, 4).ensemble
            assert {a(4), a(8)} <= set(ensemble) and len(ensemble) == size
            assert regions_in(policy, ensemble) == 3

    def testNewEnsembleWithThreeRegionsWithDisable(self) -> None:
        """region1 disabled: E6 is region2's four and region3's two. region2 disabled too:
        two bookies left, not enough (never the disabled regions, no fallback). region2
        enabled again: the same six."""
        switches = Switches()
        name = "disallowBookies"
        policy = make(
            _TEN_IN_THREE,
            features=switches,
            reppDisallowBookiePlacementInRegionFeatureName=name,
        )
        six = {a(1), a(3), a(4), a(7), a(8), a(9)}
        switches.set(name, True, "region1")
        ensemble = policy.new_ensemble(6, 6, 4).ensemble
        assert set(ensemble) == six and regions_in(policy, ensemble) == 2
        switches.set(name, True, "region2")
        with pytest.raises(NotEnoughNodesError):
            policy.new_ensemble(6, 6, 4)
        switches.set(name, False, "region2")
        ensemble = policy.new_ensemble(6, 6, 4).ensemble
        assert set(ensemble) == six and regions_in(policy, ensemble) == 2

    def testNewEnsembleWithFiveRegions(self) -> None:
        """Five regions of three, durability across all five: E10 spans five regions; with
        addr10 excluded, region4's other two are both in."""
        policy = make(_FIFTEEN_IN_FIVE, **_FIVE_REGIONS)
        ensemble = policy.new_ensemble(10, 10, 10).ensemble
        assert len(ensemble) == 10 and regions_in(policy, ensemble) == 5
        ensemble = policy.new_ensemble(10, 10, 10, exclude=[a(10)]).ensemble
        assert {a(11), a(12)} <= set(ensemble) and regions_in(policy, ensemble) == 5

    def testNewEnsembleFailWithFiveRegions(self) -> None:
        """Five regions of two with region5's both excluded: durability across five regions
        is impossible, even with validation off."""
        racks = {a(i): f"/region{(i + 1) // 2}/r{i}" for i in range(1, 11)}
        policy = make(racks, reppEnableValidation=False, **_FIVE_REGIONS)
        with pytest.raises(NotEnoughNodesError):
            policy.new_ensemble(10, 10, 10, exclude=[a(9), a(10)])

    def testNewEnsembleSetWithFiveRegions(self) -> None:
        """One bookie per region, E3: consecutive ensembles differ (the regions rotate)."""
        policy = make({a(i): f"/region{i}/r{i}" for i in range(1, 6)})
        first, second, third = (set(policy.new_ensemble(3, 3, 2).ensemble) for _ in range(3))
        assert first & second and second - third

    def testEnsembleWithThreeRegionsReplace(self) -> None:
        """Durability 3 (A5): see :func:`_three_regions_replace` (upstream's
        testEnsembleWithThreeRegionsReplaceInternal; the next three tests vary it)."""
        _three_regions_replace(3, False, False)

    def testEnsembleWithThreeRegionsReplaceDisableOneRegion(self) -> None:
        _three_regions_replace(2, False, True)

    def testEnsembleWithThreeRegionsReplaceMinDurabilityOne(self) -> None:
        _three_regions_replace(1, False, False)

    def testEnsembleWithThreeRegionsReplaceDisableDurability(self) -> None:
        _three_regions_replace(1, True, False)

    def testEnsembleMinDurabilityOne(self) -> None:
        """Seven bookies all in region1, three regions to write: with durability 1 an E6 is
        placed and a member replaced."""
        _durability_off(1, disable=False)

    def testEnsembleDisableDurability(self) -> None:
        """The same with durability 2 switched off by its feature."""
        _durability_off(2, disable=True)

    # -- disk weights ----------------------------------------------------------------------

    def testRegionsWithDiskWeight(self) -> None:
        """Disk weights on, validation off, five one-bookie regions: E3 is placed."""
        policy = make(
            {a(i): f"/region{i}/r{i}" for i in range(1, 6)},
            reppEnableValidation=False,
            diskWeightBasedPlacementEnabled=True,
        )
        assert len(policy.new_ensemble(3, 3, 2).ensemble) == 3

    def testRegionsWithDifferentDiskWeight(self) -> None:
        """E2 over region1 {800k, 400k} and region2 {200k, 300k, 400k}: inclusion follows
        free space inside each region (ratios 2, 1.5, 2 within 1), and follows it again when
        the free space changes."""
        racks = {a(1): "/region1/r1", a(2): "/region1/r1"}
        racks |= dict.fromkeys((a(3), a(4), a(5)), "/region2/r2")
        policy = make(racks, reppEnableValidation=False, diskWeightBasedPlacementEnabled=True)
        for free, checks in (
            ((800, 400, 200, 300, 400), ((1, 2, 2.0), (4, 3, 1.5), (5, 3, 2.0))),
            ((400, 800, 400, 300, 200), ((2, 1, 2.0), (4, 5, 1.5), (3, 5, 2.0))),
        ):
            policy.update_bookie_info(
                {a(i): BookieInfo(1_000_000, f * 1000) for i, f in enumerate(free, 1)}
            )
            counts: Counter[NodeId] = Counter()
            for _ in range(5000):
                counts.update(policy.new_ensemble(2, 2, 2).ensemble)
            for x, y, ratio in checks:
                assert abs(counts[a(x)] / counts[a(y)] - ratio) < 1.0

    # -- rack changes and rejoins ----------------------------------------------------------

    def testNotifyRackChangeWithOldRegion(self) -> None:
        """addr2 and addr4 move to /region1/rack-2: region1's policy holds three, region2's
        one."""
        policy = make(_TWO_BY_TWO)
        change_rack(policy, {a(2): "/region1/rack-2", a(4): "/region1/rack-2"})
        assert policy.view.rack_of(a(4)) == "/region1/rack-2"
        assert _members(policy) == {"region1": {a(1), a(2), a(4)}, "region2": {a(3)}}

    def testNotifyRackChangeWithNewRegion(self) -> None:
        """addr2 and addr4 move to a new region3: it gets its own policy with both."""
        policy = make(_TWO_BY_TWO)
        change_rack(policy, {a(2): "/region3/rack-1", a(4): "/region3/rack-1"})
        assert _members(policy) == {"region1": {a(1)}, "region2": {a(3)}, "region3": {a(2), a(4)}}

    def testNewEnsemblePickLocalRegionBookies(self) -> None:
        """Client on /region1/r2 with addr8, addr9: every E3 takes one of them and never two
        bookies of region2's one rack; once they leave, addr1 (the rest of region1) is in."""
        racks = {a(1): "/region1/r1", **dict.fromkeys((a(2), a(3), a(4)), "/region2/r2")}
        racks |= {a(5): "/region3/r3", a(6): "/region4/r4", a(7): "/region5/r5"}
        racks |= {a(8): "/region1/r2", a(9): "/region1/r2"}
        policy = make(racks, local="/region1/r2")
        for _ in range(100):
            ensemble = set(policy.new_ensemble(3, 3, 2).ensemble)
            assert ensemble & {a(8), a(9)}
            assert not {a(2), a(3)} <= ensemble
        policy.on_cluster_changed([n for n in racks if n not in (a(8), a(9))], [])
        for _ in range(100):
            assert a(1) in policy.new_ensemble(3, 3, 2).ensemble

    def testBookieLeftThenJoinWithDNSResolveFailed(self) -> None:
        """addr1 on the default rack (its lookup failed) leaves and rejoins: it is located
        again, in region ``default-region`` (upstream: ``UnknownRegion``); when its rack
        becomes /region-1/default-rack it moves to region-1's policy."""
        racks = {
            a(1): DEFAULT,
            a(2): "/region-1/default-rack",
            a(3): "/region-2/default-rack",
            a(4): "/region-3/default-rack",
        }
        policy = make(racks)
        assert set(_members(policy)) == {"default-region", "region-1", "region-2", "region-3"}
        policy.on_cluster_changed([a(2), a(3), a(4)], [])
        assert policy.view.rack_of(a(1)) is None
        policy.on_cluster_changed(list(racks), [])
        assert policy.view.rack_of(a(1)) == DEFAULT
        assert _members(policy)["default-region"] == {a(1)}
        change_rack(policy, {a(1): "/region-1/default-rack"})
        members = _members(policy)
        assert "default-region" not in members and members["region-1"] == {a(1), a(2)}


_TEN_IN_THREE = {
    a(1): "/region2/r1",
    a(2): "/region1/r2",
    a(3): "/region2/r3",
    a(4): "/region3/r4",
    a(5): "/region1/r11",
    a(6): "/region1/r12",
    a(7): "/region2/r13",
    a(8): "/region3/r14",
    a(9): "/region2/r23",
    a(10): "/region1/r24",
}
_FIFTEEN_IN_FIVE = {a(i): f"/region{(i - 1) // 3 + 1}/r{i}" for i in range(1, 16)}
_FIVE_REGIONS: dict[str, Any] = {
    "reppRegionsToWrite": "region1;region2;region3;region4;region5",
    "reppMinimumRegionsForDurability": 5,
}
_TWO_BY_TWO = {
    a(1): "/region1/rack-1",
    a(2): "/region1/rack-1",
    a(3): "/region2/rack-1",
    a(4): "/region2/rack-1",
}


def _members(policy: RegionAwarePolicy) -> dict[str, set[NodeId]]:
    """Each region policy's writable members (upstream's ``perRegionPlacement``), non-empty."""
    return {r: set(sub.view.writable) for r, sub in policy.regions.items() if sub.view.writable}


def _local_region_reads(*, lac: bool) -> None:
    for i, regions in _reads_by_region("/region2", lac=lac):
        assert regions[:2] == ["region2"] * 2, i
        assert regions[2] != "region2" and regions[3] == "region2"
        assert "region2" not in regions[4:]


def _remote_region_reads(*, lac: bool) -> None:
    policy = make(THREE_BY_THREE, local="/region4")
    ensemble = [str(n) for n in policy.new_ensemble(9, 9, 5).ensemble]
    read = policy.reorder_read_lac_sequence if lac else policy.reorder_read_sequence
    for i in range(9):
        write_set = tuple((i + k) % 9 for k in range(9))
        assert read(ensemble, write_set) == write_set


def _unavailable_reads(*, lac: bool) -> None:
    policy = make(THREE_BY_THREE, local="/region4")
    ensemble = list(policy.new_ensemble(9, 9, 5).ensemble)
    of = {n: region(THREE_BY_THREE[n]) for n in ensemble}
    policy.on_cluster_changed(
        [n for n in ensemble if of[n] == "region2"], [n for n in ensemble if of[n] == "region3"]
    )
    read = policy.reorder_read_lac_sequence if lac else policy.reorder_read_sequence
    for i in range(9):
        write_set = tuple((i + k) % 9 for k in range(9))
        expected = [
            p for r in ("region2", "region3", "region1") for p in write_set if of[ensemble[p]] == r
        ]
        assert list(read([str(n) for n in ensemble], write_set)) == expected


def _reads_by_region(local: str, *, lac: bool) -> list[tuple[int, list[str]]]:
    policy = make(THREE_BY_THREE, local=local)
    ensemble = policy.new_ensemble(9, 9, 5).ensemble
    read = policy.reorder_read_lac_sequence if lac else policy.reorder_read_sequence
    out = []
    for i in range(9):
        write_set = tuple((i + k) % 9 for k in range(9))
        order = read([str(n) for n in ensemble], write_set)
        out.append((i, [region(THREE_BY_THREE[ensemble[p]]) for p in order]))
    return out


def _three_regions_to_write(
    racks: Mapping[NodeId, str], min_durability: int, disable_durability: bool, **config: Any
) -> tuple[RegionAwarePolicy, Switches]:
    """Upstream's set-up of the durability tests: regions 1-3 to write, durability
    ``min_durability`` (enforced in replacements above 1), optionally switched off."""
    switches = Switches()
    if disable_durability:
        switches.set(DISABLE_DURABILITY, True)
    policy = make(
        racks,
        features=switches,
        reppRegionsToWrite="region1;region2;region3",
        reppMinimumRegionsForDurability=min_durability,
        reppEnableDurabilityEnforcementInReplace=min_durability > 1,
        **config,
    )
    return policy, switches


def _three_regions_replace(
    min_durability: int, disable_durability: bool, disable_region: bool
) -> None:
    """Three regions of three (one rack each), E6/W6, A4 (A5 for durability 3): the ensemble
    spans 3 regions. With region2 closed, region2's members are replaced from regions 1 and 3.
    Otherwise a region2 member is replaced by region2's free bookie; with that one excluded
    too, durability (when on) makes it impossible."""
    racks = {a(i): f"/region{(i - 1) // 3 + 1}/r{i}" for i in range(1, 10)}
    policy, switches = _three_regions_to_write(
        racks,
        min_durability,
        disable_durability,
        reppDisallowBookiePlacementInRegionFeatureName="disallowBookies",
    )
    ack = 5 if min_durability > 2 else 4
    ensemble = list(policy.new_ensemble(6, 6, ack).ensemble)
    assert len(ensemble) == 6 and regions_in(policy, ensemble) == 3
    region2 = [a(4), a(5), a(6)]
    if disable_region:
        switches.set("disallowBookies", True, "region2")
        for node in region2:
            if node in ensemble:
                swap = policy.replace_bookie(6, 6, ack, ensemble, node)
                ensemble[ensemble.index(node)] = swap.node
        assert regions_in(policy, ensemble) == 2
        assert set(ensemble) == set(racks) - set(region2)
        return
    target = a(4) if a(4) in ensemble else a(5)
    expected = next(n for n in region2 if n not in ensemble)
    assert policy.replace_bookie(6, 6, ack, ensemble, target).node == expected
    durable = min_durability > 1 and not disable_durability
    if durable:
        with pytest.raises(NotEnoughNodesError):
            policy.replace_bookie(6, 6, ack, ensemble, target, exclude=[expected])
    else:
        policy.replace_bookie(6, 6, ack, ensemble, target, exclude=[expected])


def _durability_off(min_durability: int, *, disable: bool) -> None:
    racks = {a(i): f"/region1/r{i}" for i in range(1, 8)}
    policy, _ = _three_regions_to_write(racks, min_durability, disable)
    ensemble = policy.new_ensemble(6, 6, 4).ensemble
    assert len(ensemble) == 6
    policy.replace_bookie(6, 6, 4, ensemble, ensemble[2])


def test_every_upstream_test_is_ported_or_says_why_not() -> None:
    """Each of upstream's tests is a method of the class above or in ``NOT_PORTED``."""
    cls = TestRegionAwareEnsemblePlacementPolicy
    ported = {name for name in vars(cls) if name.startswith("test")}
    assert set(UPSTREAM_TESTS) == ported | set(NOT_PORTED)
    assert not ported & set(NOT_PORTED)
