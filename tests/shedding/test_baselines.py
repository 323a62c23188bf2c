"""The older shedders' rules, and PIP-220's two failure cases under every strategy.

The failure cases (PIP-220 motivation; outcomes derived in the reference, §4):

* case 1, loads [12, 2, 1, 1] %: below every threshold; only the TransferShedder's
  throughput rule (PR #22321) fires, and only if throughput tracks load (1/12 < 0.125);
* case 2, loads [50 × 5, 0 %] (a new broker): threshold and overload shedders do nothing; the
  TransferShedder makes one Underloaded transfer of half a 50 % broker and stops at
  [50, 50, 50, 50, 25, 25] (std 0.118).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from tests.shedding.upstream import NOW
from trimtab.config import Config
from trimtab.shedding import (
    BrokerLoad,
    Bundle,
    CycleResult,
    Label,
    LoadSnapshot,
    OverloadShedder,
    Reason,
    ShedderState,
    ThresholdShedder,
    UniformLoadShedder,
    assign_destinations,
    plan,
    shedder_for,
)

MB = 1_000_000.0


def broker(name: str, load: float, throughput: float, rate: float | None = None) -> BrokerLoad:
    return BrokerLoad(
        broker=name,
        cpu=load,
        msg_throughput_in=throughput / 2,
        msg_throughput_out=throughput / 2,
        msg_rate_in=(throughput / 1000 if rate is None else rate) / 2,
        msg_rate_out=(throughput / 1000 if rate is None else rate) / 2,
        weighted_max=load,
        weighted_max_ema=load,
        msg_throughput_ema=throughput,
        updated_at=NOW,
        samples=1,
    )


def bundles_of(name: str, sizes: list[float]) -> list[Bundle]:
    return [
        Bundle(
            name=f"t/{name}/0x{k:08x}_0x{k + 1:08x}",
            broker=name,
            throughput_in=s / 2,
            throughput_out=s / 2,
            msg_rate_in=s / 2000,
            msg_rate_out=s / 2000,
        )
        for k, s in enumerate(sizes)
    ]


def cluster(spec: list[tuple[str, float, list[float]]]) -> LoadSnapshot:
    """(broker, load, bundle sizes in bytes/s): throughput is the bundles' sum."""
    loads = [broker(name, load, sum(sizes)) for name, load, sizes in spec]
    return LoadSnapshot.of(loads, [b for name, _, sizes in spec for b in bundles_of(name, sizes)])


def case1(tracking: bool = True) -> LoadSnapshot:
    """[12, 2, 1, 1] %; throughput proportional to load (1 % = 1 MB/s) or equal everywhere."""
    percent = {"b1": 12, "b2": 2, "b3": 1, "b4": 1}
    spec = []
    for name, p in percent.items():
        total = (p if tracking else 4) * MB
        spec.append((name, p / 100, [total / 6, total / 3, total / 2]))
    return cluster(spec)


def case2() -> LoadSnapshot:
    """Five brokers at 50 % with ten 50 MB/s bundles each, and a new empty one at 0 %."""
    spec = [(f"b{i}", 0.5, [50 * MB] * 10) for i in range(1, 6)]
    spec.append(("b6", 0.0, []))
    return cluster(spec)


def cycles(strategy: str, snap: LoadSnapshot, n: int, **keys: object) -> list[CycleResult]:
    shedder = shedder_for(Config.of(**keys).shedding, strategy)
    state, out = ShedderState(), []
    for _ in range(n):
        result = shedder.cycle(snap, state, now=NOW)
        out.append(result)
        state = result.state
    return out


class TestCaseOne:
    @pytest.mark.parametrize("strategy", ["threshold", "overload"])
    def test_threshold_style_shedders_do_nothing(self, strategy: str) -> None:
        """All brokers are below avg + 10 % (14 %) and below 85 %."""
        assert all(
            not r.moves for r in cycles(strategy, case1(), 5, lowerBoundarySheddingEnabled=True)
        )

    def test_transfer_fires_through_the_throughput_rule_after_four_hits(self) -> None:
        """std 0.046 and min load 1 % > avg·0.125 fail; throughput 1 < 0.125 × 12 fires."""
        results = cycles("transfer", case1(), 4)
        assert [bool(r.moves) for r in results] == [False, False, False, True]
        assert results[0].std == pytest.approx(0.0464, abs=1e-4)
        first = results[3].decisions[0]
        assert first.reason is Reason.UNDERLOADED
        assert {m.source for m in results[3].moves} >= {"b1"}

    def test_transfer_does_nothing_if_throughput_does_not_track_load(self) -> None:
        """With equal throughputs no rule fires: [12, 2, 1, 1] % stays as it is."""
        assert all(not r.moves for r in cycles("transfer", case1(tracking=False), 6))

    def test_balanced_fires_on_the_same_rule(self) -> None:
        """balanced uses upstream's trigger, so it also acts after four hits."""
        results = cycles("balanced", case1(), 4)
        assert [bool(r.moves) for r in results] == [False, False, False, True]
        assert {m.source for m in results[3].moves} == {"b1"}

    def test_uniform_sheds_from_the_busiest_broker_on_message_rate(self) -> None:
        """Rate gap 1100 % > 50 %: required int(11000·0.2) msg/s, bundles ≤ required + 1000."""
        (result,) = cycles("uniform", case1(), 1)
        assert [(m.source, m.throughput) for m in result.moves] == [("b1", 2 * MB)]


class TestCaseTwo:
    @pytest.mark.parametrize("strategy", ["threshold", "overload"])
    def test_the_new_broker_gets_nothing(self, strategy: str) -> None:
        """avg 0.417: nobody is above 0.517 or 85 %."""
        assert all(not r.moves for r in cycles(strategy, case2(), 5))

    def test_lower_boundary_mode_sheds_five_percent_of_the_top_broker(self) -> None:
        """PR #17456: 0 % < avg − 10 %, so 10 % × 0.5 of b1's 500 MB/s (one bundle, at least)."""
        (result,) = cycles("threshold", case2(), 1, lowerBoundarySheddingEnabled=True)
        assert [(m.source, m.throughput, m.destination) for m in result.moves] == [
            ("b1", 50 * MB, None)
        ]
        assert result.decisions[0].reason is Reason.UNDERLOADED

    @pytest.mark.parametrize(
        ("strategy", "keys"),
        [("transfer", {}), ("balanced", {"avg_low_threshold": 100, "avg_high_threshold": 100})],
    )
    def test_one_underloaded_transfer_of_half_a_broker_then_stop(
        self, strategy: str, keys: dict[str, object]
    ) -> None:
        """std 0.186 < 0.25 but 0 < avg·0.125: after four hits, half of a 50 % broker moves to
        the new one, giving [50, 50, 50, 50, 25, 25] (std 0.118); then nothing fires
        (balanced with its spread rules off)."""
        shedder = shedder_for(Config.of(**keys).shedding, strategy)
        result = plan(case2(), shedder, now=NOW, until_balanced=True)
        pairs = {(m.source, m.destination) for _, m, _ in result.transfers}
        assert len(pairs) == 1 and next(iter(pairs))[1] == "b6"
        assert {r for _, _, r in result.transfers} == {Reason.UNDERLOADED}
        assert sum(m.throughput for _, m, _ in result.transfers) == pytest.approx(250 * MB)
        assert result.std_before == pytest.approx(0.186, abs=1e-3)
        assert result.std_after == pytest.approx(0.118, abs=1e-3)
        first_move = next(k for k, _, _ in result.transfers)
        assert first_move == 4, "three cycles of hit count first"

    def test_balanced_spread_rule_goes_on_to_a_15_point_range(self) -> None:
        """[50, 50, 50, 50, 25, 25] is 25 points apart: balanced's spread rule goes on until
        no broker is 15 points from another, where upstream's transfer stops."""
        shedder = shedder_for(Config().shedding, "balanced")
        result = plan(case2(), shedder, now=NOW, until_balanced=True)
        after = result.loads_after.values()
        assert max(after) - min(after) < 0.15
        assert result.std_after < 0.118

    def test_uniform_sheds_a_fifth_of_the_gap_from_one_broker(self) -> None:
        """A min of 0 counts as 1, so the gap triggers: 20 % of b1's rate (99,999 msg/s), one
        broker; without the +1000 slack (PR #21906) the second 50,000 msg/s bundle no longer
        fits the 49,999 left."""
        (result,) = cycles("uniform", case2(), 1)
        assert {m.source for m in result.moves} == {"b1"}
        assert sum(m.throughput for m in result.moves) == pytest.approx(50 * MB)


class TestThresholdShedder:
    def test_scores_are_its_own_moving_average_started_from_the_first_sample(self) -> None:
        """#13119 fixed: a broker's first score is its load, not 0."""
        snap = cluster([("a", 0.9, [100 * MB] * 3), ("b", 0.1, [10 * MB] * 3)])
        shedder = ThresholdShedder(Config().shedding)
        first = shedder.cycle(snap, ShedderState(), now=NOW)
        assert dict(first.state.scores) == {"a": 0.9, "b": 0.1}
        moved = LoadSnapshot.of(
            [broker("a", 0.5, 300 * MB), broker("b", 0.5, 30 * MB)], snap.bundles
        )
        second = shedder.cycle(moved, first.state, now=NOW)
        assert second.state.scores["a"] == pytest.approx(0.9 * 0.9 + 0.1 * 0.5)

    def test_sheds_at_least_the_excess_plus_five_percent_largest_first(self) -> None:
        """score 0.9, avg 0.5: at least (0.9 − 0.5 − 0.1 + 0.05) × 300 MB/s = 105 MB/s."""
        snap = cluster(
            [("a", 0.9, [40 * MB, 60 * MB, 80 * MB, 120 * MB]), ("b", 0.1, [10 * MB] * 3)]
        )
        result = ThresholdShedder(Config().shedding).cycle(snap, ShedderState(), now=NOW)
        assert [m.throughput for m in result.moves] == [120 * MB]

    def test_small_planned_unloads_are_skipped(self) -> None:
        """Below loadBalancerBundleUnloadMinThroughputThreshold (10 MB/s): no unload."""
        snap = cluster([("a", 0.9, [1 * MB] * 3), ("b", 0.1, [1 * MB] * 3)])
        result = ThresholdShedder(Config().shedding).cycle(snap, ShedderState(), now=NOW)
        assert not result.moves
        assert any(d.broker == "a" and d.reason is Reason.NO_BUNDLES for d in result.decisions)


class TestOverloadShedder:
    def test_sheds_above_85_percent_plus_margin(self) -> None:
        """Usage 0.95: at least (0.95 − 0.85 + 0.05) × 200 MB/s = 30 MB/s, at least one."""
        snap = cluster(
            [("a", 0.95, [10 * MB, 20 * MB, 25 * MB, 145 * MB]), ("b", 0.5, [10 * MB] * 3)]
        )
        result = OverloadShedder(Config().shedding).cycle(snap, ShedderState(), now=NOW)
        assert [m.throughput for m in result.moves] == [145 * MB]


class TestUniformShedder:
    def test_no_slack_keeps_a_small_broker_s_traffic(self) -> None:
        """#21905 fixed by PR #21906: the +1000 slack used to let all three 300 msg/s bundles
        go; now none fits the 160 msg/s required, so nothing moves."""
        loads = [broker("a", 0.3, 3 * MB, rate=900), broker("b", 0.1, 1 * MB, rate=100)]
        bundles = bundles_of("a", [MB, MB, MB])
        for b in range(3):
            bundles[b] = Bundle(
                name=bundles[b].name, broker="a", throughput_out=MB, msg_rate_in=300
            )
        snap = LoadSnapshot.of(loads, [*bundles, *bundles_of("b", [MB])])
        result = UniformLoadShedder(Config.of(minUnloadMessage=0).shedding).cycle(
            snap, ShedderState(), now=NOW
        )
        assert not result.moves
        assert [d.reason for d in result.decisions if d.broker == "a"] == [Reason.NO_BUNDLES]

    def test_within_bounds_nothing_moves(self) -> None:
        """Rate gap under 50 % and throughput ratio under 4: Skip."""
        snap = cluster([("a", 0.5, [50 * MB] * 2), ("b", 0.4, [40 * MB] * 2)])
        result = UniformLoadShedder(Config().shedding).cycle(snap, ShedderState(), now=NOW)
        assert not result.moves and result.outcome.label is Label.SKIP


class TestPlacement:
    def test_unload_only_moves_get_a_below_average_destination(self) -> None:
        """LeastResourceUsageWithWeight: candidates at least 10 % under the average."""
        snap = cluster(
            [("a", 0.95, [50 * MB] * 4), ("b", 0.5, [10 * MB] * 2), ("c", 0.1, [10 * MB] * 2)]
        )
        result = OverloadShedder(Config().shedding).cycle(snap, ShedderState(), now=NOW)
        placed = assign_destinations(result, snap, Config().shedding, random.Random(1), now=NOW)
        assert {m.destination for m in placed.moves} == {"c"}

    def test_same_seed_same_destinations(self) -> None:
        """The placement RNG is injected."""
        snap = cluster([(f"b{i}", 0.1 * i, [10 * MB] * 3) for i in range(10)])
        result = OverloadShedder(Config.of(overloaded_threshold_percentage=50).shedding).cycle(
            snap, ShedderState(), now=NOW
        )

        def dests(seed: int) -> list[str | None]:
            placed = assign_destinations(
                result, snap, Config().shedding, random.Random(seed), now=NOW
            )
            return [m.destination for m in placed.moves]

        assert dests(3) == dests(3)
        assert all(d is not None and np.isfinite(len(d)) for d in dests(3))
