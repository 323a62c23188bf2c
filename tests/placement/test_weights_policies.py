"""Disk weights wired into the three policies: upstream's weighted cases, both sampling modes,
and the rule that read-only, departed and excluded nodes are never picked."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.diskinfo import BookieInfo
from trimtab.placement.catalog import Policy
from trimtab.placement.weights import DiskWeights
from trimtab.systems.bookkeeper.placement_setup import make_policy

from .support import quorums
from .weightstats import ratio_ok, share_ok

MODES = ("successive", "proportional")


def weighted(
    kind: str,
    where: dict[NodeId, str],
    free: dict[NodeId, int],
    *,
    seed: int = 1,
    readonly: frozenset[NodeId] = frozenset(),
    **config: Any,
) -> Policy:
    """A ``kind`` policy with disk weights on, the cluster and the free bytes loaded."""
    policy = make_policy(
        Config.of(ensemblePlacementPolicy=kind, diskWeightBasedPlacementEnabled=True, **config),
        resolver={str(k): v for k, v in where.items()},
        rng=random.Random(seed),
    )
    policy.on_cluster_changed([n for n in where if n not in readonly], readonly)
    policy.update_bookie_info({n: BookieInfo(2 * f, f) for n, f in free.items()})
    return policy


def node(name: str) -> NodeId:
    return NodeId(f"{name}:3181")


class TestFactory:
    def test_make_policy_uses_disk_weights_only_when_enabled(self) -> None:
        """diskWeightBasedPlacementEnabled picks DiskWeights; off stays uniform."""
        on = make_policy(
            Config.of(ensemblePlacementPolicy="default", diskWeightBasedPlacementEnabled=True)
        )
        off = make_policy(Config.of(ensemblePlacementPolicy="default"))
        assert isinstance(on.view.weights, DiskWeights)
        assert not isinstance(off.view.weights, DiskWeights)


class TestDefaultPolicy:
    @pytest.mark.parametrize("mode", MODES)
    def test_inclusion_matches_the_mode(self, mode: str) -> None:
        """8x1 and 2x3 (k<=0), E=3: successive includes heavy/light at 0.568/0.233 (2.44),
        proportional at 9/14 and 3/14 (3)."""
        where = {node(f"n{i}"): "/default-rack" for i in range(10)}
        free = {n: (3 if i >= 8 else 1) for i, n in enumerate(where)}
        policy = weighted(
            "default",
            where,
            free,
            weighted_sampling=mode,
            bookieMaxMultipleForWeightBasedPlacement=-1,
        )
        runs = 20_000
        counts = Counter[NodeId]()
        for _ in range(runs):
            counts.update(policy.new_ensemble(3, 3, 2).ensemble)
        heavy, light = (0.568, 0.233) if mode == "successive" else (9 / 14, 3 / 14)
        nodes = list(where)
        assert all(share_ok(counts[n], runs, light) for n in nodes[:8])
        assert all(share_ok(counts[n], runs, heavy) for n in nodes[8:])
        assert ratio_ok(counts[nodes[9]], counts[nodes[0]], runs, heavy, light)


class TestRackAware:
    @pytest.mark.parametrize("mode", MODES)
    def test_replace_prefers_the_heavy_node_of_the_same_rack(self, mode: str) -> None:
        """Rack {100 (replaced), 100, 1000}, no cap: always that rack, 1000 ten times as often."""
        where = {node("a"): "/r1", node("b"): "/r1", node("c"): "/r1", node("d"): "/r2"}
        free = {node("a"): 100, node("b"): 100, node("c"): 1000, node("d"): 100}
        policy = weighted(
            "rackaware",
            where,
            free,
            weighted_sampling=mode,
            bookieMaxMultipleForWeightBasedPlacement=-1,
        )
        runs = 20_000
        got = Counter(
            policy.replace_bookie(2, 2, 2, [node("a"), node("d")], node("a")).node
            for _ in range(runs)
        )
        assert set(got) <= {node("b"), node("c")}
        assert ratio_ok(got[node("c")], got[node("b")], runs, 10 / 11, 1 / 11)

    def test_replace_across_racks_caps_at_four_medians(self) -> None:
        """Five one-node racks 50/100/100/200/500, k=4, replacing the 50 node: the median
        (100) counts it, so 500 -> 400; ratios 4 against a 100 node and 2 against 200."""
        names = ["w50", "w100a", "w100b", "w200", "w500"]
        where = {node(n): f"/r{i}" for i, n in enumerate(names)}
        free = dict(zip(where, [50, 100, 100, 200, 500], strict=True))
        policy = weighted("rackaware", where, free, bookieMaxMultipleForWeightBasedPlacement=4)
        runs = 20_000
        got = Counter(
            policy.replace_bookie(1, 1, 1, [node("w50")], node("w50")).node for _ in range(runs)
        )
        p = {"w100a": 1 / 8, "w100b": 1 / 8, "w200": 2 / 8, "w500": 4 / 8}
        assert all(share_ok(got[node(k)], runs, v) for k, v in p.items())
        assert ratio_ok(got[node("w500")], got[node("w100a")], runs, 0.5, 0.125)
        assert ratio_ok(got[node("w500")], got[node("w200")], runs, 0.5, 0.25)

    @pytest.mark.parametrize("mode", MODES)
    def test_new_ensemble_weighs_inside_racks_and_covers_quorums(self, mode: str) -> None:
        """Racks {1}, {100,100,100,1000} x2, k=4, E3/W2/A2: every write quorum spans two
        racks, and inside a rack the capped 1000 (-> 400) is included 4x as often as a 100."""
        where = {node("solo"): "/r0"}
        free = {node("solo"): 1}
        for r in (1, 2):
            for j, f in enumerate([100, 100, 100, 1000]):
                where[node(f"r{r}n{j}")] = f"/r{r}"
                free[node(f"r{r}n{j}")] = f
        policy = weighted(
            "rackaware",
            where,
            free,
            weighted_sampling=mode,
            bookieMaxMultipleForWeightBasedPlacement=4,
        )
        runs = 10_000
        counts = Counter[NodeId]()
        for _ in range(runs):
            ens = policy.new_ensemble(3, 2, 2).ensemble
            assert all(len({where[ens[p]] for p in q}) >= 2 for q in quorums(3, 2))
            counts.update(ens)
        for r in (1, 2):
            heavy, light = counts[node(f"r{r}n3")], counts[node(f"r{r}n0")]
            assert ratio_ok(heavy, light, runs, 4 / 7, 1 / 7)


class TestRegionAware:
    @pytest.mark.parametrize("mode", MODES)
    def test_regions_with_different_disk_weight(self, mode: str) -> None:
        """Upstream testRegionsWithDifferentDiskWeight: E2/W2/A2 over two regions; region 1
        {800k, 400k} -> ratio 2; region 2 {200k, 300k, 400k} -> 1.5 and 2; swapped, inverted.
        The weights must reach the per-region policies (upstream #4522)."""
        where = {
            node("a1"): "/dc1/r1",
            node("a2"): "/dc1/r2",
            node("b1"): "/dc2/r1",
            node("b2"): "/dc2/r2",
            node("b3"): "/dc2/r3",
        }
        free = {
            node("a1"): 800_000,
            node("a2"): 400_000,
            node("b1"): 200_000,
            node("b2"): 300_000,
            node("b3"): 400_000,
        }
        policy = weighted("regionaware", where, free, weighted_sampling=mode)
        runs = 5_000

        def sample() -> Counter[NodeId]:
            got = Counter[NodeId]()
            for _ in range(runs):
                got.update(policy.new_ensemble(2, 2, 2).ensemble)
            return got

        got = sample()
        assert ratio_ok(got[node("a1")], got[node("a2")], runs, 2 / 3, 1 / 3)
        assert ratio_ok(got[node("b3")], got[node("b1")], runs, 4 / 9, 2 / 9)
        assert ratio_ok(got[node("b2")], got[node("b1")], runs, 3 / 9, 2 / 9)
        swapped = dict(free)
        swapped[node("a1")], swapped[node("a2")] = free[node("a2")], free[node("a1")]
        swapped[node("b1")], swapped[node("b3")] = free[node("b3")], free[node("b1")]
        policy.update_bookie_info({n: BookieInfo(2 * f, f) for n, f in swapped.items()})
        got = sample()
        assert ratio_ok(got[node("a2")], got[node("a1")], runs, 2 / 3, 1 / 3)
        assert ratio_ok(got[node("b1")], got[node("b3")], runs, 4 / 9, 2 / 9)


class TestNeverPicksUnwritable:
    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("kind", ["default", "rackaware", "regionaware"])
    def test_read_only_departed_and_excluded_nodes_are_never_picked(
        self, kind: str, mode: str
    ) -> None:
        """Random clusters: heavy read-only, departed and excluded nodes never appear in an
        ensemble or a replacement, however much free space they report."""
        rng = random.Random(f"{kind}-{mode}")
        for trial in range(40):
            where = {
                node(f"x{trial}-{i}"): f"/dc{i % 2}/r{i % 4}" for i in range(rng.randint(12, 20))
            }
            nodes = list(where)
            rng.shuffle(nodes)
            readonly, departed, excluded = (
                frozenset(nodes[:2]),
                frozenset(nodes[2:4]),
                frozenset(nodes[4:6]),
            )
            free = {n: rng.randint(0, 1000) for n in nodes}
            free.update(dict.fromkeys(readonly | departed | excluded, 10**9))  # very attractive
            policy = weighted(
                kind, where, free, seed=trial, readonly=readonly, weighted_sampling=mode
            )
            policy.on_cluster_changed([n for n in where if n not in readonly | departed], readonly)
            bad = readonly | departed | excluded
            for _ in range(20):
                ens = policy.new_ensemble(4, 2, 2, exclude=excluded).ensemble
                assert not bad & set(ens) and len(set(ens)) == 4
                swap = policy.replace_bookie(4, 2, 2, ens, ens[0], exclude=excluded)
                assert swap.node not in bad and swap.node not in ens
