"""Rack-aware placement: upstream TestRackawareEnsemblePlacementPolicy cases, as our own tests."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.diskinfo import BookieInfo
from trimtab.errors import InvalidQuorumError, NotEnoughNodesError
from trimtab.placement import Adherence, MemoryStats, RackAwarePolicy, UniformWeights
from trimtab.placement.selection import MAX_DRAWS, Sampler
from trimtab.placement.services import (
    ENSEMBLE_NOT_ADHERING,
)

from .support import ids, independent_rack_adherence, quorums, rack_policy

DEFAULT = "/default-region/default-rack"


def grid(racks: int, per_rack: int, *, region: str = "default-region") -> dict[NodeId, str]:
    """``racks`` racks ``/region/r<i>`` of ``per_rack`` nodes each."""
    return {
        NodeId(f"b{r}-{j}:3181"): f"/{region}/r{r}" for r in range(racks) for j in range(per_rack)
    }


def covered_quorums(ensemble: tuple[NodeId, ...], write: int, where: dict[NodeId, str]) -> int:
    """How many round-robin write quorums span at least two racks (upstream's helper)."""
    return sum(
        len({where[ensemble[p]] for p in q}) >= min(write, 2) for q in quorums(len(ensemble), write)
    )


class TestNewEnsemble:
    def test_every_write_quorum_spans_two_racks(self) -> None:
        """E3/W2 over three racks: all three quorums cover two racks, MEETS_STRICT."""
        where = grid(3, 2)
        policy = rack_policy(where)
        for _ in range(200):
            placed = policy.new_ensemble(3, 2, 2)
            assert covered_quorums(placed.ensemble, 2, where) == 3
            assert placed.adherence is Adherence.MEETS_STRICT

    def test_members_come_from_unused_racks_first(self) -> None:
        """With five racks and E=5, the unused-rack preference puts each member in its own rack."""
        where = grid(5, 4)
        policy = rack_policy(where)
        for _ in range(100):
            placed = policy.new_ensemble(5, 2, 2)
            assert len({where[n] for n in placed.ensemble}) == 5

    def test_first_member_comes_from_the_local_rack(self) -> None:
        """A client in rack r2 gets r2 first (upstream localNode), other racks after."""
        where = grid(4, 3)
        policy = RackAwarePolicy(
            resolver={str(k): v for k, v in where.items()},
            rng=random.Random(3),
            local_location="/default-region/r2",
        )
        policy.on_cluster_changed(where, [])
        firsts = {where[policy.new_ensemble(3, 2, 2).ensemble[0]] for _ in range(50)}
        assert firsts == {"/default-region/r2"}

    def test_ignore_local_node_setting_spreads_first_members(self) -> None:
        """ignoreLocalNodeInPlacementPolicy: the local rack gets no head start."""
        where = grid(4, 3)
        policy = RackAwarePolicy(
            config=Config.of(ignoreLocalNodeInPlacementPolicy=True),
            resolver={str(k): v for k, v in where.items()},
            rng=random.Random(3),
            local_location="/default-region/r2",
        )
        policy.on_cluster_changed(where, [])
        firsts = {where[policy.new_ensemble(3, 2, 2).ensemble[0]] for _ in range(80)}
        assert len(firsts) == 4

    def test_single_rack_falls_back_to_random_and_fails_adherence(self) -> None:
        """One rack: E3/W2 and E4/W2 still succeed, no quorum covered, FAIL (upstream)."""
        where = grid(1, 4)
        stats = MemoryStats()
        policy = rack_policy(where, stats=stats)
        for size in (3, 4):
            placed = policy.new_ensemble(size, 2, 2)
            assert covered_quorums(placed.ensemble, 2, where) == 0
            assert placed.adherence is Adherence.FAIL
        assert stats.counters[ENSEMBLE_NOT_ADHERING] == 2

    def test_no_covering_ensemble_still_spreads_over_the_racks(self) -> None:
        """r1 has five nodes, r2 one: no E4/W2 covers every quorum; the fill still puts the r2
        node in, covering the two write quorums through it (a random fill often covers none)."""
        where = {**grid(1, 5), **dict.fromkeys(ids("lone"), "/default-region/r9")}
        policy = rack_policy(where)
        for _ in range(30):
            placed = policy.new_ensemble(4, 2, 2)
            assert covered_quorums(placed.ensemble, 2, where) == 2
            assert placed.adherence is Adherence.FAIL
            assert any("spread over as many racks" in note for note in placed.notes)

    def test_greedy_dead_end_is_rescued_by_exact_search(self) -> None:
        """Racks A(1) B(1) C(4), E4/W2: C A B would leave slot 3 stuck; C A C B always found."""
        where = {**grid(1, 4), **dict.fromkeys(ids("a"), "/x/a"), **dict.fromkeys(ids("b"), "/x/b")}
        for seed in range(60):
            placed = rack_policy(where, seed=seed).new_ensemble(4, 2, 2)
            assert placed.adherence is Adherence.MEETS_STRICT
            assert covered_quorums(placed.ensemble, 2, where) == 4

    def test_same_seed_same_ensembles(self) -> None:
        """Sorted pools and an injected RNG: a seed replays the same sequence of ensembles."""
        where = grid(6, 5)
        runs = [
            [rack_policy(where, seed=9).new_ensemble(5, 3, 2).ensemble for _ in range(20)]
            for _ in range(2)
        ]
        assert runs[0] == runs[1]

    def test_bad_quorum_sizes_are_refused(self) -> None:
        """W > E or A > W is a request error, not a shortage."""
        policy = rack_policy(grid(3, 3))
        with pytest.raises(InvalidQuorumError):
            policy.new_ensemble(2, 3, 2)
        with pytest.raises(InvalidQuorumError):
            policy.new_ensemble(3, 2, 3)

    def test_read_only_nodes_are_never_chosen(self) -> None:
        """A read-only node is known for reads but never placed on."""
        where = grid(3, 2)
        readonly = set(list(where)[:2])
        policy = rack_policy(where, readonly=readonly)
        chosen = {n for _ in range(200) for n in policy.new_ensemble(4, 2, 2).ensemble}
        assert not chosen & readonly


class TestNotEnoughNodes:
    def test_exclusions_leaving_fewer_than_e_raise_with_the_numbers(self) -> None:
        """Excluding 3 of 4 nodes: E=2 raises saying 2 asked, 4 available, 3 excluded; E=1 works."""
        where = grid(2, 2)
        policy = rack_policy(where)
        excluded = list(where)[:3]
        with pytest.raises(NotEnoughNodesError) as info:
            policy.new_ensemble(2, 2, 2, excluded)
        assert (info.value.requested, info.value.available, info.value.excluded) == (2, 4, 3)
        assert policy.new_ensemble(1, 1, 1, excluded).ensemble == (list(where)[3],)

    @pytest.mark.parametrize(
        ("exclude_all", "enforce"),
        [
            pytest.param(True, False, id="every node excluded"),
            pytest.param(False, True, id="an odd cycle of two racks under enforcement"),
        ],
    )
    def test_hopeless_requests_raise_after_bounded_draws(
        self, exclude_all: bool, enforce: bool
    ) -> None:
        """#4324: a request nothing can satisfy raises after a bounded number of draws (E3 W2
        over two racks needs a 3-cycle of alternating racks, which cannot exist)."""
        draws = Counter[str]()

        class Counting(UniformWeights):
            def sampler(self, pool: tuple[NodeId, ...]) -> Sampler:
                inner = super().sampler(pool)

                class Spy:
                    def draw(self, rng: random.Random) -> NodeId:
                        draws["n"] += 1
                        return inner.draw(rng)

                return Spy()

        where = grid(2, 50)
        policy = RackAwarePolicy(
            config=Config.of(enforceMinNumRacksPerWriteQuorum=enforce),
            resolver={str(k): v for k, v in where.items()},
            rng=random.Random(1),
            weights=lambda info: Counting(),
        )
        policy.on_cluster_changed(where, [])
        with pytest.raises(NotEnoughNodesError):
            policy.new_ensemble(3, 2, 2, exclude=where if exclude_all else ())
        # At most two scopes (unused racks, then anywhere) per slot, MAX_DRAWS draws each.
        assert draws["n"] <= 3 * 2 * MAX_DRAWS


class TestEnforceMinRacks:
    @pytest.mark.parametrize("size", range(3, 40, 4))
    def test_enough_racks_cover_every_ensemble_size(self, size: int) -> None:
        """2m-1 racks of 20 nodes (m = min(3, 4) = 3): every E from 3 up is MEETS_STRICT."""
        policy = rack_policy(
            grid(5, 20), minNumRacksPerWriteQuorum=4, enforceMinNumRacksPerWriteQuorum=True
        )
        placed = policy.new_ensemble(size, 3, 3)
        assert placed.adherence is Adherence.MEETS_STRICT

    def test_single_rack_raises(self) -> None:
        """Enforced with only the default rack (excluded) or one rack: E3/W2 raises."""
        for where in (dict.fromkeys(ids("a", "b", "c", "d"), DEFAULT), grid(1, 4)):
            policy = rack_policy(where, enforceMinNumRacksPerWriteQuorum=True)
            with pytest.raises(NotEnoughNodesError):
                policy.new_ensemble(3, 2, 2)

    def test_default_rack_nodes_are_never_chosen(self) -> None:
        """Enforced: default-rack nodes are excluded from new ensembles and replacements."""
        where = {**grid(3, 2), **dict.fromkeys(ids("d1", "d2", "d3"), DEFAULT)}
        policy = rack_policy(where, enforceMinNumRacksPerWriteQuorum=True)
        for _ in range(100):
            placed = policy.new_ensemble(4, 2, 2)
            assert all(where[n] != DEFAULT for n in placed.ensemble)
            swap = policy.replace_bookie(4, 2, 2, placed.ensemble, placed.ensemble[0])
            assert where[swap.node] != DEFAULT

    def test_adherence_fails_with_a_default_rack_member(self) -> None:
        """Enforced: an ensemble holding a default-rack node is FAIL even if racks are covered."""
        where = {**grid(2, 2), **dict.fromkeys(ids("d"), DEFAULT)}
        policy = rack_policy(where, enforceMinNumRacksPerWriteQuorum=True)
        ensemble = [*list(where)[:1], *ids("d"), list(where)[2]]
        assert policy.is_ensemble_adhering(ensemble, 2, 2) is Adherence.FAIL


class TestReplace:
    def test_replacement_comes_from_the_same_rack(self) -> None:
        """Racks {a,b,c}, {d,e}: replacing a takes b or c."""
        where = {
            **dict.fromkeys(ids("a", "b", "c"), "/x/r1"),
            **dict.fromkeys(ids("d", "e"), "/x/r2"),
        }
        policy = rack_policy(where)
        a, _, _, d, _ = ids("a", "b", "c", "d", "e")
        picks = {policy.replace_bookie(2, 2, 2, [a, d], a).node for _ in range(50)}
        assert picks == set(ids("b", "c"))

    def test_then_a_rack_the_rest_of_the_ensemble_does_not_use(self) -> None:
        """The replaced node's rack is empty: the pick avoids racks the ensemble still uses."""
        where = {
            **dict.fromkeys(ids("a"), "/x/r1"),
            **dict.fromkeys(ids("b", "c"), "/x/r2"),
            **dict.fromkeys(ids("d", "e"), "/x/r3"),
        }
        policy = rack_policy(where)
        a, b, _, _, _ = ids("a", "b", "c", "d", "e")
        for _ in range(50):
            swap = policy.replace_bookie(2, 2, 2, [a, b], a)
            assert where[swap.node] == "/x/r3"
            assert swap.adherence is Adherence.MEETS_STRICT

    def test_default_rack_member_replaced_under_enforce(self) -> None:
        """Upstream: the r3 node of [r2, r3] is replaced by the only node outside r2 and r3,
        which sits in the default rack (not enforced)."""
        where = {
            **dict.fromkeys(ids("one"), "/default-rack"),
            **dict.fromkeys(ids("two", "three"), "/r2"),
            **dict.fromkeys(ids("four"), "/r3"),
        }
        policy = rack_policy(where)
        one, two, _, four = ids("one", "two", "three", "four")
        swap = policy.replace_bookie(1, 1, 1, [two, four], four)
        assert swap.node == one and swap.adherence is Adherence.MEETS_STRICT

    def test_departed_node_is_replaced_in_its_old_rack(self) -> None:
        """#2642: a node that already left is located from history, not the default rack."""
        where = {**dict.fromkeys(ids("a", "b"), "/x/r1"), **dict.fromkeys(ids("c", "d"), "/x/r2")}
        policy = rack_policy(where)
        a, b, c, d = ids("a", "b", "c", "d")
        policy.on_cluster_changed([b, c, d], [])
        assert policy.replace_bookie(2, 2, 2, [a, c], a).node == b

    def test_no_candidate_raises(self) -> None:
        """Every other node excluded or in the ensemble: NotEnoughNodesError."""
        where = grid(2, 1)
        policy = rack_policy(where)
        with pytest.raises(NotEnoughNodesError):
            policy.replace_bookie(2, 2, 2, list(where), next(iter(where)))

    def test_replacement_in_a_crowded_rack_keeps_quorums_covered(self) -> None:
        """Home rack empty, every rack in use: a node that keeps the quorums covered wins."""
        where = {
            **dict.fromkeys(ids("a"), "/x/r1"),
            **dict.fromkeys(ids("b", "c", "x"), "/x/r2"),
            **dict.fromkeys(ids("d", "y"), "/x/r3"),
        }
        policy = rack_policy(where)
        a, b, c, d = ids("a", "b", "c", "d")
        ensemble = [a, b, d, c]  # slot 0 sits between b (r2) and c (r2): only r3 keeps both
        for _ in range(40):
            swap = policy.replace_bookie(4, 2, 2, ensemble, a)
            assert swap.node == ids("y")[0]
            assert swap.adherence is Adherence.MEETS_STRICT


class TestAdherence:
    @pytest.mark.parametrize(
        ("members", "expected"),
        [
            pytest.param([], Adherence.FAIL, id="an empty ensemble fails"),
            pytest.param(["a", "b", "c"], Adherence.FAIL, id="one rack in a quorum fails"),
            pytest.param(["a", "d", "b", "e"], Adherence.MEETS_STRICT, id="mixed racks meet"),
            pytest.param(["a", "d", "a", "e"], Adherence.FAIL, id="a repeated member fails"),
        ],
    )
    def test_write_quorum_rack_count(self, members: list[str], expected: Adherence) -> None:
        """Every round-robin quorum must span min(W, 2) racks."""
        where = {
            **dict.fromkeys(ids("a", "b", "c"), "/x/r1"),
            **dict.fromkeys(ids("d", "e"), "/x/r2"),
        }
        policy = rack_policy(where)
        assert policy.is_ensemble_adhering(ids(*members), 2, 2) is expected
        if expected is not Adherence.FAIL or members:
            assert independent_rack_adherence(ids(*members), 2, where, 2) is expected

    def test_acked_bookies_must_span_min_racks(self) -> None:
        """Two acks from one rack do not adhere; from two racks they do."""
        where = {**dict.fromkeys(ids("a", "b"), "/x/r1"), **dict.fromkeys(ids("c"), "/x/r2")}
        policy = rack_policy(where)
        assert not policy.are_acked_bookies_adhering(ids("a", "b"), 3, 2)
        assert policy.are_acked_bookies_adhering(ids("a", "c"), 3, 2)


class TestStabilizedTopology:
    def test_departed_node_is_a_last_resort_until_its_period_ends(self) -> None:
        """Upstream stabilize test: after a node leaves, E=3 never uses it, E=4 (needing every
        node) does, and once the period is over E=4 fails."""
        now = [0.0]
        where = {**dict.fromkeys(ids("a", "b"), "/x/r1"), **dict.fromkeys(ids("c", "d"), "/x/r2")}
        policy = RackAwarePolicy(
            config=Config.of(networkTopologyStabilizePeriodSeconds=10),
            resolver={str(k): v for k, v in where.items()},
            rng=random.Random(5),
            clock=lambda: now[0],
        )
        a = ids("a")[0]
        policy.on_cluster_changed(where, [])
        assert policy.on_cluster_changed([n for n in where if n != a], []) == {a}
        for _ in range(30):
            assert a not in policy.new_ensemble(3, 2, 2).ensemble
        last_resort = policy.new_ensemble(4, 2, 2)
        assert a in last_resort.ensemble
        assert any("stabilized" in note for note in last_resort.notes)
        now[0] = 11.0
        with pytest.raises(NotEnoughNodesError):
            policy.new_ensemble(4, 2, 2)


class TestMembershipAndInfo:
    def test_cluster_change_reports_dead_not_read_only(self) -> None:
        """A node leaving to read-only is not dead; one leaving entirely is."""
        where = grid(2, 2)
        policy = rack_policy(where)
        first, second, *rest = list(where)
        assert policy.on_cluster_changed(rest, [second]) == {first}

    def test_rack_change_moves_the_node(self) -> None:
        """on_rack_change asks the resolver again; the node then counts in its new rack."""
        table = {"a:3181": "/x/r1", "b:3181": "/x/r1", "c:3181": "/x/r2"}
        policy = RackAwarePolicy(resolver=table, rng=random.Random(1))
        policy.on_cluster_changed(list(table), [])
        a, b, _ = ids("a", "b", "c")
        assert policy.is_ensemble_adhering([a, b], 2, 2) is Adherence.FAIL
        table["b:3181"] = "/x/r3"
        policy.on_rack_change([b])
        assert policy.is_ensemble_adhering([a, b], 2, 2) is Adherence.MEETS_STRICT

    def test_bookie_info_is_stored_and_reaches_the_weights(self) -> None:
        """update_bookie_info keeps (total, free) per node and rebuilds the weights from it."""
        seen: list[dict[NodeId, BookieInfo]] = []

        def weights(info: object) -> UniformWeights:
            seen.append(dict(info))  # type: ignore[call-overload]
            return UniformWeights()

        where = grid(2, 2)
        policy = RackAwarePolicy(
            resolver={str(k): v for k, v in where.items()}, rng=random.Random(1), weights=weights
        )
        policy.on_cluster_changed(where, [])
        node = next(iter(where))
        policy.update_bookie_info({str(node): (100, 40)})
        assert policy.bookie_info == {node: BookieInfo(100, 40)}
        assert seen[-1] == {node: BookieInfo(total_disk_bytes=100, free_disk_bytes=40)}
