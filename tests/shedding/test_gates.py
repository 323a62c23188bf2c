"""The shared gates: each stops a cycle for the same reason in every shedder."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings

from tests.shedding.test_baselines import cluster
from tests.shedding.upstream import NOW
from tests.strategies import shedding_snapshots
from trimtab.config import Config, SheddingConfig
from trimtab.shedding import STRATEGIES, Label, LoadSnapshot, Reason, ShedderState, shedder_for
from trimtab.shedding.gates import (
    Level,
    count_hits,
    hit_count_gate,
    no_broker_gate,
    pair_reason,
    sole_bundle_gate,
    usable_brokers,
)
from trimtab.shedding.snapshot import BundleIndex

ALL = sorted(STRATEGIES)
MB = 1_000_000.0


def config(**keys: object) -> SheddingConfig:
    return Config.of(**keys).shedding


def three_brokers() -> LoadSnapshot:
    return cluster(
        [("b1", 0.9, [5 * MB, 4 * MB]), ("b2", 0.5, [3 * MB, 2 * MB]), ("b3", 0.1, [1 * MB])]
    )


class TestUsableBrokers:
    def test_splits_fresh_stale_and_never_reported_in_id_order(self) -> None:
        """Fresh loads in id order; stale (older than the TTL) and missing brokers by name."""
        snap = three_brokers()
        old = replace(snap.loads["b2"], updated_at=NOW - 10_000)
        snap = LoadSnapshot.of(
            [snap.loads["b3"], old, snap.loads["b1"]],
            snap.bundles,
            available={"b1", "b2", "b3", "b4"},
        )
        usable = usable_brokers(snap, NOW, config())
        assert [b.broker for b in usable.loads] == ["b1", "b3"]
        assert usable.stale == ("b2",)
        assert usable.missing == ("b4",)


class TestNoBrokerGate:
    @pytest.mark.parametrize("strategy", ALL)
    def test_only_stale_brokers_stop_every_shedder_as_outdated_data(self, strategy: str) -> None:
        """The cycle's own Skip is OutdatedData when every broker's data is past the TTL."""
        snap = three_brokers()
        result = shedder_for(config(), strategy).cycle(snap, ShedderState(), now=NOW + 10_000)
        assert not result.moves
        assert result.outcome.label is Label.SKIP
        assert result.outcome.reason is Reason.OUTDATED_DATA

    @pytest.mark.parametrize("strategy", ALL)
    def test_no_available_broker_stops_every_shedder_as_no_brokers(self, strategy: str) -> None:
        """An empty registry is NoBrokers, whatever the strategy."""
        snap = LoadSnapshot.of([], [], available=())
        result = shedder_for(config(), strategy).cycle(snap, ShedderState(), now=NOW)
        assert [d.reason for d in result.decisions] == [Reason.NO_BROKERS]

    def test_lets_a_cycle_with_a_fresh_broker_go_on(self) -> None:
        """None as soon as one broker is usable."""
        usable = usable_brokers(three_brokers(), NOW, config())
        assert no_broker_gate(usable, ShedderState()) is None


class TestPairReason:
    CFG = config(target_std=0.25)

    def test_std_above_target_is_overloaded_before_anything_else(self) -> None:
        """Upstream's order: the std rule first, even when the low broker is underloaded."""
        low, high = Level(0.0, 0.0), Level(0.5, 10.0)
        assert pair_reason(0.3, 0.4, low, high, self.CFG) is Reason.OVERLOADED

    def test_low_broker_underloaded_is_underloaded(self) -> None:
        """Below ``avg · min(0.5, target/2)`` with the std at target."""
        low, high = Level(0.01, 5.0), Level(0.5, 10.0)
        assert pair_reason(0.2, 0.4, low, high, self.CFG) is Reason.UNDERLOADED

    def test_high_broker_overloaded_is_overloaded(self) -> None:
        """Above 85 % and above ``avg + target``."""
        low, high = Level(0.4, 10.0), Level(0.9, 10.0)
        assert pair_reason(0.2, 0.6, low, high, self.CFG) is Reason.OVERLOADED

    def test_no_rule_firing_is_none(self) -> None:
        low, high = Level(0.4, 10.0), Level(0.5, 10.0)
        assert pair_reason(0.05, 0.45, low, high, self.CFG) is None


class TestHitCount:
    def test_holds_until_the_trigger_fired_more_than_the_threshold(self) -> None:
        """Threshold 3: cycles 1-3 are HitCount Skips, the fourth goes on."""
        cfg = config(hit_count_threshold=3)
        state = ShedderState()
        held = []
        for _ in range(4):
            state = count_hits(state, triggered=True)
            held.append(hit_count_gate(state, cfg, avg=0.5, std=0.3) is not None)
        assert held == [True, True, True, False]

    def test_a_quiet_cycle_resets_the_count(self) -> None:
        state = count_hits(count_hits(ShedderState(), triggered=True), triggered=False)
        assert state.hit_count == 0

    def test_the_hold_keeps_the_std_and_says_why(self) -> None:
        """The Skip comes after the notes; the std is unchanged by a held cycle."""
        cfg = config(hit_count_threshold=3)
        state = count_hits(ShedderState(), triggered=True)
        held = hit_count_gate(state, cfg, avg=0.5, std=0.3)
        assert held is not None
        assert held.std == held.std_after == 0.3
        assert held.outcome.reason is Reason.HIT_COUNT
        assert "hit 1 time in a row; it acts at" in held.outcome.note


class TestSoleBundle:
    def test_a_broker_with_one_bundle_is_never_shed(self) -> None:
        snap = three_brokers()
        index = BundleIndex.build(snap.bundles, ["b1", "b2", "b3"])
        refused = sole_bundle_gate(index, 2, "b3")
        assert refused is not None and refused.reason is Reason.NO_BUNDLES
        assert sole_bundle_gate(index, 0, "b1") is None

    @pytest.mark.parametrize("strategy", ["overload", "threshold", "uniform"])
    def test_the_modular_shedders_keep_a_sole_bundle(self, strategy: str) -> None:
        """A hot broker with one bundle is noted, never emptied."""
        snap = cluster([("b1", 0.99, [50 * MB]), ("b2", 0.01, [0.1 * MB, 0.1 * MB])])
        result = shedder_for(config(), strategy).cycle(snap, ShedderState(), now=NOW)
        assert all(m.source != "b1" for m in result.moves)


@settings(max_examples=40, deadline=None)
@given(snap=shedding_snapshots())
def test_every_shedder_moves_only_fresh_brokers_bundles(snap: LoadSnapshot) -> None:
    """No strategy sheds from a broker the usable-broker split left out."""
    now = 10_000.0  # the time the generated loads are stamped with
    usable = {b.broker for b in usable_brokers(snap, now, config()).loads}
    for strategy in ALL:
        cfg = config(hit_count_threshold=0, target_std=0.05)
        result = shedder_for(cfg, strategy).cycle(snap, ShedderState(), now=now)
        assert {m.source for m in result.moves} <= usable
