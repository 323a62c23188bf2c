"""Upstream ``TransferShedderTest`` (apache/pulsar, extensible load manager), test by test.

Each test keeps its upstream name and checks the same decisions and statistics on the same
fixture (:mod:`tests.shedding.upstream`). Departures on purpose are asserted as trimtab's
behaviour, with the reason in the docstring (and in the departures table of docs/systems/pulsar.md).
Upstream mocks the isolation and anti-affinity helpers; here the real filters of
:mod:`trimtab.shedding.filters` are given policies that make them answer as the mocks do.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from tests.shedding import upstream as up
from tests.shedding.upstream import moves, outcome, run
from trimtab.shedding import Label, LoadSnapshot, LoadStats, Reason, ShedderState, TransferShedder
from trimtab.shedding.base import eligible
from trimtab.shedding.decisions import frozen_map
from trimtab.shedding.filters import (
    AntiAffinityGroups,
    BrokerFilterError,
    IsolationPolicies,
    IsolationPolicy,
    Policies,
    PolicyView,
)
from trimtab.shedding.snapshot import BundleIndex

GROUP = "namespaceAntiAffinityGroup"
NAMESPACES = [ns for _, ns, _, _ in up.FIVE]


def assert_setup_stats(result) -> None:
    assert result.avg == pytest.approx(up.SETUP_AVG)
    assert result.std == pytest.approx(up.SETUP_STD)


def with_policies(snap: LoadSnapshot, policies: Policies) -> LoadSnapshot:
    return replace(snap, policies=policies)


SETUP_MOVES = {
    ("broker5", up.BUNDLE_E1, "broker1", Reason.OVERLOADED),
    ("broker4", up.BUNDLE_D1, "broker2", Reason.OVERLOADED),
}


class _ClearAll:
    """Stands in for upstream's mocked ``AntiAffinityGroupPolicyHelper.filterAsync`` that
    clears the candidates, except for the bundles in ``spare``."""

    name = "mocked-anti-affinity"

    def __init__(self, spare: frozenset[str] = frozenset()) -> None:
        self.spare = spare

    def filter(self, candidates: frozenset[str], bundle: str, view: PolicyView) -> frozenset[str]:
        return candidates if bundle in self.spare else frozenset()


class _Raises:
    """upstream's ``Test-Filter``: every call fails with ``BrokerFilterException``."""

    name = "Test-Filter"

    def filter(self, candidates: frozenset[str], bundle: str, view: PolicyView) -> frozenset[str]:
        raise BrokerFilterError("test")


class TransferShedderTest:
    def testEmptyBrokerLoadData(self) -> None:
        assert outcome(run(LoadSnapshot.of([], []))) == (Label.SKIP, Reason.NO_BROKERS)

    def testNoOwnerLoadData(self) -> None:
        """Departure: upstream's top-K report can list bundles the broker no longer owns
        (NoBundles); trimtab's reports are built from the owner column, so a broker whose
        bundles are all owned elsewhere reports no top bundles: NoLoadData."""
        snap = up.five()
        elsewhere = replace(snap.bundles, owners=tuple("broker9" for _ in snap.bundles.owners))
        result = run(replace(snap, bundles=elsewhere))
        assert not result.moves
        assert outcome(result) == (Label.SKIP, Reason.NO_LOAD_DATA)
        assert_setup_stats(result)

    def testEmptyTopBundlesLoadData(self) -> None:
        result = run(up.snapshot([(b, ns, (), cpu) for b, ns, _, cpu in up.FIVE]))
        assert outcome(result) == (Label.SKIP, Reason.NO_LOAD_DATA)
        assert_setup_stats(result)

    def testOutDatedLoadData(self) -> None:
        assert len(run(up.five()).moves) == 2
        assert outcome(run(up.snapshot(up.FIVE, at=0.0))) == (Label.SKIP, Reason.OUTDATED_DATA)

    def testRecentlyUnloadedBrokers(self) -> None:
        """An unload TTL × 1.001 s ago (1801.8 s) is over; one at ``now`` is a CoolDown."""
        old = ShedderState(recently_unloaded_brokers=frozen_map({"broker1": up.NOW - 1801.8}))
        result = run(up.five(), old)
        assert moves(result) == SETUP_MOVES
        assert_setup_stats(result)
        fresh = ShedderState(recently_unloaded_brokers=frozen_map({"broker1": up.NOW}))
        assert outcome(run(up.five(), fresh)) == (Label.SKIP, Reason.COOL_DOWN)

    def testRecentlyUnloadedBundles(self) -> None:
        recent = dict.fromkeys((up.BUNDLE_D1, up.BUNDLE_D2, up.BUNDLE_E1, up.BUNDLE_E2), up.NOW)
        result = run(up.five(), ShedderState(recently_unloaded_bundles=frozen_map(recent)))
        assert moves(result) == {("broker3", up.BUNDLE_C1, "broker1", Reason.OVERLOADED)}
        assert_setup_stats(result)

    def testGetAvailableBrokersFailed(self) -> None:
        """Failure/Unknown. Upstream's counter keeps avg and std at 0.0 (never updated);
        trimtab reports NaN: the cycle computed no statistics."""
        result = run(replace(up.five(), available=None))
        assert outcome(result) == (Label.FAILURE, Reason.UNKNOWN)
        assert math.isnan(result.avg) and math.isnan(result.std)

    def testBundlesWithIsolationPolicies(self) -> None:
        """Namespace E may live on broker5 only (primary, min_limit 1), so E1 cannot go to
        broker1 and broker4 sheds D1 instead; with transfer off D1 is a plain unload.

        Departure in the second half: upstream mocks *every* namespace as isolated with
        policies disabled and expects NoBundles, because its fixture built the top-K report
        before the policies existed. trimtab builds the report as ``TopKBundles`` does, which
        leaves out bundles under a policy when policies may not be shed, so no broker reports
        a top bundle: NoLoadData."""
        only_e = IsolationPolicies(
            (IsolationPolicy.of("e", ["my-tenant/my-namespaceE"], ["broker5"], min_limit=1),)
        )
        snap = with_policies(up.five(), Policies(isolation=only_e))
        result = run(snap, shed_bundles_with_policies=True)
        assert moves(result) == {("broker4", up.BUNDLE_D1, "broker1", Reason.OVERLOADED)}
        assert_setup_stats(result)
        result = run(snap, shed_bundles_with_policies=True, transfer_enabled=False)
        assert moves(result) == {("broker4", up.BUNDLE_D1, None, Reason.OVERLOADED)}
        assert_setup_stats(result)

        every = IsolationPolicies((IsolationPolicy.of("all", ["my-tenant/.*"], ["broker5"]),))
        snap = with_policies(up.five(), Policies(isolation=every))
        for transfer in (True, False):
            result = run(snap, shed_bundles_with_policies=False, transfer_enabled=transfer)
            assert not result.moves
            assert outcome(result) == (Label.SKIP, Reason.NO_LOAD_DATA)
            assert_setup_stats(result)

    def testBundlesWithAntiAffinityGroup(self) -> None:
        """Every namespace is in one anti-affinity group; the (mocked) helper first leaves
        no candidate for any bundle (NoBundles), then none except for E1 (one transfer)."""
        groups = AntiAffinityGroups(dict.fromkeys(NAMESPACES, GROUP))
        cleared = Policies(anti_affinity=groups, extra=(_ClearAll(),))
        result = run(with_policies(up.five(), cleared), shed_bundles_with_policies=True)
        assert not result.moves
        assert outcome(result) == (Label.SKIP, Reason.NO_BUNDLES)
        assert_setup_stats(result)
        only_e1 = Policies(anti_affinity=groups, extra=(_ClearAll(frozenset({up.BUNDLE_E1})),))
        result = run(with_policies(up.five(), only_e1), shed_bundles_with_policies=True)
        assert moves(result) == {("broker5", up.BUNDLE_E1, "broker1", Reason.OVERLOADED)}
        assert_setup_stats(result)

    def testFilterHasException(self) -> None:
        """A filter that throws makes every bundle non-transferable: Skip/NoBundles."""
        snap = with_policies(up.five(), Policies(extra=(_Raises(),)))
        result = run(snap, shed_bundles_with_policies=True)
        assert not result.moves
        assert outcome(result) == (Label.SKIP, Reason.NO_BUNDLES)
        assert_setup_stats(result)

    @pytest.mark.parametrize(
        ("isolated", "grouped", "enabled", "expected"),
        [
            (True, True, True, True),
            (True, True, False, False),
            (True, False, True, True),
            (True, False, False, False),
            (False, True, True, True),
            (False, True, False, False),
            (False, False, True, True),
            (False, False, False, True),
        ],
    )
    def testIsLoadBalancerSheddingBundlesWithPoliciesEnabled(
        self, isolated: bool, grouped: bool, enabled: bool, expected: bool
    ) -> None:
        """A bundle under an isolation policy or an anti-affinity group is shed only with
        ``loadBalancerSheddingBundlesWithPoliciesEnabled``; any other bundle always."""
        ns = "my-tenant/my-namespaceA"
        isolation = IsolationPolicies(
            (IsolationPolicy.of("a", [ns], ["broker1"]),) if isolated else ()
        )
        groups = AntiAffinityGroups({ns: GROUP} if grouped else {})
        snap = up.five()
        index = BundleIndex.build(
            snap.bundles, sorted(snap.loads), Policies(isolation=isolation, anti_affinity=groups)
        )
        i = snap.bundles.names.index(f"{ns}/{up.TWO_RANGES[0]}")
        config = up.config(shed_bundles_with_policies=enabled)
        assert eligible(index, i, ShedderState(), config) is expected

    def testTargetStd(self) -> None:
        snap = up.snapshot(
            [
                ("broker1", "my-tenant/my-namespaceA", (30, 30), 10),
                ("broker2", "my-tenant/my-namespaceB", (40, 40), 20),
                ("broker3", "my-tenant/my-namespaceC", (50, 50), 30),
            ]
        )
        result = run(snap)
        assert outcome(result) == (Label.SKIP, Reason.HIT_COUNT)
        assert result.avg == pytest.approx(0.2)
        assert result.std == pytest.approx(0.08164966, abs=1e-6)

    def testSingleTopBundlesLoadData(self) -> None:
        sizes = {"broker1": 1, "broker2": 2, "broker3": 6, "broker4": 10, "broker5": 70}
        result = run(up.snapshot([(b, ns, (sizes[b],), cpu) for b, ns, _, cpu in up.FIVE]))
        assert outcome(result) == (Label.SKIP, Reason.NO_BUNDLES)
        assert_setup_stats(result)

    def testBundleThroughputLargerThanOffloadThreshold(self) -> None:
        """broker4's and broker5's top bundles turn into 1 GB/s ones after their load data
        (8 and 9 MB/s) was reported."""
        table = [
            *(x for b in up.FIVE[:3] for x in up.top_bundles(b[0], b[1], b[2])),
            *up.top_bundles("broker4", "my-tenant/my-namespaceD", (1e9, 1e9)),
            *up.top_bundles("broker5", "my-tenant/my-namespaceE", (1e9, 1e9)),
        ]
        result = run(LoadSnapshot.of(up.five().loads.values(), table))
        assert moves(result) == {("broker3", up.BUNDLE_C1, "broker1", Reason.OVERLOADED)}
        assert_setup_stats(result)

    def testZeroBundleThroughput(self) -> None:
        """Bundles whose traffic fell to 0 after the load data was reported: none moves."""
        table = [
            *(x for b, ns, sizes, _ in up.FIVE for x in up.top_bundles(b, ns, (0.0,) * len(sizes)))
        ]
        result = run(LoadSnapshot.of(up.five().loads.values(), table))
        assert not result.moves
        assert outcome(result) == (Label.SKIP, Reason.NO_BUNDLES)
        assert_setup_stats(result)

    def testTargetStdAfterTransfer(self) -> None:
        result = run(up.five(broker4=55, broker5=65))
        assert moves(result) == {("broker5", up.BUNDLE_E1, "broker1", Reason.OVERLOADED)}
        assert result.avg == pytest.approx(0.264)
        assert result.std == pytest.approx(0.27644891028904417)
        assert result.std_after < 0.25, "one transfer reaches the target"

    @staticmethod
    def two_brokers(
        small: tuple[float, ...], big: tuple[float, ...], cpu: tuple[float, float]
    ) -> LoadSnapshot:
        return up.snapshot(
            [
                ("broker1", "my-tenant/my-namespaceA", small, cpu[0]),
                ("broker2", "my-tenant/my-namespaceB", big, cpu[1]),
            ]
        )

    def testUnloadBundlesGreaterThanTargetThroughput(self) -> None:
        """Three bundles out of broker2, four swapped back from broker1; std estimate 0.05."""
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

    def testSkipBundlesGreaterThanTargetThroughputAfterSplit(self) -> None:
        snap = self.two_brokers((1, 500_000_000), (500_000_000, 500_000_000), (50, 100))
        assert outcome(run(snap, target_std=0.20)) == (Label.SKIP, Reason.NO_BUNDLES)

    def testUnloadBundlesLessThanTargetThroughputAfterSplit(self) -> None:
        snap = self.two_brokers((1e6, 2e6, 3e6, 4e6, 5e6), (490_000_000, 510_000_000), (10, 1000))
        result = run(snap)
        assert moves(result) == {
            (
                "broker2",
                "my-tenant/my-namespaceB/0x00000000_0x0FFFFFFF",
                "broker1",
                Reason.OVERLOADED,
            )
        }
        assert result.avg == pytest.approx(5.05)
        assert result.std == pytest.approx(4.95)
        assert result.std_after == pytest.approx(0.050000004900021836)

    def testUnloadBundlesGreaterThanTargetThroughputAfterSplit(self) -> None:
        """One bundle each way. Upstream's std estimate (2.58e-8) counts the swapped-in
        traffic only because the fixture runs in debug mode; trimtab always counts it
        (see ``test_swap_gain_is_counted_without_debug_mode``)."""
        snap = self.two_brokers((2_400_000, 2_400_000), (5_000_000, 5_000_000), (48, 100))
        result = run(snap)
        assert {(m.source, m.destination) for m in result.moves} == {
            ("broker1", "broker2"),
            ("broker2", "broker1"),
        }
        assert result.avg == pytest.approx(0.74)
        assert result.std == pytest.approx(0.26)
        assert result.std_after == pytest.approx(2.5809568279517847e-8, abs=1e-6)

    @pytest.mark.parametrize(
        "ema", [10.0, 0.0], ids=["low", "zero (older testMinBrokerWithZeroTraffic)"]
    )
    def testMinBrokerWithLowTraffic(self, ema: float) -> None:
        snap = up.with_load(up.five(broker4=55, broker5=65), "broker2", msg_throughput_ema=ema)
        result = run(snap)
        assert moves(result) == {
            ("broker5", up.BUNDLE_E1, "broker1", Reason.OVERLOADED),
            ("broker4", up.BUNDLE_D1, "broker2", Reason.UNDERLOADED),
        }
        assert result.avg == pytest.approx(0.264)
        assert result.std == pytest.approx(0.27644891028904417)

    def testMinBrokerWithLowerLoadThanAvg(self) -> None:
        result = run(up.five(broker2=3, broker4=55, broker5=65))
        assert moves(result) == {
            ("broker5", up.BUNDLE_E1, "broker1", Reason.OVERLOADED),
            ("broker4", up.BUNDLE_D1, "broker2", Reason.UNDERLOADED),
        }
        assert result.avg == pytest.approx(0.262)
        assert result.std == pytest.approx(0.2780935094532054)

    def testMaxNumberOfTransfersPerShedderCycle(self) -> None:
        result = run(up.five(), max_broker_shedding_per_cycle=10)
        assert moves(result) == SETUP_MOVES
        assert_setup_stats(result)

    def testLoadBalancerSheddingConditionHitCountThreshold(self) -> None:
        shedder = TransferShedder(up.config(hit_count_threshold=3))
        state = ShedderState()
        for hit in (1, 2, 3):
            result = shedder.cycle(up.five(), state, now=up.NOW)
            assert outcome(result) == (Label.SKIP, Reason.HIT_COUNT)
            assert result.state.hit_count == hit
            assert_setup_stats(result)
            state = result.state
        result = shedder.cycle(up.five(), state, now=up.NOW)
        assert moves(result) == SETUP_MOVES
        assert_setup_stats(result)

    def testRemainingTopBundles(self) -> None:
        snap = up.snapshot([*up.FIVE[:4], ("broker5", "my-tenant/my-namespaceE", (2e6, 3e6), 90)])
        result = run(snap)
        assert moves(result) == SETUP_MOVES
        assert_setup_stats(result)

    def testLoadMoreThan100(self) -> None:
        result = run(up.five(broker4=200, broker5=1000))
        assert moves(result) == SETUP_MOVES
        assert result.avg == pytest.approx(2.424)
        assert result.std == pytest.approx(3.8633332758124816)
        assert result.std_after == pytest.approx(2.781643776903451)

    @pytest.mark.parametrize("seed", range(5), ids=lambda s: f"seed {s}")
    def testRandomLoad(self, seed: int) -> None:
        """Ten random brokers (cpu up to 1000 %): after a cycle the std is at target or no
        pairs are left; the incremental std agrees with a recount of the pairs' net moves."""
        rng = np.random.default_rng(seed)
        brokers = []
        for i in range(10):
            load = int(rng.integers(1000))
            part = int(rng.integers(load + 1))
            brokers.append((f"broker{i}", f"t/ns{i}", (float(part), float(load - part)), load))
        snap = up.snapshot(brokers)
        result = run(snap)
        pairs = {(m.source, m.destination) for m in result.moves}
        assert result.std_after <= 0.25 or len(pairs) <= up.config().max_broker_shedding_per_cycle
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

    def testOverloadOutlier(self) -> None:
        brokers = [
            (f"broker{i}", f"my-tenant/my-namespace{i}", (300_000, 700_000), 1) for i in range(99)
        ]
        brokers.append(("broker99", "my-tenant/my-namespace99", (30_000_000, 70_000_000), 100))
        result = run(up.snapshot(brokers))
        assert result.avg == pytest.approx(0.0199, abs=1e-5)
        assert result.std == pytest.approx(0.09850375627355534, abs=1e-5)
        ((source, bundle, destination, reason),) = moves(result)
        assert (source, bundle, reason) == (
            "broker99",
            "my-tenant/my-namespace99/0x00000000_0x0FFFFFFF",
            Reason.UNDERLOADED,
        )
        assert destination is not None and destination != "broker99"

    def testUnderloadOutlier(self) -> None:
        brokers = [
            (f"broker{i}", f"my-tenant/my-namespace{i}", (30_000_000, 70_000_000), 98)
            for i in range(98)
        ]
        brokers.append(("broker98", "my-tenant/my-namespace98", (30_000_000, 70_000_000), 99))
        brokers.append(("broker99", "my-tenant/my-namespace99", (300_000, 700_000), 1))
        result = run(up.snapshot(brokers))
        assert result.avg == pytest.approx(0.9704, abs=1e-5)
        assert result.std == pytest.approx(0.09652895938523735, abs=1e-5)
        assert moves(result) == {
            (
                "broker98",
                "my-tenant/my-namespace98/0x00000000_0x0FFFFFFF",
                "broker99",
                Reason.UNDERLOADED,
            )
        }

    @pytest.mark.parametrize("seed", range(5), ids=lambda s: f"seed {s}")
    def testRandomLoadStats(self, seed: int) -> None:
        """The incremental std after each max/min offload equals a recount (Commons Math)."""
        rng = np.random.default_rng(seed)
        loads = sorted(float(x) for x in rng.integers(0, 1000, 10) / 100)
        stats = LoadStats.of(loads)
        i, j = 0, len(loads) - 1
        for _ in range(up.config().max_broker_shedding_per_cycle):
            assert stats.avg == pytest.approx(np.mean(loads), abs=1e-4)
            assert stats.std == pytest.approx(np.std(loads), abs=1e-4)
            low, high = loads[i], loads[j]
            offload = (high - low) / 2
            stats.offload(high, low, offload)
            loads[i], loads[j] = low + offload, high - offload
            i, j = i + 1, j - 1

    def testHighVarianceLoadStats(self) -> None:
        stats = LoadStats.of([x / 100 for x in [1] + [100] * 16])
        assert stats.avg == pytest.approx(0.9417647058823528)
        assert stats.std == pytest.approx(0.23294117647058868)

    def testLowVarianceLoadStats(self) -> None:
        stats = LoadStats.of([x / 100 for x in range(390, 400)])
        assert stats.avg == pytest.approx(3.9449999999999994)
        assert stats.std == pytest.approx(0.028722813232795824)
