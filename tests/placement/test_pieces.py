"""The shared pieces: coverage rules, the bounded pick, the exact search, locations, the factory."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.errors import ResolverError
from trimtab.placement import (
    CandidateIndex,
    DefaultPolicy,
    Locator,
    MemoryStats,
    PlacementPolicy,
    QuorumCoverage,
    RackAwarePolicy,
    RegionAwarePolicy,
    UniformWeights,
    pick,
    solve_racks,
    windows_of,
)
from trimtab.placement.selection import MAX_DRAWS, Draft, distinct_members
from trimtab.placement.services import FAILED_TO_RESOLVE_NETWORK_LOCATION, StaticFeatures
from trimtab.systems.bookkeeper.placement_setup import make_policy
from trimtab.topology import TableResolver

from .support import ids, sequence_ok


class TestCoverage:
    def test_windows_wrap_around(self) -> None:
        """E=5, W=3: five quorums, the last two wrapping to position 0."""
        assert windows_of(5, 3) == ((0, 1, 2), (1, 2, 3), (2, 3, 4), (3, 4, 0), (4, 0, 1))
        assert windows_of(3, 3) == ((0, 1, 2),)

    def test_rack_rule_refuses_a_third_node_of_one_rack(self) -> None:
        """The module's worked example: r1 r1 leaves window {0,1,2} needing r2 at slot 2."""
        cov = QuorumCoverage(5, 3, 2, min_racks=2)
        cov.add(0, "/r1", "x")
        cov.add(1, "/r1", "x")
        assert not cov.accepts(2, "/r1", "x")
        assert cov.accepts(2, "/r2", "x")

    def test_wrapped_quorum_counts_its_early_slots(self) -> None:
        """E4 W2: slot 3 shares a quorum with slot 0, so it must differ from slot 0's rack."""
        cov = QuorumCoverage(4, 2, 2, min_racks=2)
        for position, rack in enumerate(["/a", "/b", "/a"]):
            cov.add(position, rack, "x")
        assert not cov.accepts(3, "/a", "x")
        assert cov.accepts(3, "/b", "x")

    def test_durability_rule_caps_a_region_below_the_ack_quorum(self) -> None:
        """minRegions 2, A=2: a quorum may hold at most one replica per region."""
        cov = QuorumCoverage(3, 3, 2, min_racks=1, min_regions=2)
        cov.add(0, "/a/r", "a")
        assert not cov.accepts(1, "/a/r2", "a")
        assert cov.accepts(1, "/b/r", "b")

    def test_durability_with_three_regions_counts_the_fullest_other(self) -> None:
        """minRegions 3, A=3: any two regions together hold at most two replicas."""
        cov = QuorumCoverage(4, 4, 3, min_racks=1, min_regions=3)
        cov.add(0, "/a/r", "a")
        cov.add(1, "/b/r", "b")
        assert not cov.accepts(2, "/a/r", "a")  # a+b would hold 3
        assert cov.accepts(2, "/c/r", "c")

    def test_remove_undoes_add(self) -> None:
        """Backtracking: add then remove leaves the coverage accepting what it accepted."""
        cov = QuorumCoverage(4, 2, 2, min_racks=2, min_regions=2)
        before = [cov.accepts(p, "/a/r", "a") for p in range(4)]
        cov.add(1, "/a/r", "a")
        cov.remove(1, "/a/r", "a")
        assert [cov.accepts(p, "/a/r", "a") for p in range(4)] == before

    def test_single_rack_quorums_need_no_rule(self) -> None:
        """W=1 or minRacks=1 and no durability: nothing is ever refused."""
        assert not QuorumCoverage(3, 1, 1, min_racks=2).active
        assert not QuorumCoverage(3, 3, 2, min_racks=1).active


def _index(where: dict[NodeId, str]) -> CandidateIndex:
    return CandidateIndex.build(where, UniformWeights())


class TestPick:
    def test_nothing_acceptable_gives_none_after_bounded_draws(self) -> None:
        """Every node refused: None, after at most MAX_DRAWS draws and one pass."""
        index = _index({NodeId(f"n{i}:1"): "/r" for i in range(500)})
        calls = Counter[str]()

        def never(node: NodeId) -> bool:
            calls["n"] += 1
            return False

        assert pick(index.pool(), [never], random.Random(1)) is None
        assert calls["n"] <= MAX_DRAWS + 500

    def test_picks_are_uniform_among_acceptable_nodes(self) -> None:
        """10 nodes, 3 refused: each of the 7 others is drawn about 1/7 of 7000 times
        (binomial sd ~29; 5 sd tolerance)."""
        nodes = [NodeId(f"n{i}:1") for i in range(10)]
        index = _index(dict.fromkeys(nodes, "/r"))
        refused = set(nodes[:3])
        rng = random.Random(7)
        counts = Counter(pick(index.pool(), [lambda n: n not in refused], rng) for _ in range(7000))
        assert set(counts) == set(nodes[3:])
        assert all(abs(c - 1000) < 5 * 29 for c in counts.values())

    def test_rare_acceptable_node_is_found_by_the_exact_pass(self) -> None:
        """One acceptable node among 1000: rejection rarely hits it, the exact pass does."""
        nodes = [NodeId(f"n{i}:1") for i in range(1000)]
        index = _index(dict.fromkeys(nodes, "/r"))
        assert pick(index.pool(), [lambda n: n == nodes[417]], random.Random(3)) == nodes[417]

    def test_avoided_racks_are_skipped(self) -> None:
        """avoid_racks keeps draws out of those racks."""
        where = {NodeId(f"n{i}:1"): f"/r{i % 3}" for i in range(30)}
        index = _index(where)
        rng = random.Random(2)
        got = {pick(index.pool(), [], rng, {"/r0", "/r1"}, index.rack_of) for _ in range(50)}
        assert {where[n] for n in got if n is not None} == {"/r2"}

    def test_distinct_members_reads_the_growing_draft(self) -> None:
        """The check prepared once refuses every member added afterwards."""
        where = dict.fromkeys(ids("a", "b"), "/r")
        draft = Draft(_index(where), None, frozenset())
        check = distinct_members().prepare(draft)
        draft.add(ids("a")[0])
        assert not check(ids("a")[0]) and check(ids("b")[0])


class TestSolver:
    def test_rescues_the_greedy_dead_end(self) -> None:
        """A(1) B(1) C(4), E4 W2 m2: the search finds C?C? with A and B apart."""
        cov = QuorumCoverage(4, 2, 2, min_racks=2)
        found = solve_racks({"/x/a": 1, "/x/b": 1, "/x/c": 4}, cov, random.Random(0))
        assert found.racks is not None and Counter(found.racks)["/x/c"] == 2
        assert sequence_ok(found.racks, 2, 2, min_racks=2)

    @pytest.mark.parametrize(
        ("capacity", "size", "reason"),
        [
            pytest.param({"/x/a": 2}, 3, "only 2 candidates", id="too few nodes"),
            pytest.param({"/x/a": 5}, 3, "1 racks", id="fewer racks than a quorum spans"),
        ],
    )
    def test_quick_refusals(self, capacity: dict[str, int], size: int, reason: str) -> None:
        """Hopeless requests are refused before any search, with a reason."""
        found = solve_racks(capacity, QuorumCoverage(size, 2, 2, min_racks=2), random.Random(0))
        assert found.racks is None and reason in found.reason and found.steps == 0

    def test_too_few_regions_for_durability(self) -> None:
        """Durability over 2 regions with one region present is refused at once."""
        cov = QuorumCoverage(3, 3, 2, min_racks=1, min_regions=2)
        found = solve_racks({"/a/r0": 3, "/a/r1": 3}, cov, random.Random(0))
        assert found.racks is None and "regions" in found.reason

    def test_odd_cycle_is_infeasible(self) -> None:
        """E3 W2 with two racks: a 3-cycle cannot alternate two colours."""
        found = solve_racks(
            {"/x/a": 3, "/x/b": 3}, QuorumCoverage(3, 2, 2, min_racks=2), random.Random(0)
        )
        assert found.racks is None and not found.exhausted

    def test_budget_bounds_the_search(self) -> None:
        """With a tiny budget an answer may be unknown; the result says so instead of looping."""
        cov = QuorumCoverage(9, 3, 3, min_racks=3)
        found = solve_racks({"/x/a": 4, "/x/b": 4, "/x/c": 1}, cov, random.Random(0), budget=5)
        assert found.racks is None and found.exhausted and found.steps <= 6


class TestLocations:
    def test_unresolved_nodes_get_a_default_rack_at_the_right_depth(self) -> None:
        """#2490/#4439: a failed lookup lands on the default rack lifted to /region/rack depth."""
        stats = MemoryStats()
        loc = Locator({"a:1": "/dc1/r1"}, default_rack="/default-rack", stats=stats)
        assert loc.locate(["a:1", "b:1"])[NodeId("b:1")] == "/default-region/default-rack"
        assert stats.counters[FAILED_TO_RESOLVE_NETWORK_LOCATION] == 1

    def test_resolver_is_asked_once_and_remembered(self) -> None:
        """A resolver answers per host once; a departed node is still remembered."""
        resolver = TableResolver({"a": "/r1", "b": "/r2"})
        loc = Locator(resolver, default_rack="/default-rack")
        assert loc.locate(["a:1", "b:1"]) == {NodeId("a:1"): "/r1", NodeId("b:1"): "/r2"}
        assert loc.remembered("a:1") == "/r1" and loc.remembered("zz:1") is None

    def test_a_failed_lookup_is_asked_again_and_never_kept(self) -> None:
        """A node the source cannot place gets the default rack now and is asked about again
        at the next lookup, so an answer that arrives later is used."""
        table: dict[str, str] = {}
        loc = Locator(table, default_rack="/default-rack")
        assert loc.locate(["a:1"]) == {NodeId("a:1"): "/default-rack"}
        assert loc.remembered("a:1") == "/default-rack"
        table["a"] = "/r1"
        assert loc.locate(["a:1"]) == {NodeId("a:1"): "/r1"}

    def test_refresh_asks_again_even_for_a_known_node(self) -> None:
        """Every join resolves again: a rack changed while the node was away is picked up."""
        table = {"a": "/r1"}
        loc = Locator(table, default_rack="/default-rack")
        loc.locate(["a:1"])
        table["a"] = "/r2"
        assert loc.locate(["a:1"]) == {NodeId("a:1"): "/r1"}  # remembered between joins
        assert loc.refresh(["a:1"]) == {NodeId("a:1"): "/r2"}

    def test_where_places_the_clients_own_host_without_remembering_it(self) -> None:
        """The client's host is looked up, not added as a node; unknown gives None."""
        loc = Locator({"client.example": "/dc1/r1"}, default_rack="/default-rack")
        assert loc.where("client.example") == "/dc1/r1"
        assert loc.where("elsewhere") is None
        assert loc.remembered("client.example") is None


class TestFactory:
    @pytest.mark.parametrize(
        ("name", "cls"),
        [
            pytest.param("default", DefaultPolicy, id="default"),
            pytest.param(
                "org.apache.bookkeeper.client.RackawareEnsemblePlacementPolicy",
                RackAwarePolicy,
                id="rack-aware by its Java class name",
            ),
            pytest.param("region-aware", RegionAwarePolicy, id="region-aware"),
        ],
    )
    def test_config_names_the_policy(self, name: str, cls: type) -> None:
        """ensemblePlacementPolicy picks the class, upstream spellings accepted."""
        policy = make_policy(Config.of(ensemblePlacementPolicy=name), resolver={})
        assert type(policy) is cls

    def test_resolver_that_cannot_start_falls_back_unless_enforced(self) -> None:
        """No script configured: every node on the default rack; enforced: the error."""
        policy = make_policy(Config())
        policy.on_cluster_changed(["a:1", "b:1"], [])
        assert policy.view.rack_of("a:1") == "/default-rack"
        with pytest.raises(ResolverError):
            make_policy(Config.of(enforceMinNumRacksPerWriteQuorum=True))

    def test_feature_switches_reach_the_policy(self) -> None:
        """Features given to the factory are the ones the policy consults."""
        features = StaticFeatures(["repp_disable_durability_enforcement"])
        policy = make_policy(
            Config.of(ensemblePlacementPolicy="regionaware", reppRegionsToWrite="a;b"),
            resolver={},
            features=features,
        )
        assert isinstance(policy, RegionAwarePolicy) and policy.effective_min_regions() == 1


class TestContract:
    @pytest.mark.parametrize("kind", ["default", "rackaware", "regionaware"])
    def test_every_policy_keeps_the_contract(self, kind: str) -> None:
        """Each policy has every method of the PlacementPolicy protocol."""
        policy = make_policy(Config.of(ensemblePlacementPolicy=kind), resolver={})
        assert isinstance(policy, PlacementPolicy)

    def test_ack_is_held_until_acks_span_the_racks(self) -> None:
        """enforceMinNumFaultDomainsForWrite: two acks from one rack may not complete."""
        where = {"a:1": "/x/r1", "b:1": "/x/r1", "c:1": "/x/r2"}
        held = make_policy(Config.of(enforceMinNumFaultDomainsForWrite=True), resolver=where)
        free = make_policy(Config(), resolver=where)
        for policy in (held, free):
            policy.on_cluster_changed(list(where), [])
        assert not held.ack_may_complete(["a:1", "b:1"], 3, 2)
        assert held.ack_may_complete(["a:1", "c:1"], 3, 2)
        assert free.ack_may_complete(["a:1", "b:1"], 3, 2)

    def test_replacing_a_non_member_is_a_mistake(self) -> None:
        """The node to replace must be in the ensemble (or the ensemble empty)."""
        where = {"a:1": "/x/r1", "b:1": "/x/r2", "c:1": "/x/r2"}
        policy = make_policy(Config(), resolver=where)
        policy.on_cluster_changed(list(where), [])
        with pytest.raises(ValueError, match="not a member"):
            policy.replace_bookie(2, 2, 2, ["a:1", "b:1"], "c:1")
        assert policy.replace_bookie(1, 1, 1, [], "a:1").node != NodeId("a:1")


#: Twelve nodes over two regions and four racks, for the replacement template's tests.
TWO_REGIONS = {f"n{i}:1": f"/dc{i % 2}/r{i % 4}" for i in range(12)}
KINDS = ["default", "rackaware", "regionaware"]


class TestReplacementTemplate:
    """``replace_bookie`` is one template in the policy base; each policy only fills the slot."""

    def policy(self, kind: str, seed: int = 1) -> PlacementPolicy:
        policy = make_policy(
            Config.of(ensemblePlacementPolicy=kind), resolver=TWO_REGIONS, rng=random.Random(seed)
        )
        policy.on_cluster_changed(list(TWO_REGIONS), [])
        return policy

    @pytest.mark.parametrize("kind", KINDS)
    def test_every_policy_refuses_a_non_member_the_same_way(self, kind: str) -> None:
        """The member check is the template's, so the error reads the same everywhere."""
        with pytest.raises(ValueError, match=r"n5:1 is not a member of the ensemble"):
            self.policy(kind).replace_bookie(3, 2, 2, ["n0:1", "n1:1", "n2:1"], "n5:1")

    @pytest.mark.parametrize("kind", KINDS)
    def test_only_the_replaced_slot_changes(self, kind: str) -> None:
        """The new node takes the target's position, outside the ensemble and the exclusions."""
        ensemble = ["n0:1", "n1:1", "n2:1", "n3:1"]
        exclude = {"n4:1", "n5:1"}
        for seed in range(20):
            swap = self.policy(kind, seed).replace_bookie(4, 3, 2, ensemble, "n2:1", exclude)
            assert swap.node not in {*ensemble, *exclude}
            assert swap.ensemble == tuple(NodeId(n) for n in ["n0:1", "n1:1", swap.node, "n3:1"])

    @pytest.mark.parametrize("kind", KINDS)
    def test_an_empty_ensemble_asks_for_any_one_node(self, kind: str) -> None:
        """Upstream's tests replace in an empty ensemble to ask for a single node."""
        swap = self.policy(kind).replace_bookie(1, 1, 1, [], "n0:1")
        assert swap.ensemble == (swap.node,) and swap.node != NodeId("n0:1")

    def test_the_default_policy_never_reorders_reads(self) -> None:
        """Even with reordering on and a failure on record, the write set is read as is."""
        policy = make_policy(Config.of(reorderReadSequenceEnabled=True), resolver=TWO_REGIONS)
        policy.on_cluster_changed(list(TWO_REGIONS), ["n1:1"])
        ensemble = ["n0:1", "n1:1", "n2:1"]
        assert policy.reorder_read_sequence(ensemble, [1, 0, 2], {"n1:1": 7}) == (1, 0, 2)
        assert policy.reorder_read_lac_sequence(ensemble, [1, 0], {"n1:1": 7}) == (1, 0, 2)
