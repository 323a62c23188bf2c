"""The weight rule, the two sampling modes and load-aware weighting, on the seed's and upstream's
numbers."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from trimtab.cluster import NodeId
from trimtab.placement.sampling import (
    inclusion_probabilities,
    successive_inclusion,
    systematic_sample,
)
from trimtab.placement.weights import (
    DiskWeights,
    WeightRule,
    capped_weights,
    load_factor,
    pick_probabilities,
)

from .weightstats import share_ok

GB = 10**9


def shares(weights: list[float]) -> list[float]:
    total = sum(weights)
    return [w / total for w in weights]


class TestSeedNumbers:
    def test_free_space_gives_the_seeds_single_pick_probabilities(self) -> None:
        """100/100/200/200/300/100 GB -> 0.1/0.1/0.2/0.2/0.3/0.1 (the default cap, 3 x median
        150 = 450, touches nothing).

        The seed writes "finally for B4 it is 0.3": a typo for B5 (B4 was already 0.2). It also
        rounds 1/6 down to "0.16" for the uniform case; it is 0.1667."""
        free = [100 * GB, 100 * GB, 200 * GB, 200 * GB, 300 * GB, 100 * GB]
        assert shares(capped_weights(free)) == pytest.approx([0.1, 0.1, 0.2, 0.2, 0.3, 0.1])

    def test_two_times_median_cap(self) -> None:
        """200/200/300/500/1000 GB, 2 x median (300) -> 200/200/300/500/600 (the seed's
        normalised .090/.090/.136/.227/.272 are these over the *uncapped* total 2200)."""
        free = [200, 200, 300, 500, 1000]
        assert capped_weights(free, multiple=2) == [200, 200, 300, 500, 600]

    def test_two_times_minimum_cap(self) -> None:
        """2 x minimum (200) -> 200/200/300/400/400 (the seed's .090/.090/.136/.18/.18)."""
        free = [200, 200, 300, 500, 1000]
        assert capped_weights(free, multiple=2, basis="minimum") == [200, 200, 300, 400, 400]

    def test_the_seeds_seven_weight_example_follows_the_rule(self) -> None:
        """Seed §1.2's drawback example: weights .01 .04 .05 .1 .3 .3 .3.

        The seed contradicts itself here: the seven weights sum to 1.1, not 1, and its
        2 x minimum result lists six values for seven nodes. The rule gives .01 then six .02;
        the median rule (median .1) gives .01 .04 .05 .1 .2 .2 .2 as the seed says."""
        w = [0.01, 0.04, 0.05, 0.1, 0.3, 0.3, 0.3]
        by_min = capped_weights(w, multiple=2, basis="minimum")
        assert by_min == pytest.approx([0.01] + [0.02] * 6)
        assert capped_weights(w, multiple=2) == pytest.approx(
            [0.01, 0.04, 0.05, 0.1, 0.2, 0.2, 0.2]
        )

    def test_sampled_single_picks_match_the_seed(self) -> None:
        """200k draws from the weighted sampler land within 5 binomial SE of each share."""
        pool = tuple(NodeId(f"b{i}:3181") for i in range(1, 7))
        free = dict(zip(pool, [100, 100, 200, 200, 300, 100], strict=True))
        sampler = DiskWeights(free).sampler(pool)
        rng = random.Random(7)
        n = 200_000
        counts = Counter(sampler.draw(rng) for _ in range(n))
        for node, p in zip(pool, [0.1, 0.1, 0.2, 0.2, 0.3, 0.1], strict=True):
            assert share_ok(counts[node], n, p)


class TestUpstreamWeightedRandomSelection:
    """TestWeightedRandomSelection's cases, as exact shares of the capped weights."""

    def test_equal_and_all_zero_weights_are_uniform(self) -> None:
        """All 100, or all 0: 2 % each of 50."""
        assert shares(capped_weights([100] * 50)) == pytest.approx([0.02] * 50)
        assert shares(capped_weights([0] * 50)) == pytest.approx([0.02] * 50)

    def test_zeros_weigh_as_the_smallest_positive_weight(self) -> None:
        """16x0, 16x100, 18x200, k=3: zeros act as 100 -> 1.47 % and 2.94 %."""
        got = shares(capped_weights([0] * 16 + [100] * 16 + [200] * 18, multiple=3))
        assert got[0] == pytest.approx(100 / 6800)
        assert got[16] == pytest.approx(100 / 6800)
        assert got[-1] == pytest.approx(200 / 6800)

    def test_unequal_weights_cap_at_four_medians(self) -> None:
        """16x100, 16x200, 18x1000, k=4: median 200, 1000 -> 800; 0.52/1.04/4.17 %."""
        got = shares(capped_weights([100] * 16 + [200] * 16 + [1000] * 18, multiple=4))
        assert [got[0], got[16], got[-1]] == pytest.approx([100 / 19200, 200 / 19200, 800 / 19200])

    def test_a_hot_node_is_capped_at_three_medians(self) -> None:
        """49x100 + one at 49,000, k=3: the hot node gets 300/5200 = 5.77 %."""
        got = shares(capped_weights([100] * 49 + [49_000], multiple=3))
        assert got[-1] == pytest.approx(300 / 5200)

    def test_non_positive_multiple_means_no_cap(self) -> None:
        """k <= 0: the raw weights stand."""
        assert capped_weights([1, 1, 1000], multiple=-1) == [1, 1, 1000]
        assert capped_weights([1, 1, 1000], multiple=0) == [1, 1, 1000]

    def test_choice_among_survivors_keeps_the_pools_cap(self) -> None:
        """The exact pass chooses by the pool's capped weights, not a cap recomputed on the
        survivors (a hot node stays at 3 x the pool median)."""
        pool = tuple(NodeId(f"n{i}:3181") for i in range(5))
        sampler = DiskWeights(dict(zip(pool, [1, 1, 1, 1, 1000], strict=True))).sampler(pool)
        rng = random.Random(3)
        choice = getattr(sampler, "choice")  # noqa: B009 - the optional ChoosingSampler side
        n = 40_000
        hits = sum(choice(pool[3:], rng) == pool[4] for _ in range(n))
        assert share_ok(hits, n, 3 / 4)


class TestSamplingModes:
    def test_successive_inclusion_is_not_proportional(self) -> None:
        """8x1 and 2x3, E=3: heavy 56.8 %, light 23.3 %, ratio 2.44 (reference §1.4)."""
        pi = successive_inclusion([1.0] * 8 + [3.0] * 2, 3)
        assert pi[-1] == pytest.approx(0.568, abs=5e-4)
        assert pi[0] == pytest.approx(0.233, abs=5e-4)
        assert pi[-1] / pi[0] == pytest.approx(2.44, abs=5e-3)
        assert sum(pi) == pytest.approx(3)

    def test_inclusion_probabilities_are_proportional_and_sum_to_e(self) -> None:
        """Same weights: 3/14 and 9/14, ratio exactly 3."""
        pi = inclusion_probabilities([1.0] * 8 + [3.0] * 2, 3)
        assert pi[0] == pytest.approx(3 / 14)
        assert pi[-1] == pytest.approx(9 / 14)
        assert sum(pi) == pytest.approx(3)

    def test_inclusion_probabilities_cap_at_one(self) -> None:
        """A node heavier than Σw/E is certain; the others share what is left."""
        pi = inclusion_probabilities([10.0, 1.0, 1.0, 1.0, 1.0], 2)
        assert pi == pytest.approx([1.0, 0.25, 0.25, 0.25, 0.25])

    def test_systematic_sample_hits_each_node_with_its_probability(self) -> None:
        """40k samples of E=3 from the seed's weights: size always 3, inclusion within 5 SE."""
        pi = inclusion_probabilities([1, 1, 2, 2, 3, 1], 3)
        assert pi == pytest.approx([0.3, 0.3, 0.6, 0.6, 0.9, 0.3])
        rng = random.Random(11)
        n = 40_000
        counts = Counter[int]()
        for _ in range(n):
            taken = systematic_sample(pi, rng)
            assert len(taken) == 3 and len(set(taken)) == 3
            counts.update(taken)
        assert all(share_ok(counts[i], n, p) for i, p in enumerate(pi))

    def test_successive_mode_plans_nothing(self) -> None:
        """Successive sampling leaves the ensemble to slot-by-slot draws."""
        pool = (NodeId("a:1"), NodeId("b:1"))
        weights = DiskWeights({}, WeightRule(sampling="successive"))
        assert weights.plan(pool, (), 1, random.Random(1)) is None


class TestLoadAware:
    @pytest.mark.parametrize(("util", "factor"), [(0.0, 1.0), (0.7, 1.0), (0.85, 0.5), (1.0, 0.0)])
    def test_busy_disks_weigh_less_above_the_threshold(self, util: float, factor: float) -> None:
        """Full weight up to 70 %, then linearly down to nothing at 100 %."""
        assert load_factor(util, 0.7) == pytest.approx(factor)

    def test_load_aware_weights_only_when_enabled(self) -> None:
        """With load-aware weighting on, an 85 %-busy node keeps half its free-space weight;
        off, utilisation is ignored."""
        from trimtab.config import Config
        from trimtab.diskinfo import BookieInfo
        from trimtab.placement.weights import weights_for

        a, b = NodeId("a:1"), NodeId("b:1")
        info = {a: BookieInfo(100, 100), b: BookieInfo(100, 100)}
        busy = {a: 0.85, b: 0.2}
        on = Config.of(load_aware_weighting_enabled=True).placement
        off = Config.of().placement
        assert weights_for(info, on, busy).effective((a, b)) == pytest.approx([50.0, 100.0])
        assert weights_for(info, off, busy).effective((a, b)) == pytest.approx([100.0, 100.0])


def test_pick_probabilities_reproduce_the_seed_shares() -> None:
    """Over a whole pool, free 100/100/200/200/300/100 GB gives 0.1/0.1/0.2/0.2/0.3/0.1."""
    free = {NodeId(f"b{i}:3181"): gb * 10**9 for i, gb in enumerate([100, 100, 200, 200, 300, 100])}
    got = pick_probabilities(free, free, WeightRule())
    assert [round(p, 12) for _, p in got.values()] == [0.1, 0.1, 0.2, 0.2, 0.3, 0.1]


def test_pick_probabilities_give_unknown_nodes_the_smallest_weight() -> None:
    """A writable node without disk info weighs as much as the lightest known node."""
    got = pick_probabilities(
        {NodeId("a:1"): 100.0, NodeId("b:1"): 300.0}, ["a:1", "b:1", "c:1"], WeightRule()
    )
    assert got[NodeId("c:1")] == (100.0, 0.2)
