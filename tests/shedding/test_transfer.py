"""The TransferShedder beyond upstream's own tests (those are ported, with their names, in
``test_upstream_transfer.py``): trimtab's departures and the filters on real policies."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.shedding import upstream as up
from tests.shedding.upstream import outcome, run
from trimtab.shedding import (
    Label,
    LoadSnapshot,
    Move,
    Reason,
    ShedderState,
    shift,
)
from trimtab.shedding.decisions import frozen_map


class TestStandardFixture:
    def test_transfer_disabled_names_no_destination(self) -> None:
        """loadBalancerTransferEnabled=false: an unload, placed at the next lookup."""
        result = run(up.five(), transfer_enabled=False)
        assert {m.destination for m in result.moves} == {None}


class TestSkipReasons:
    def test_an_available_broker_without_load_data_stops_the_cycle(self) -> None:
        """A listed broker that never reported: Skip/NoLoadData."""
        snap = up.five()
        snap = LoadSnapshot.of(
            snap.loads.values(), snap.bundles, available=[*snap.loads, "broker6"]
        )
        assert outcome(run(snap)) == (Label.SKIP, Reason.NO_LOAD_DATA)

    def test_pinned_bundles_are_not_shed_unless_policies_allow_it(self) -> None:
        """Isolation/anti-affinity bundles are skipped unless ...WithPoliciesEnabled."""
        snap = up.five()
        pinned = replace(snap.bundles, pinned=np.ones(len(snap.bundles), dtype=bool))
        snap = replace(snap, bundles=pinned)
        # Upstream's TopKBundles leaves them out of the report, so no broker reports one.
        assert outcome(run(snap)) == (Label.SKIP, Reason.NO_LOAD_DATA)
        assert len(run(snap, shed_bundles_with_policies=True).moves) == 2

    def test_excluded_namespaces_are_never_shed(self) -> None:
        """PIP-380: namespace E excluded, so broker5's share goes to nobody."""
        result = run(up.five(), excluded_namespaces="my-tenant/my-namespaceE")
        assert all(not m.bundle.startswith("my-tenant/my-namespaceE") for m in result.moves)


class TestTimers:
    def test_moves_are_stamped_for_the_grace_period(self) -> None:
        """The scheduler stamps moved bundles and source brokers with now, and forgets
        bundles older than the grace period."""
        old = ShedderState(recently_unloaded_bundles=frozen_map({"x/y/0x0_0x1": up.NOW - 31 * 60}))
        result = run(up.five(), old)
        assert set(result.state.recently_unloaded_bundles) == {up.BUNDLE_E1, up.BUNDLE_D1}
        assert set(result.state.recently_unloaded_brokers) == {"broker5", "broker4"}


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

    def test_swap_gain_is_counted_without_debug_mode(self) -> None:
        """The upstream bug: swapped-in traffic counts only in debug mode. Here it always
        counts (loadBalancerDebugModeEnabled is accepted and ignored), so with debug off the
        std estimate is the true one (~0), not 0.24."""
        snap = self.two_brokers((2_400_000, 2_400_000), (5_000_000, 5_000_000), (48, 100))
        for debug in (True, False):
            result = run(snap, loadBalancerDebugModeEnabled=debug)
            assert len(result.moves) == 2, "one bundle each way"
            assert result.avg == pytest.approx(0.74)
            assert result.std == pytest.approx(0.26)
            assert result.std_after == pytest.approx(0.0, abs=1e-6)
        # The std estimate agrees with the loads the moves really produce.
        loads = {b: x.load for b, x in snap.loads.items()}
        ratios = {b: x.load / x.throughput for b, x in snap.loads.items()}
        after = shift(loads, result.moves, ratios)
        assert np.std(list(after.values())) == pytest.approx(result.std_after, abs=1e-6)


class TestPairs:
    def test_moves_name_the_pair_they_belong_to(self) -> None:
        """Each move goes between an actual max broker and its min partner."""
        result = run(up.five())
        assert all(isinstance(m, Move) and m.destination for m in result.moves)


def test_cooldown_note_never_shows_a_negative_duration() -> None:
    """Issue 43: a broker whose latest report predates its last unload read "reported -55s
    after its last unload"; it now says it has not reported since."""
    from tests.shedding.upstream import NOW, five
    from trimtab.shedding import ShedderState

    state = ShedderState(recently_unloaded_brokers=frozen_map({"broker1": NOW + 55}))
    result = run(five(), state)
    (held,) = [d for d in result.decisions if d.reason.value == "CoolDown"]
    assert "has not reported since its last unload (55s before it)" in held.note
    assert "-55" not in held.note
