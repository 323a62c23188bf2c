"""``balanced``: all disjoint pairs, knapsack bundles, capacity-aware predicted loads."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.shedding.upstream import NOW
from trimtab.config import Config
from trimtab.shedding import (
    BalancedShedder,
    BrokerLoad,
    Bundle,
    LoadSnapshot,
    Reason,
    ShedderState,
    TransferShedder,
    load_per_byte,
    plan,
    worsening,
)
from trimtab.shedding.knapsack import EXACT_LIMIT, closest_subset

MB = 1_000_000.0
GB_CAP = 1e9  # bytes/s: load 1.0


def load(
    name: str, level: float, *, cap: float = GB_CAP, samples: int = 1, at: float = NOW
) -> BrokerLoad:
    tput = level * cap
    return BrokerLoad(
        broker=name,
        bandwidth_out=level,
        msg_throughput_in=tput / 2,
        msg_throughput_out=tput / 2,
        weighted_max=level,
        weighted_max_ema=level,
        msg_throughput_ema=tput,
        updated_at=at,
        samples=samples,
        capacity_bytes_per_s=cap,
    )


def cluster(levels: dict[str, float], *, unit: float = 0.05, cap: float = GB_CAP) -> LoadSnapshot:
    """Each broker's load in bundles of ``unit`` (so that halves of the gaps are exact)."""
    bundles = [
        Bundle(name=f"t/{b}/0x{k:08x}_0x{k + 1:08x}", broker=b, throughput_out=unit * cap)
        for b, x in levels.items()
        for k in range(round(x / unit))
    ]
    return LoadSnapshot.of([load(b, x, cap=cap) for b, x in levels.items()], bundles)


def shedder(**keys: object) -> BalancedShedder:
    return BalancedShedder(Config.of(**({"hit_count_threshold": 0} | keys)).shedding)


class TestPairs:
    def test_worked_example_balances_in_one_cycle(self) -> None:
        """[0.9, 0.8, 0.1, 0.0]: both pairs move half their gap at once (target 0.05)."""
        snap = cluster({"a": 0.9, "b": 0.8, "c": 0.1, "d": 0.0})
        result = shedder(target_std=0.05).cycle(snap, ShedderState(), now=NOW)
        pairs = {(m.source, m.destination) for m in result.moves}
        assert pairs == {("a", "d"), ("b", "c")}
        assert result.std_after == pytest.approx(0.0, abs=1e-9)

    def test_more_than_three_disjoint_pairs_in_one_cycle(self) -> None:
        """Ten brokers far apart: five pairs in one cycle, each broker in at most one."""
        levels = {f"b{i}": 0.1 * i for i in range(10)}
        result = shedder(target_std=0.01).cycle(cluster(levels), ShedderState(), now=NOW)
        pairs = {(m.source, m.destination) for m in result.moves}
        assert len(pairs) == 5
        brokers = [b for pair in pairs for b in pair]
        assert len(brokers) == len(set(brokers))

    def test_stops_pairing_once_the_std_is_at_target(self) -> None:
        """Largest gaps first; with the spread rule off (a 100-point threshold), no further
        pair once the predicted std is at target."""
        levels = {f"b{i}": 0.1 * i for i in range(10)}
        off = shedder(target_std=0.21, loadBalancerAvgShedderLowThreshold=100)
        result = off.cycle(cluster(levels), ShedderState(), now=NOW)
        pairs = {(m.source, m.destination) for m in result.moves}
        assert pairs == {("b9", "b0")}
        assert result.std_after <= 0.21 < result.std

    def test_the_spread_rule_goes_on_while_a_pair_is_15_points_apart(self) -> None:
        """With the std at target and no broker under- or overloaded, pairs at least
        loadBalancerAvgShedderLowThreshold (15) points apart still move: 54, 42, 30 and 18
        points apart; the middle pair, 6 apart, stays."""
        levels = {f"b{i}": 0.2 + 0.06 * i for i in range(10)}
        counted = ShedderState(spread_hits=1)  # 54 points: wide, so the second hit acts
        result = shedder(target_std=0.21).cycle(cluster(levels), counted, now=NOW)
        pairs = {(m.source, m.destination) for m in result.moves}
        assert pairs == {("b9", "b0"), ("b8", "b1"), ("b7", "b2"), ("b6", "b3")}

    def test_the_spread_rule_waits_for_eight_hits_in_a_row(self) -> None:
        """The hysteresis gate: a 20-point spread with the std at target acts on the eighth
        cycle in a row (loadBalancerAvgShedderHitCountLowThreshold); one cycle under 15
        points starts the count again."""
        apart = cluster({"a": 0.3, "b": 0.4, "c": 0.5})
        close = cluster({"a": 0.35, "b": 0.4, "c": 0.45})
        balanced, state = shedder(target_std=0.21), ShedderState()
        for snap in [apart] * 7 + [close] + [apart] * 7:
            result = balanced.cycle(snap, state, now=NOW)
            assert result.moves == ()
            state = result.state
        assert state.spread_hits == 7
        assert balanced.cycle(apart, state, now=NOW).moves

    def test_a_wide_spread_acts_after_two_hits_instead_of_four(self) -> None:
        """Upstream's hit count is 3 (acting on the 4th); a spread of 40 points or more acts
        after loadBalancerAvgShedderHitCountHighThreshold (2) hits."""
        snap = cluster({"a": 0.9, "b": 0.8, "c": 0.1, "d": 0.0})
        balanced = BalancedShedder(Config.of(target_std=0.05).shedding)
        first = balanced.cycle(snap, ShedderState(), now=NOW)
        assert first.moves == ()
        assert balanced.cycle(snap, first.state, now=NOW).moves

    def test_hit_count_is_kept_after_its_own_moves(self) -> None:
        """Upstream resets the count after an unload; balanced keeps acting while it is real."""
        snap = cluster({"a": 0.9, "b": 0.8, "c": 0.1, "d": 0.0})
        result = shedder(hit_count_threshold=3).cycle(snap, ShedderState(hit_count=3), now=NOW)
        assert result.moves and result.state.hit_count == 4

    def test_stale_and_silent_brokers_are_left_out_not_blocking(self) -> None:
        """Unlike upstream, one broker without data does not stop the cycle."""
        snap = cluster({"a": 0.9, "b": 0.0, "old": 0.0})
        loads = dict(snap.loads)
        loads["old"] = replace(loads["old"], updated_at=NOW - 3600)
        snap = LoadSnapshot.of(loads.values(), snap.bundles, available=["a", "b", "old", "new"])
        result = shedder().cycle(snap, ShedderState(), now=NOW)
        assert {(m.source, m.destination) for m in result.moves} == {("a", "b")}
        notes = {(d.broker, d.reason) for d in result.decisions if d.move is None}
        assert notes == {("old", Reason.OUTDATED_DATA), ("new", Reason.NO_LOAD_DATA)}


def sized(levels: dict[str, list[float]]) -> LoadSnapshot:
    """Brokers holding bundles of the given loads (same capacity)."""
    bundles = [
        Bundle(name=f"t/{b}/0x{k:08x}_0x{k + 1:08x}", broker=b, throughput_out=x * GB_CAP)
        for b, sizes in levels.items()
        for k, x in enumerate(sizes)
    ]
    return LoadSnapshot.of([load(b, sum(x)) for b, x in levels.items()], bundles)


class TestTrades:
    """Step 6: a broker whose bundles are each too big to send alone trades one for at most
    two smaller ones, when that at least halves the pair's gap; only the spread rule trades."""

    #: "a" is 20 points above "c": equalising moves 0.10, but each of its bundles is 0.30+.
    UNEVEN: ClassVar[dict[str, list[float]]] = {
        "a": [0.30, 0.35],
        "b": [0.45, 0.10],
        "c": [0.20, 0.15, 0.10],
    }

    def test_a_trade_closes_a_spread_no_single_move_can(self) -> None:
        result = shedder(target_std=0.21).cycle(
            sized(self.UNEVEN), ShedderState(spread_hits=7), now=NOW
        )
        moves = {(m.source, m.destination, round(m.throughput / GB_CAP, 2)) for m in result.moves}
        assert moves == {("a", "c", 0.30), ("c", "a", 0.20)}
        assert all(d.note == "trade with c" for d in result.decisions if d.move)
        assert result.std_after < result.std

    def test_no_trade_without_halving_the_gap(self) -> None:
        """0.10 equalises the pair; the trades on offer move 0.02 (0.35 for 0.33), 0.18
        (0.30 for 0.12) or 0.23 (0.35 for 0.12): none leaves the gap at half or less."""
        almost = {"a": [0.30, 0.35], "c": [0.33, 0.12]}
        result = shedder(target_std=0.21).cycle(sized(almost), ShedderState(spread_hits=7), now=NOW)
        assert result.moves == ()
        assert any(d.reason is Reason.NO_BUNDLES for d in result.decisions)

    def test_upstreams_trigger_never_trades(self) -> None:
        """Above the std target the pair is upstream's: no trade (a hot bundle that comes and
        goes would be traded from broker to broker)."""
        result = shedder(target_std=0.05).cycle(sized(self.UNEVEN), ShedderState(), now=NOW)
        assert all(not d.note.startswith("trade") for d in result.decisions)

    def test_the_spread_reads_the_smaller_of_the_raw_and_the_smoothed_gap(self) -> None:
        """Smoothed 20 points apart but the last samples only 10: a spike or dip the moving
        average still remembers is not a spread."""
        snap = cluster({"a": 0.3, "b": 0.4, "c": 0.5})
        loads = dict(snap.loads)
        loads["c"] = replace(loads["c"], weighted_max=0.40)
        snap = LoadSnapshot.of(loads.values(), snap.bundles)
        result = shedder(target_std=0.21).cycle(snap, ShedderState(spread_hits=7), now=NOW)
        assert result.moves == ()
        assert result.state.spread_hits == 0


class TestPredictions:
    def test_no_second_move_before_the_reports_catch_up(self) -> None:
        """Same (old) reports next minute: the prediction says the pair is balanced."""
        snap = cluster({"a": 0.9, "b": 0.1})
        first = shedder(target_std=0.05).cycle(snap, ShedderState(), now=NOW)
        assert first.moves
        second = shedder(target_std=0.05).cycle(snap, first.state, now=NOW + 60)
        assert not second.moves
        assert second.std == pytest.approx(0.0, abs=1e-9)

    def test_prediction_fades_as_samples_fold_the_move_in(self) -> None:
        """After one sample the EMA holds 1 − h of the move; the prediction adds the rest."""
        snap = cluster({"a": 0.9, "b": 0.1})
        first = shedder(target_std=0.05).cycle(snap, ShedderState(), now=NOW)
        h = 0.9
        reports = [
            replace(
                load("a", 0.5, samples=2, at=NOW + 60), weighted_max_ema=h * 0.9 + (1 - h) * 0.5
            ),
            replace(
                load("b", 0.5, samples=2, at=NOW + 60), weighted_max_ema=h * 0.1 + (1 - h) * 0.5
            ),
        ]
        later = LoadSnapshot.of(reports, snap.bundles)
        second = shedder(target_std=0.05).cycle(later, first.state, now=NOW + 60)
        assert not second.moves
        assert second.avg == pytest.approx(0.5) and second.std == pytest.approx(0.0, abs=1e-9)

    def test_transfer_shedder_waits_instead(self) -> None:
        """For contrast: upstream sits out the cooldown until a late enough report."""
        snap = cluster({"a": 0.9, "b": 0.1})
        cfg = Config.of(hit_count_threshold=0, target_std=0.05).shedding
        first = TransferShedder(cfg).cycle(snap, ShedderState(), now=NOW)
        second = TransferShedder(cfg).cycle(snap, first.state, now=NOW + 60)
        assert second.outcome.reason is Reason.COOL_DOWN


BIG, SMALL = 400 * MB, 100 * MB


def big_and_small() -> LoadSnapshot:
    """A broker at 0.8 with forty 8 MB/s bundles, and an empty one of a quarter its capacity."""
    loads = [load("big", 0.8, cap=BIG), load("small", 0.0, cap=SMALL)]
    bundles = [
        Bundle(name=f"t/ns/0x{k:08x}_0x{k + 1:08x}", broker="big", throughput_out=8 * MB)
        for k in range(40)
    ]
    return LoadSnapshot.of(loads, bundles)


class TestCapacity:
    def test_a_small_broker_gains_more_load_per_byte(self) -> None:
        """Equalising a 4 × bigger source with a small destination moves
        (L_s − L_d)/(r_s + r_d) bytes/s, not half the gap in the source's units."""
        snap = big_and_small()
        ratios = load_per_byte(list(snap.loads.values()))
        assert ratios["small"] == pytest.approx(4 * ratios["big"]), (
            "new broker: capacity-scaled median"
        )
        result = shedder(target_std=0.05, max_bundles_in_load_report=40).cycle(
            snap, ShedderState(), now=NOW
        )
        moved = sum(m.throughput for m in result.moves)
        assert moved == pytest.approx(0.8 / (1 / BIG + 1 / SMALL), rel=0.1)  # 64 MB/s, 8 MB bundles
        assert result.std_after < 0.05

    def test_transfer_plan_onto_a_small_broker_is_flagged_not_balanced_one(self) -> None:
        """PIP-220 moves half the gap in the big source's units: the 4 × smaller destination
        gains 4 × that load and ends far above the source (source 0.8 → 0.4, destination
        0 → 1.6), so the settled std rises 0.4 → 0.6 and the plan carries a warning naming the
        cause; ``balanced`` sizes the move by both capacities and needs none."""
        snap = big_and_small()
        keys = {"hit_count_threshold": 0, "target_std": 0.05, "max_bundles_in_load_report": 40}
        cfg = Config.of(**keys).shedding
        upstream = plan(snap, TransferShedder(cfg), now=NOW)
        assert upstream.transfers and upstream.std_after > upstream.std_before
        assert upstream.ratios["small"] == pytest.approx(4 * upstream.ratios["big"])
        assert upstream.warning is not None
        assert upstream.std_after == pytest.approx(0.6)
        assert "from 0.400 to 0.600" in upstream.warning and "'balanced'" in upstream.warning
        ours = plan(snap, BalancedShedder(cfg), now=NOW)
        assert ours.transfers and ours.std_after < 0.05 and ours.warning is None

    def test_worsening_needs_moves_and_a_rise(self) -> None:
        """A cause is named only for PIP-220 with a move onto a broker of smaller capacity."""
        assert worsening("transfer", 0.1, 0.2, transfers=0, unequal=True) is None  # no moves
        assert worsening("transfer", 0.1, 0.1, transfers=3, unequal=True) is None
        assert worsening("transfer", 0.1, 0.05, transfers=3, unequal=True) is None
        named = worsening("transfer", 0.1, 0.2, transfers=3, unequal=True)
        assert named is not None and "unequal capacity" in named
        for strategy, unequal in (("transfer", False), ("threshold", True)):
            text = worsening(strategy, 0.1, 0.2, transfers=3, unequal=unequal)
            assert text is not None and "from 0.100 to 0.200" in text
            assert text.endswith("review it before applying") and "capacity" not in text


class TestKnapsack:
    def test_closest_subset_beats_stopping_at_the_first_overshoot(self) -> None:
        """[1, 2, 4, 7] towards 6: {2, 4}; smallest-first would stop at 1 + 2."""
        assert closest_subset(np.array([1.0, 2.0, 4.0, 7.0]), 6.0) == [1, 2]

    def test_fewer_bundles_win_a_tie(self) -> None:
        """6 alone and 2 + 4 are both exact: one move is better than two."""
        assert closest_subset(np.array([2.0, 4.0, 6.0]), 6.0) == [2]

    def test_nothing_helps_when_every_bundle_is_too_big(self) -> None:
        """A total of twice the target or more gains nothing."""
        assert closest_subset(np.array([13.0, 20.0]), 6.0) == []
        assert closest_subset(np.array([]), 6.0) == []

    @settings(max_examples=60, deadline=None)
    @given(
        sizes=st.lists(st.floats(0.1, 100.0), min_size=1, max_size=EXACT_LIMIT + 6),
        target=st.floats(0.5, 200.0),
    )
    def test_the_pick_is_within_bounds_and_near_the_best(
        self, sizes: list[float], target: float
    ) -> None:
        """Every pick sums into (0, 2·target); the binned path is within one bin of the best."""
        values = np.array(sizes)
        picked = closest_subset(values, target)
        assert len(set(picked)) == len(picked)
        if picked:
            total = float(values[picked].sum())
            assert 0 < total < 2 * target
        if len(sizes) <= EXACT_LIMIT:
            return
        # Compare with the best single and the greedy sum: the DP must not be worse than both.
        best_single = min((abs(v - target) for v in sizes if v < 2 * target), default=target)
        got = abs(float(values[picked].sum()) - target) if picked else target
        assert got <= best_single + 2 * target / 1024 * len(sizes)
