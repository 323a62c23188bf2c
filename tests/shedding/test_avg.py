"""AvgShedder (PIP-364): upstream's ``AvgShedderTest``, its rules on hand-made clusters, and the
two cases its author published (a 4-broker pair at 63 % vs 38.5 % settled by one unload; a
5 → 10 broker scale-up).

Clusters here are made of bundles with a message rate each; a broker's score is its rate over
its capacity (msg/s at 100 %), so moving a bundle moves score the way the rates say.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import pytest

from tests.shedding.upstream import NOW
from trimtab.config import Config, SheddingConfig
from trimtab.shedding import (
    AvgShedder,
    BrokerLoad,
    Bundle,
    CycleResult,
    LoadSnapshot,
    Reason,
    ShedderState,
    plan,
    shedder_for,
)
from trimtab.shedding.avg import pairs_of

#: msg/s of a broker of size 1 at 100 %.
FULL = 100_000.0
#: bytes per message, so that throughput follows the rate.
SIZE = 1_000.0


def config(**keys: object) -> SheddingConfig:
    return Config.of(**({"loadBalancerLoadSheddingStrategy": "avg"} | keys)).shedding


def broker(
    name: str, cpu: float, rate: float, throughput: float = 0.0, capacity: float | None = None
) -> BrokerLoad:
    """Upstream's fixture: cpu as a fraction, msg rate in + out split evenly."""
    return BrokerLoad(
        broker=name,
        cpu=cpu,
        msg_rate_in=rate / 2,
        msg_rate_out=rate / 2,
        msg_throughput_in=throughput / 2,
        msg_throughput_out=throughput / 2,
        weighted_max=cpu,
        weighted_max_ema=cpu,
        msg_throughput_ema=throughput,
        updated_at=NOW,
        samples=1,
        capacity_bytes_per_s=capacity,
    )


def cluster(
    bundles: Mapping[str, Sequence[float]], size: Mapping[str, float] | None = None
) -> LoadSnapshot:
    """Brokers owning bundles of the given msg rates; score = rate / (FULL × size)."""
    loads, rows = [], []
    for name, rates in bundles.items():
        total, scale = sum(rates), (size or {}).get(name, 1.0)
        loads.append(broker(name, total / (FULL * scale), total, total * SIZE, FULL * SIZE * scale))
        rows += [
            Bundle(
                name=f"t/{name}/0x{k:08x}_0x{k + 1:08x}",
                broker=name,
                msg_rate_in=r,
                throughput_in=r * SIZE,
            )
            for k, r in enumerate(rates)
        ]
    return LoadSnapshot.of(loads, rows)


def applied(snap: LoadSnapshot, result: CycleResult, size: Mapping[str, float]) -> LoadSnapshot:
    """The cluster after the moves, every broker reporting its new rate."""
    owner = {m.bundle: m.destination for m in result.moves}
    table = snap.bundles
    bundles: dict[str, list[float]] = {b: [] for b in snap.loads}
    for i, name in enumerate(table.names):
        bundles[owner.get(name) or table.broker_of(i)].append(float(table.msg_rate[i]))
    return cluster(bundles, size)


def run(
    snap: LoadSnapshot, cfg: SheddingConfig, cycles: int, size: Mapping[str, float] | None = None
) -> list[CycleResult]:
    """``cycles`` cycles a minute apart, applying each cycle's moves."""
    shedder, state, results = AvgShedder(cfg), ShedderState(), []
    sizes = size or {}
    for k in range(cycles):
        result = shedder.cycle(snap, state, now=NOW + 60 * k)
        results.append(result)
        state = result.state
        snap = applied(snap, result, sizes)
        snap = LoadSnapshot.of(
            [_at(b, NOW + 60 * (k + 1)) for b in snap.loads.values()], snap.bundles
        )
    return results


def _at(load: BrokerLoad, ts: float) -> BrokerLoad:
    return replace(load, updated_at=ts)


# --- upstream AvgShedderTest ------------------------------------------------------------------


def upstream_cluster(cpu1: float, cpu2: float) -> LoadSnapshot:
    """The upstream fixture: broker1 owns eleven 900 msg/s bundles; broker3 is in the middle."""
    loads = [
        broker("broker1", cpu1, 20_000),
        broker("broker2", cpu2, 2_000),
        broker("broker3", 0.50, 10_000),
    ]
    bundles = [
        Bundle(name=f"bundle-{i}", broker="broker1", msg_rate_in=450, msg_rate_out=450)
        for i in range(11)
    ]
    return LoadSnapshot.of(loads, bundles)


class TestAvgShedderTest:
    """Upstream's ``AvgShedderTest``, with ``maxUnloadPercentage`` 0.5 as it sets it."""

    def test_testHitHighThreshold(self) -> None:  # noqa: N802 (upstream name)
        cfg = config(
            maxUnloadPercentage=0.5,
            loadBalancerAvgShedderHighThreshold=40,
            loadBalancerAvgShedderHitCountHighThreshold=2,
        )
        snap, shedder = upstream_cluster(0.80, 0.30), AvgShedder(cfg)
        first = shedder.cycle(snap, ShedderState(), now=NOW)
        assert first.moves == ()
        second = shedder.cycle(snap, first.state, now=NOW)
        assert len(second.moves) == 10
        assert {m.source for m in second.moves} == {"broker1"}
        assert {m.destination for m in second.moves} == {"broker2"}

    def test_testHitLowThreshold(self) -> None:  # noqa: N802 (upstream name)
        cfg = config(
            maxUnloadPercentage=0.5,
            loadBalancerAvgShedderLowThreshold=20,
            loadBalancerAvgShedderHitCountLowThreshold=6,
        )
        snap, shedder, state = upstream_cluster(0.60, 0.40), AvgShedder(cfg), ShedderState()
        for _ in range(6 - 1):
            result = shedder.cycle(snap, state, now=NOW)
            assert result.moves == ()
            state = result.state
        last = shedder.cycle(snap, state, now=NOW)
        assert len(last.moves) == 10
        assert {(m.source, m.destination) for m in last.moves} == {("broker1", "broker2")}

    def test_testSheddingMultiplePairs(self) -> None:  # noqa: N802 (upstream name)
        cfg = config(
            maxUnloadPercentage=0.5,
            loadBalancerAvgShedderHighThreshold=40,
            loadBalancerAvgShedderHitCountHighThreshold=2,
        )
        loads = [
            broker("broker1", 0.80, 20_000),
            broker("broker2", 0.30, 2_000),
            broker("broker3", 0.75, 20_000),
            broker("broker4", 0.35, 2_000),
        ]
        bundles = [
            Bundle(name=f"bundle{owner[-1]}-{i}", broker=owner, msg_rate_in=450, msg_rate_out=450)
            for owner in ("broker1", "broker3")
            for i in range(11)
        ]
        snap, shedder = LoadSnapshot.of(loads, bundles), AvgShedder(cfg)
        first = shedder.cycle(snap, ShedderState(), now=NOW)
        assert first.moves == ()
        moves = shedder.cycle(snap, first.state, now=NOW).moves
        assert len(moves) == 20
        assert sum(m.source == "broker1" for m in moves) == 10
        assert sum(m.source == "broker3" for m in moves) == 10
        for m in moves:
            expected = "broker2" if m.bundle.startswith("bundle1-") else "broker4"
            assert m.destination == expected


# --- the rules on hand-made clusters ------------------------------------------------------------


def test_pairs_are_made_outside_in_and_an_odd_middle_pairs_with_itself() -> None:
    pairs = pairs_of([10.0, 90.0, 50.0, 20.0, 70.0])
    assert [(p.low, p.high, p.gap) for p in pairs] == [(0, 1, 80.0), (3, 4, 50.0), (2, 2, 0.0)]


def test_hits_are_counted_per_broker_and_a_close_pair_resets_them() -> None:
    """Gap 20: a hit each cycle, no high hit; once the pair is under 15 apart its counts go."""
    cfg = config()
    shedder = AvgShedder(cfg)
    apart = cluster({"a": [30_000], "b": [50_000]})
    state = ShedderState()
    for k in range(1, 4):
        state = shedder.cycle(apart, state, now=NOW).state
        assert dict(state.hits_low) == {"a": k, "b": k}
        assert dict(state.hits_high) == {}
        assert state.hit_count == k
    close = cluster({"a": [40_000], "b": [50_000]})
    state = shedder.cycle(close, state, now=NOW).state
    assert dict(state.hits_low) == {} and state.hit_count == 0


def test_a_high_hit_count_resets_when_the_gap_drops_below_the_high_threshold() -> None:
    shedder = AvgShedder(config(loadBalancerAvgShedderHitCountHighThreshold=3))
    wide = cluster({"a": [10_000, 10_000], "b": [60_000, 10_000]})
    state = shedder.cycle(wide, ShedderState(), now=NOW).state
    assert dict(state.hits_high) == {"a": 1, "b": 1}
    narrower = cluster({"a": [20_000, 10_000], "b": [50_000, 10_000]})  # 30 points apart
    state = shedder.cycle(narrower, state, now=NOW).state
    assert dict(state.hits_high) == {}
    assert dict(state.hits_low) == {"a": 2, "b": 2}


def test_eight_hits_unload_and_reset_both_counts() -> None:
    cfg = config(maxUnloadPercentage=0.5)
    snap = cluster({"a": [5_000] * 6, "b": [5_000] * 12})  # 30 % vs 60 %
    state, shedder = ShedderState(), AvgShedder(cfg)
    for _ in range(7):
        result = shedder.cycle(snap, state, now=NOW)
        assert result.moves == ()
        assert result.outcome.reason is Reason.HIT_COUNT
        state = result.state
    result = shedder.cycle(snap, state, now=NOW)
    # (60,000 − 30,000) × 0.5 = 15,000 msg/s: three 5,000 bundles, to the fixed destination
    assert [(m.source, m.destination) for m in result.moves] == [("b", "a")] * 3
    assert dict(result.state.hits_low) == {} and result.state.hit_count == 0


def test_bundles_are_taken_largest_first_while_they_fit() -> None:
    """Amount 26,000 msg/s: 30,000 does not fit, 20,000 does, 8,000 no longer, 4,000 does."""
    cfg = config(maxUnloadPercentage=0.5, loadBalancerAvgShedderHitCountHighThreshold=1)
    snap = cluster({"low": [0.0, 10_000], "high": [30_000, 20_000, 8_000, 4_000, 0.0]})
    result = AvgShedder(cfg).cycle(snap, ShedderState(), now=NOW)
    moved = {m.bundle for m in result.moves}
    assert moved == {"t/high/0x00000001_0x00000002", "t/high/0x00000003_0x00000004"}


def test_sizing_falls_back_to_throughput_then_to_nothing() -> None:
    """Rates too close: the throughput gap decides; both too close: a NoBundles skip."""
    cfg = config(maxUnloadPercentage=0.5, loadBalancerAvgShedderHitCountHighThreshold=1)
    mb = 1024 * 1024
    loads = [broker("a", 0.10, 0.0, 2 * mb), broker("b", 0.90, 1_000, 10 * mb)]
    bundles = [
        Bundle(name=f"t/b/{k}", broker="b", throughput_in=x, msg_rate_in=100)
        for k, x in enumerate((5 * mb, 3 * mb, 1 * mb, 1 * mb))
    ]
    result = AvgShedder(cfg).cycle(LoadSnapshot.of(loads, bundles), ShedderState(), now=NOW)
    # 4 MB/s to move: the 3 MB/s bundle, then a 1 MB/s one
    assert sorted(m.throughput for m in result.moves) == [1 * mb, 3 * mb]
    quiet = [broker("a", 0.10, 0.0, 9 * mb), broker("b", 0.90, 1_000, 10 * mb)]
    idle = AvgShedder(cfg).cycle(LoadSnapshot.of(quiet, bundles), ShedderState(), now=NOW)
    assert idle.moves == ()
    assert any("minUnloadMessageThroughput" in d.note for d in idle.decisions)


def test_brokers_of_different_sizes_are_pushed_to_equal_traffic() -> None:
    """Its author's heterogeneous case: a 4× broker at 20 % carries more msg/s than a 1× broker
    at 60 %, so the rate gap is negative and nothing moves, whatever the score gap."""
    size = {"big": 4.0, "small": 1.0}
    snap = cluster({"big": [10_000] * 8, "small": [10_000] * 6}, size)
    assert snap.loads["big"].weighted_max == pytest.approx(0.2)
    results = run(snap, config(maxUnloadPercentage=0.5), 20, size)
    assert all(r.moves == () for r in results)
    cfg = config(loadBalancerBrokerLoadTargetStd=0.1)
    balanced = plan(snap, shedder_for(cfg, "balanced"), now=NOW, until_balanced=True)
    assert balanced.std_after < balanced.std_before / 2


# --- the published cases ----------------------------------------------------------------------


def test_published_four_broker_case_is_settled_by_one_unload() -> None:
    """63 % vs 38.5 % (two brokers at 50 % between them): a low hit each cycle, one unload of
    half the rate gap on the eighth, then no pair is 15 points apart again."""
    snap = cluster(
        {
            "b1": [12_000] + [1_000] * 51,
            "b2": [38_500],
            "b3": [50_000],
            "b4": [50_000],
        }
    )
    assert [round(100 * b.weighted_max, 1) for b in snap.loads.values()] == [63, 38.5, 50, 50]
    results = run(snap, config(maxUnloadPercentage=0.5), 60)
    moved = [(k, m) for k, r in enumerate(results, start=1) for m in r.moves]
    assert len(moved) == 1
    cycle, move = moved[0]
    assert cycle == 8 and (move.source, move.destination) == ("b1", "b2")
    assert move.bundle.endswith("0x00000000_0x00000001")
    assert results[-1].outcome.reason is Reason.HIT_COUNT
    assert results[-1].state.hit_count == 0


def test_published_scale_up_from_five_to_ten_brokers() -> None:
    """Five brokers at 80 % and five new empty ones: five high-hit pairs, all unloaded on the
    second cycle to distinct new brokers, and the cluster stays put afterwards."""
    old = {f"old{k}": [4_000.0] * 20 for k in range(5)}
    new: dict[str, list[float]] = {f"new{k}": [] for k in range(5)}
    results = run(cluster({**old, **new}), config(maxUnloadPercentage=0.5), 30)
    assert results[0].moves == ()
    second = results[1].moves
    pairs = {(m.source, m.destination) for m in second}
    assert len(pairs) == 5 and len({d for _, d in pairs}) == 5
    assert {s for s, _ in pairs} == set(old)
    assert all(r.moves == () for r in results[2:])
    assert all(len([m for m in second if m.source == s]) == 10 for s in old)
