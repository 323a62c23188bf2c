"""The TransferShedder against the cases of upstream ``TransferShedderTest``."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.shedding import upstream as up
from trimtab.shedding import (
    Label,
    LoadSnapshot,
    Move,
    Reason,
    ShedderState,
    TransferShedder,
    shift,
)
from trimtab.shedding.decisions import frozen_map


def run(snap: LoadSnapshot, state: ShedderState | None = None, **keys: object):
    return TransferShedder(up.config(**keys)).cycle(snap, state or ShedderState(), now=up.NOW)


def moves(result) -> set[tuple[str, str, str | None, Reason]]:
    return {
        (d.broker, d.move.bundle, d.move.destination, d.reason) for d in result.decisions if d.move
    }


def outcome(result) -> tuple[Label, Reason]:
    return result.outcome.label, result.outcome.reason


class TestStandardFixture:
    def test_avg_and_population_std_match_upstream(self) -> None:
        """The five-broker fixture gives avg 0.364 and population std 0.398."""
        result = run(up.five())
        assert result.avg == pytest.approx(up.SETUP_AVG)
        assert result.std == pytest.approx(up.SETUP_STD)

    def test_two_overloaded_transfers_each_moving_the_smaller_bundle(self) -> None:
        """90 % -> 2 % and 80 % -> 4 %, the smaller bundle each, reason Overloaded."""
        assert moves(run(up.five())) == {
            ("broker5", up.BUNDLE_E1, "broker1", Reason.OVERLOADED),
            ("broker4", up.BUNDLE_D1, "broker2", Reason.OVERLOADED),
        }

    def test_ten_pairs_allowed_still_yield_two_because_the_pointers_meet(self) -> None:
        """testMaxNumberOfTransfersPerShedderCycle: max/min pointers meet at broker3."""
        result = run(up.five(), max_broker_shedding_per_cycle=10)
        assert len(result.moves) == 2

    def test_recently_unloaded_bundles_push_the_pick_to_broker3(self) -> None:
        """With D and E bundles recently unloaded, broker3 sheds C1 to broker1."""
        recent = dict.fromkeys((up.BUNDLE_D1, up.BUNDLE_D2, up.BUNDLE_E1, up.BUNDLE_E2), up.NOW)
        state = ShedderState(recently_unloaded_bundles=frozen_map(recent))
        assert moves(run(up.five(), state)) == {
            ("broker3", up.BUNDLE_C1, "broker1", Reason.OVERLOADED)
        }

    def test_bundles_larger_than_the_offload_move_the_pick_to_broker3(self) -> None:
        """testBundleThroughputLargerThanOffloadThreshold: the top bundles of broker4 and 5
        are replaced by 1 GB/s ones after their load data (8 and 9 MB/s) was reported."""
        table = [
            *(x for b in up.FIVE[:3] for x in up.top_bundles(b[0], b[1], b[2])),
            *up.top_bundles("broker4", "my-tenant/my-namespaceD", (1e9, 1e9)),
            *up.top_bundles("broker5", "my-tenant/my-namespaceE", (1e9, 1e9)),
        ]
        snap = LoadSnapshot.of(up.five().loads.values(), table)
        assert moves(run(snap)) == {("broker3", up.BUNDLE_C1, "broker1", Reason.OVERLOADED)}

    def test_remaining_top_bundle_is_kept(self) -> None:
        """testRemainingTopBundles: broker5 with 2 and 3 MB/s still moves only E1."""
        snap = up.snapshot([*up.FIVE[:4], ("broker5", "my-tenant/my-namespaceE", (2e6, 3e6), 90)])
        assert moves(run(snap)) == {
            ("broker5", up.BUNDLE_E1, "broker1", Reason.OVERLOADED),
            ("broker4", up.BUNDLE_D1, "broker2", Reason.OVERLOADED),
        }

    def test_loads_above_100_percent_are_used_as_they_are(self) -> None:
        """testLoadMoreThan100: 200 % and 1000 %; the incremental std ends at 2.7816."""
        result = run(up.five(broker4=200, broker5=1000))
        assert len(result.moves) == 2
        assert result.avg == pytest.approx(2.424)
        assert result.std == pytest.approx(3.8633332758124816)
        assert result.std_after == pytest.approx(2.781643776903451)

    def test_transfer_disabled_names_no_destination(self) -> None:
        """loadBalancerTransferEnabled=false: an unload, placed at the next lookup."""
        result = run(up.five(), transfer_enabled=False)
        assert {m.destination for m in result.moves} == {None}


class TestSkipReasons:
    @pytest.mark.parametrize(
        ("snap", "reason"),
        [
            pytest.param(LoadSnapshot.of([], []), Reason.NO_BROKERS, id="no brokers at all"),
            pytest.param(
                up.snapshot([(b, ns, (), cpu) for b, ns, _, cpu in up.FIVE]),
                Reason.NO_LOAD_DATA,
                id="brokers report no top bundles",
            ),
            pytest.param(
                up.snapshot([(b, ns, (x[0],), cpu) for b, ns, x, cpu in up.FIVE]),
                Reason.NO_BUNDLES,
                id="every broker has a single top bundle",
            ),
        ],
    )
    def test_cycle_level_skip(self, snap: LoadSnapshot, reason: Reason) -> None:
        """Each upstream skip case ends the cycle with its reason and no move."""
        result = run(snap)
        assert not result.moves
        assert outcome(result) == (Label.SKIP, reason)

    def test_an_available_broker_without_load_data_stops_the_cycle(self) -> None:
        """A listed broker that never reported: Skip/NoLoadData."""
        snap = up.five()
        snap = LoadSnapshot.of(
            snap.loads.values(), snap.bundles, available=[*snap.loads, "broker6"]
        )
        assert outcome(run(snap)) == (Label.SKIP, Reason.NO_LOAD_DATA)

    def test_outdated_load_data_is_skipped(self) -> None:
        """testOutDatedLoadData: updatedAt = 0 everywhere -> Skip/OutDatedData."""
        snap = up.snapshot(up.FIVE, at=0.0)
        assert outcome(run(snap)) == (Label.SKIP, Reason.OUTDATED_DATA)

    def test_registry_failure_is_a_failure(self) -> None:
        """testGetAvailableBrokersFailed: the registry cannot be read -> Failure/Unknown."""
        snap = replace(up.five(), available=None)
        assert outcome(run(snap)) == (Label.FAILURE, Reason.UNKNOWN)

    def test_target_std_met_is_a_hit_count_skip(self) -> None:
        """testTargetStd: loads 10/20/30 % have std 0.0816 < 0.25 -> Skip/HitCount."""
        snap = up.snapshot(
            [
                ("broker1", "my-tenant/my-namespaceA", (30, 30), 10),
                ("broker2", "my-tenant/my-namespaceB", (40, 40), 20),
                ("broker3", "my-tenant/my-namespaceC", (50, 50), 30),
            ]
        )
        result = run(snap)
        assert outcome(result) == (Label.SKIP, Reason.HIT_COUNT)
        assert result.std == pytest.approx(0.08164966, abs=1e-6)

    def test_bundles_too_big_even_with_a_swap_give_no_bundles(self) -> None:
        """testSkipBundlesGreaterThanTargetThroughputAfterSplit (target 0.20)."""
        snap = up.snapshot(
            [
                ("broker1", "my-tenant/my-namespaceA", (1, 500_000_000), 50),
                ("broker2", "my-tenant/my-namespaceB", (500_000_000, 500_000_000), 100),
            ]
        )
        assert outcome(run(snap, target_std=0.20)) == (Label.SKIP, Reason.NO_BUNDLES)

    def test_pinned_bundles_are_not_shed_unless_policies_allow_it(self) -> None:
        """Isolation/anti-affinity bundles are skipped unless ...WithPoliciesEnabled."""
        snap = up.five()
        pinned = replace(snap.bundles, pinned=np.ones(len(snap.bundles), dtype=bool))
        snap = replace(snap, bundles=pinned)
        assert outcome(run(snap)) == (Label.SKIP, Reason.NO_BUNDLES)
        assert len(run(snap, shed_bundles_with_policies=True).moves) == 2

    def test_excluded_namespaces_are_never_shed(self) -> None:
        """PIP-380: namespace E excluded, so broker5's share goes to nobody."""
        result = run(up.five(), excluded_namespaces="my-tenant/my-namespaceE")
        assert all(not m.bundle.startswith("my-tenant/my-namespaceE") for m in result.moves)


class TestTimers:
    def test_hit_count_needs_more_than_the_threshold(self) -> None:
        """testLoadBalancerSheddingConditionHitCountThreshold: 3 skips, then the unload."""
        shedder = TransferShedder(up.config(hit_count_threshold=3))
        state = ShedderState()
        for hit in (1, 2, 3):
            result = shedder.cycle(up.five(), state, now=up.NOW)
            assert outcome(result) == (Label.SKIP, Reason.HIT_COUNT)
            assert result.state.hit_count == hit
            state = result.state
        result = shedder.cycle(up.five(), state, now=up.NOW)
        assert len(result.moves) == 2
        assert result.state.hit_count == 0, "a cycle that unloads resets the count"

    def test_cooldown_after_an_unload_until_a_late_enough_report(self) -> None:
        """testRecentlyUnloadedBrokers: a fresh unload of broker1 blocks; an old one does not."""
        fresh = ShedderState(recently_unloaded_brokers=frozen_map({"broker1": up.NOW}))
        assert outcome(run(up.five(), fresh)) == (Label.SKIP, Reason.COOL_DOWN)
        old = ShedderState(recently_unloaded_brokers=frozen_map({"broker1": up.NOW - 1801}))
        result = run(up.five(), old)
        assert len(result.moves) == 2
        assert "broker1" not in result.state.recently_unloaded_brokers or (
            result.state.recently_unloaded_brokers["broker1"] == up.NOW
        )

    def test_moves_are_stamped_for_the_grace_period(self) -> None:
        """The scheduler stamps moved bundles and source brokers with now, and forgets
        bundles older than the grace period."""
        old = ShedderState(recently_unloaded_bundles=frozen_map({"x/y/0x0_0x1": up.NOW - 31 * 60}))
        result = run(up.five(), old)
        assert set(result.state.recently_unloaded_bundles) == {up.BUNDLE_E1, up.BUNDLE_D1}
        assert set(result.state.recently_unloaded_brokers) == {"broker5", "broker4"}


class TestUnderloaded:
    def test_a_broker_with_no_traffic_gets_an_underloaded_transfer(self) -> None:
        """testMinBrokerWithZeroTraffic: broker2's throughput EMA is 0."""
        snap = up.with_load(up.five(broker4=55, broker5=65), "broker2", msg_throughput_ema=0.0)
        result = run(snap)
        assert moves(result) == {
            ("broker5", up.BUNDLE_E1, "broker1", Reason.OVERLOADED),
            ("broker4", up.BUNDLE_D1, "broker2", Reason.UNDERLOADED),
        }
        assert result.avg == pytest.approx(0.264)
        assert result.std == pytest.approx(0.27644891028904417)

    def test_a_broker_far_below_average_gets_an_underloaded_transfer(self) -> None:
        """testMinBrokerWithLowerLoadThanAvg: 3 % < avg 0.262 × 0.125."""
        result = run(up.five(broker2=3, broker4=55, broker5=65))
        assert moves(result) == {
            ("broker5", up.BUNDLE_E1, "broker1", Reason.OVERLOADED),
            ("broker4", up.BUNDLE_D1, "broker2", Reason.UNDERLOADED),
        }
        assert result.std == pytest.approx(0.2780935094532054)

    def test_one_transfer_brings_55_65_below_target(self) -> None:
        """testTargetStdAfterTransfer: one transfer, then the std estimate is below 0.25."""
        result = run(up.five(broker4=55, broker5=65))
        assert moves(result) == {("broker5", up.BUNDLE_E1, "broker1", Reason.OVERLOADED)}
        assert result.std_after < 0.25 < result.std


class TestOutliers:
    def test_one_hot_broker_among_idle_ones_gets_an_underloaded_transfer(self) -> None:
        """99 brokers at 1 % and one at 100 %: std 0.098 is under target, but the idle
        brokers' throughput is under 0.125 × the hot one's (PR #22321): one transfer."""
        brokers = [(f"broker{i}", f"t/ns{i}", (300_000, 700_000), 1) for i in range(99)]
        brokers.append(("broker99", "t/ns99", (30_000_000, 70_000_000), 100))
        result = run(up.snapshot(brokers))
        assert result.avg == pytest.approx(0.0199)
        assert result.std == pytest.approx(0.09850375627355534)
        ((source, bundle, destination, reason),) = moves(result)
        assert (source, bundle, reason) == (
            "broker99",
            "t/ns99/0x00000000_0x0FFFFFFF",
            Reason.UNDERLOADED,
        )
        assert destination is not None and destination != "broker99"

    def test_one_idle_broker_among_hot_ones_gets_the_transfer(self) -> None:
        """testUnderloadOutlier: 98 at 98 %, one at 99 %, one at 1 % -> 99 % to 1 %."""
        brokers = [(f"broker{i}", f"t/ns{i}", (30_000_000, 70_000_000), 98) for i in range(98)]
        brokers.append(("broker98", "t/ns98", (30_000_000, 70_000_000), 99))
        brokers.append(("broker99", "t/ns99", (300_000, 700_000), 1))
        result = run(up.snapshot(brokers))
        assert result.avg == pytest.approx(0.9704)
        assert result.std == pytest.approx(0.09652895938523735)
        assert moves(result) == {
            ("broker98", "t/ns98/0x00000000_0x0FFFFFFF", "broker99", Reason.UNDERLOADED)
        }


class TestSwaps:
    def two_brokers(
        self, small: tuple[float, ...], big: tuple[float, ...], cpu: tuple[float, float]
    ) -> LoadSnapshot:
        return up.snapshot(
            [
                ("broker1", "my-tenant/my-namespaceA", small, cpu[0]),
                ("broker2", "my-tenant/my-namespaceB", big, cpu[1]),
            ]
        )

    def test_three_bundles_out_and_four_swapped_back(self) -> None:
        """testUnloadBundlesGreaterThanTargetThroughput: 3 max->min, 4 min->max, std 0.05."""
        snap = self.two_brokers(
            (1e6, 2e6, 3e6, 4e6, 5e6), (100e6, 180e6, 220e6, 250e6, 250e6), (10, 1000)
        )
        result = run(snap)
        out = {m.bundle for m in result.moves if m.source == "broker2"}
        back = {m.bundle for m in result.moves if m.source == "broker1"}
        assert out == {f"my-tenant/my-namespaceB/{r}" for r in up.FIVE_RANGES[:3]}
        assert back == {f"my-tenant/my-namespaceA/{r}" for r in up.FIVE_RANGES[:4]}
        assert result.avg == pytest.approx(5.05)
        assert result.std == pytest.approx(4.95)
        assert result.std_after == pytest.approx(0.050000004900021836)

    def test_swap_gain_is_counted_without_debug_mode(self) -> None:
        """The upstream bug: swapped-in traffic counts only in debug mode. Here it always
        counts, so with debug off the std estimate is the true one (~0), not 0.24."""
        snap = self.two_brokers((2_400_000, 2_400_000), (5_000_000, 5_000_000), (48, 100))
        for debug in (True, False):
            result = run(snap, debug_mode_enabled=debug)
            assert len(result.moves) == 2, "one bundle each way"
            assert result.avg == pytest.approx(0.74)
            assert result.std == pytest.approx(0.26)
            assert result.std_after == pytest.approx(0.0, abs=1e-6)
        # The std estimate agrees with the loads the moves really produce.
        loads = {b: x.load for b, x in snap.loads.items()}
        ratios = {b: x.load / x.throughput for b, x in snap.loads.items()}
        after = shift(loads, result.moves, ratios)
        assert np.std(list(after.values())) == pytest.approx(result.std_after, abs=1e-6)


class TestRandomLoads:
    @pytest.mark.parametrize("seed", range(5), ids=lambda s: f"seed {s}")
    def test_after_a_cycle_std_is_at_target_or_no_pairs_are_left(self, seed: int) -> None:
        """testRandomLoad: 10 random brokers; the incremental std agrees with a recount."""
        rng = np.random.default_rng(seed)
        brokers = []
        for i in range(10):
            load = int(rng.integers(1000))
            part = int(rng.integers(load + 1))
            brokers.append((f"broker{i}", f"t/ns{i}", (float(part), float(load - part)), load / 10))
        snap = up.snapshot(brokers)
        result = run(snap, max_broker_shedding_per_cycle=3)
        pairs = {(m.source, m.destination) for m in result.moves}
        assert result.std_after <= 0.25 or len(pairs) <= 3
        # Upstream's model: the pair's net traffic, in the max broker's load units, leaves the
        # max broker and arrives at the min broker (Commons Math check in upstream).
        loads = {b: x.load for b, x in snap.loads.items()}
        net: dict[tuple[str, str], float] = {}
        for m in result.moves:
            assert m.destination is not None
            high, low = sorted((m.source, m.destination), key=lambda b: -loads[b])
            net[(high, low)] = net.get((high, low), 0.0) + (
                m.throughput if m.source == high else -m.throughput
            )
        after = dict(loads)
        for (high, low), amount in net.items():
            x = amount * loads[high] / snap.loads[high].throughput
            after[high] = max(0.0, loads[high] - x)
            after[low] = loads[low] + x
        assert float(np.std(list(after.values()))) == pytest.approx(result.std_after, abs=1e-9)

    def test_moves_name_the_pair_they_belong_to(self) -> None:
        """Each move goes between an actual max broker and its min partner."""
        result = run(up.five())
        assert all(isinstance(m, Move) and m.destination for m in result.moves)
