"""Region-aware placement: shares, durability, rotation, replacement, adherence, fan-out."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.diskinfo import BookieInfo
from trimtab.errors import ConfigError, InvalidQuorumError, NotEnoughNodesError
from trimtab.placement import (
    Adherence,
    MemoryStats,
    RegionAwarePolicy,
    StaticFeatures,
    region_shares,
)
from trimtab.placement.services import REGION_AWARE_ANOMALOUS_ENSEMBLE

from .support import ids, independent_region_adherence, quorums, region_of, region_policy


def regions(count: int, racks: int = 2, per_rack: int = 3) -> dict[NodeId, str]:
    """``count`` regions ``dc<i>`` of ``racks`` racks of ``per_rack`` nodes."""
    return {
        NodeId(f"n{g}-{r}-{j}:3181"): f"/dc{g}/r{r}"
        for g in range(count)
        for r in range(racks)
        for j in range(per_rack)
    }


DURABLE: dict[str, Any] = {
    "reppRegionsToWrite": "dc0;dc1;dc2",
    "reppMinimumRegionsForDurability": 2,
}


def spread(ensemble: tuple[NodeId, ...], where: dict[NodeId, str]) -> Counter[str]:
    return Counter(region_of(where[n]) for n in ensemble)


class TestShares:
    def test_fifteen_over_three_regions_is_five_each(self) -> None:
        """The seed's example: a 15-member ensemble over 3 regions takes 5 from each."""
        where = regions(3, racks=3, per_rack=3)
        policy = region_policy(where, seed=2)
        for _ in range(20):
            placed = policy.new_ensemble(15, 3, 3)
            assert sorted(spread(placed.ensemble, where).values()) == [5, 5, 5]
            assert placed.adherence is Adherence.MEETS_STRICT

    @pytest.mark.parametrize("count", [3, 5])
    @pytest.mark.parametrize("size", [6, 7, 8, 9])
    def test_six_to_nine_members_always_span_three_regions(self, count: int, size: int) -> None:
        """Upstream: with 3 or 5 regions, E6-9 always lands in at least 3 regions."""
        where = regions(count)
        policy = region_policy(where, seed=size)
        for _ in range(10):
            assert len(spread(policy.new_ensemble(size, 3, 3).ensemble, where)) >= 3

    def test_shares_respect_what_a_region_has(self) -> None:
        """A region with one free node gives one; the others share the rest evenly."""
        assert region_shares(6, ["a", "b", "c"], {"a": 9, "b": 1, "c": 9}) == {
            "a": 2,
            "b": 1,
            "c": 3,
        }
        assert region_shares(4, ["a", "b"], {"a": 1, "b": 1}) == {"a": 1, "b": 1}

    def test_rotation_spreads_the_extra_member(self) -> None:
        """4 regions, E=3: the regions left out rotate, so all four get used over calls."""
        where = regions(4)
        policy = region_policy(where)
        used = Counter(
            r for _ in range(8) for r in spread(policy.new_ensemble(3, 2, 2).ensemble, where)
        )
        assert set(used) == {"dc0", "dc1", "dc2", "dc3"}

    def test_local_region_always_gets_a_member(self) -> None:
        """The local region goes first in the share order (upstream myRegion)."""
        where = regions(4)
        policy = region_policy(where, local_location="/dc3/r0")
        for _ in range(8):
            assert "dc3" in spread(policy.new_ensemble(3, 2, 2).ensemble, where)

    def test_write_quorums_mix_regions(self) -> None:
        """Members are interleaved by region, so a W=3 quorum never sits in one region."""
        where = regions(3)
        policy = region_policy(where)  # no durability rule: the interleaving alone does it
        placed = policy.new_ensemble(9, 3, 2)
        for q in quorums(9, 3):
            assert len({region_of(where[placed.ensemble[p]]) for p in q}) >= 2


class TestDurability:
    def test_no_region_pair_can_ack_alone(self) -> None:
        """minRegions=2, E6 W3 A3: no single region holds 3 replicas of a quorum."""
        where = regions(3)
        policy = region_policy(where, **DURABLE)
        for _ in range(50):
            placed = policy.new_ensemble(6, 3, 3)
            for q in quorums(6, 3):
                assert max(Counter(region_of(where[placed.ensemble[p]]) for p in q).values()) <= 2

    @pytest.mark.parametrize(
        ("sizes", "why"),
        [
            pytest.param((3, 3, 1), "smaller than", id="ack quorum below the minimum regions"),
            pytest.param((4, 4, 2), "cannot survive", id="ack quorum too small to survive"),
            pytest.param((2, 3, 3), "need 1 <= A <= W <= E", id="write quorum above ensemble"),
        ],
    )
    def test_impossible_sizes_are_refused(self, sizes: tuple[int, int, int], why: str) -> None:
        """Upstream's validation: A >= minRegions, E >= W >= A, A > W - W // minRegions."""
        policy = region_policy(regions(3), **DURABLE)
        with pytest.raises(InvalidQuorumError, match=why):
            policy.new_ensemble(*sizes)

    def test_fewer_configured_regions_than_durability_needs(self) -> None:
        """reppRegionsToWrite with one region and a minimum of two is a config error."""
        with pytest.raises(ConfigError):
            RegionAwarePolicy(
                config=Config.of(reppRegionsToWrite="dc0", reppMinimumRegionsForDurability=2)
            )

    def test_only_one_region_with_nodes_cannot_be_durable(self) -> None:
        """Durability on, one region has nodes: no durable ensemble exists, so it raises."""
        where = regions(1)
        policy = region_policy(where, **DURABLE)
        with pytest.raises(NotEnoughNodesError, match="durable"):
            policy.new_ensemble(3, 3, 3)

    def test_disable_durability_feature(self) -> None:
        """The durability feature switch turns the rule off: one region is then enough."""
        where = regions(1)
        policy = RegionAwarePolicy(
            config=Config.of(**DURABLE),
            resolver={str(k): v for k, v in where.items()},
            rng=random.Random(1),
            features=StaticFeatures(["repp_disable_durability_enforcement"]),
        )
        policy.on_cluster_changed(where, [])
        assert len(policy.new_ensemble(3, 3, 2).ensemble) == 3

    def test_disallowed_region_gets_no_member(self) -> None:
        """reppDisallowBookiePlacementInRegionFeatureName switched on for dc1 keeps it out."""
        where = regions(3)
        policy = RegionAwarePolicy(
            config=Config.of(reppDisallowBookiePlacementInRegionFeatureName="no-new"),
            resolver={str(k): v for k, v in where.items()},
            rng=random.Random(1),
            features=StaticFeatures([("dc1", "no-new")]),
        )
        policy.on_cluster_changed(where, [])
        for _ in range(20):
            assert "dc1" not in spread(policy.new_ensemble(4, 2, 2).ensemble, where)


class TestReplace:
    def test_same_rack_then_same_region(self) -> None:
        """A free node in the replaced node's rack wins; with none there, its region does."""
        where = regions(2, racks=2, per_rack=2)
        policy = region_policy(where)
        members = [NodeId("n0-0-0:3181"), NodeId("n1-0-0:3181")]
        swap = policy.replace_bookie(2, 2, 2, members, members[0])
        assert swap.node == NodeId("n0-0-1:3181")
        swap = policy.replace_bookie(2, 2, 2, members, members[0], exclude=["n0-0-1:3181"])
        assert where[swap.node].startswith("/dc0/")

    def test_other_region_keeps_durability(self) -> None:
        """dc0 exhausted: the replacement comes from another region without breaking quorums."""
        where = regions(3, racks=1, per_rack=3)
        policy = region_policy(where, seed=4, **DURABLE)
        placed = policy.new_ensemble(6, 3, 3)
        target = next(n for n in placed.ensemble if where[n].startswith("/dc0/"))
        spare = [n for n in where if where[n].startswith("/dc0/") and n not in placed.ensemble]
        for _ in range(20):
            swap = policy.replace_bookie(6, 3, 3, placed.ensemble, target, exclude=spare)
            assert not where[swap.node].startswith("/dc0/")
            assert swap.adherence is not Adherence.FAIL

    def test_anomalous_ensemble_is_counted_and_not_enforced(self) -> None:
        """An ensemble already breaking durability is counted and replaced without the rule."""
        where = regions(3, racks=1, per_rack=4)
        stats = MemoryStats()
        policy = region_policy(where, stats=stats, **DURABLE)
        dc0 = [n for n in where if where[n].startswith("/dc0/")]
        swap = policy.replace_bookie(4, 4, 3, dc0, dc0[0])
        assert stats.counters[REGION_AWARE_ANOMALOUS_ENSEMBLE] == 1
        assert swap.node not in dc0


class TestAdherence:
    @pytest.mark.parametrize(
        ("members", "expected"),
        [
            pytest.param(["a", "c", "b", "d"], Adherence.MEETS_STRICT, id="durable, three racks"),
            pytest.param(["a", "c", "e", "d"], Adherence.MEETS_SOFT, id="a quorum on two racks"),
            pytest.param(["a", "b", "e", "c"], Adherence.FAIL, id="a quorum in one region"),
            pytest.param([], Adherence.FAIL, id="empty"),
        ],
    )
    def test_levels(self, members: list[str], expected: Adherence) -> None:
        """FAIL breaks durability; SOFT is durable with a rack rule short; STRICT keeps all.

        E4 W3 A3, minRegions 2 (no region may hold 3 of a quorum), minRacks 3.
        """
        where = {
            **dict.fromkeys(ids("a", "e", "f"), "/dc0/r0"),
            **dict.fromkeys(ids("b"), "/dc0/r1"),
            **dict.fromkeys(ids("c"), "/dc1/r0"),
            **dict.fromkeys(ids("d"), "/dc1/r1"),
        }
        config: dict[str, Any] = {
            "reppRegionsToWrite": "dc0;dc1",
            "reppMinimumRegionsForDurability": 2,
            "minNumRacksPerWriteQuorum": 3,
        }
        policy = region_policy(where, **config)
        assert policy.is_ensemble_adhering(ids(*members), 3, 3) is expected
        independent = independent_region_adherence(
            ids(*members), 3, 3, where, min_racks=3, min_regions=2, regions_in_play=2
        )
        assert independent is expected

    def test_acked_bookies_need_two_regions_with_durability(self) -> None:
        """Durability on: acks from one region do not adhere, from two they do."""
        where = regions(2, racks=2, per_rack=1)
        policy = region_policy(where, reppRegionsToWrite="dc0;dc1")
        assert not policy.are_acked_bookies_adhering(["n0-0-0:3181", "n0-1-0:3181"], 3, 2)
        assert policy.are_acked_bookies_adhering(["n0-0-0:3181", "n1-0-0:3181"], 3, 2)


class TestFanOut:
    def test_bookie_info_reaches_every_region_policy(self) -> None:
        """#4522: update_bookie_info is stored on the policy and on each per-region policy."""
        where = regions(3)
        policy = region_policy(where)
        info = {str(n): (1000, 100 + i) for i, n in enumerate(where)}
        policy.update_bookie_info(info)
        expected = {NodeId(k): BookieInfo(*v) for k, v in info.items()}
        assert policy.bookie_info == expected
        assert set(policy.regions) == {"dc0", "dc1", "dc2"}
        for sub in policy.regions.values():
            assert sub.bookie_info == expected

    def test_region_joined_later_gets_the_latest_info(self) -> None:
        """A region first seen after an update starts with the info already known."""
        where = {str(k): v for k, v in regions(2).items()}
        policy = RegionAwarePolicy(resolver={**where, "late:3181": "/dc9/r0"})
        policy.on_cluster_changed(where, [])
        policy.update_bookie_info({"x:3181": (10, 5)})
        policy.on_cluster_changed([*where, "late:3181"], [])
        assert policy.regions["dc9"].bookie_info == {NodeId("x:3181"): BookieInfo(10, 5)}

    def test_rack_change_reaches_the_region_policies(self) -> None:
        """#3665: a node moving region leaves one per-region policy and joins the other."""
        table = {"a:3181": "/dc0/r0", "b:3181": "/dc1/r0", "c:3181": "/dc1/r1"}
        policy = RegionAwarePolicy(resolver=table, rng=random.Random(1))
        policy.on_cluster_changed(list(table), [])
        a = NodeId("a:3181")
        assert a in policy.regions["dc0"].view.writable
        table["a:3181"] = "/dc1/r2"
        policy.on_rack_change([a])
        assert a not in policy.regions["dc0"].view.writable
        assert policy.regions["dc1"].view.rack_of(a) == "/dc1/r2"
