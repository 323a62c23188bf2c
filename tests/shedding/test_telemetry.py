"""One path from validated telemetry to a snapshot, and the plan's record of each cycle."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import shedding_snapshots
from trimtab.config import Config
from trimtab.shedding import (
    BrokerTelemetry,
    Bundle,
    BundleLoads,
    Folded,
    Limits,
    LoadModel,
    LoadStats,
    NodeSample,
    plan,
    shedder_for,
    shift,
    snapshot_of,
)
from trimtab.shedding.telemetry import fold, fold_columns

SMALL = Limits(cores=8, memory_bytes=32 * 2**30, nic_bps=1e10)
LARGE = Limits(cores=16, memory_bytes=64 * 2**30, nic_bps=2.5e10)
SAMPLE_FIELDS = tuple(f.name for f in dataclasses.fields(NodeSample) if f.name != "ts")
FIELDS = ("cpu", "net_in_bps", "net_out_bps", "throughput_in_bytes_per_s")

samples = st.lists(
    st.tuples(
        st.integers(0, 10_000),
        st.floats(0.0, 1.2),
        st.floats(0.0, 2e10),
        st.floats(0.0, 2e10),
        st.floats(0.0, 3e9),
    ),
    min_size=1,
    max_size=12,
)


def as_samples(rows: list[tuple[Any, ...]]) -> list[NodeSample]:
    return [NodeSample(ts=float(r[0]), **dict(zip(FIELDS, r[1:], strict=True))) for r in rows]


class TestFoldColumns:
    @settings(max_examples=60, deadline=None)
    @given(
        small=samples,
        large=samples,
        normalisation=st.sampled_from(("capacity", "absolute")),
        history=st.sampled_from((0.0, 0.5, 0.9, 1.0)),
    )
    def test_column_wise_fold_ends_where_the_row_wise_fold_ends(
        self,
        small: list[tuple[Any, ...]],
        large: list[tuple[Any, ...]],
        normalisation: str,
        history: float,
    ) -> None:
        """Each broker's last row is LoadModel.fold's load data over its samples."""
        model = LoadModel(normalisation=normalisation, history=history)
        reference = Limits.reference([SMALL, LARGE])
        per_broker = {0: sorted(as_samples(small), key=lambda s: s.ts)}
        per_broker[1] = sorted(as_samples(large), key=lambda s: s.ts)
        rows = [(b, s) for b, items in per_broker.items() for s in items]
        groups = np.array([b for b, _ in rows])
        limits = [SMALL, LARGE]
        columns = {
            name: np.array([getattr(s, name) for _, s in rows], dtype=float)
            for name in SAMPLE_FIELDS
        }
        got = fold_columns(
            model,
            columns,
            groups,
            cores=np.array([limits[b].cores for b in groups]),
            memory_bytes=np.array([limits[b].memory_bytes for b in groups]),
            nic_bps=np.array([limits[b].nic_bps for b in groups]),
            reference=reference,
        )
        for b, items in per_broker.items():
            last = int(np.flatnonzero(groups == b)[-1])
            want = model.fold("x", items, limits[b], reference)
            assert want is not None
            assert got["load"][last] == pytest.approx(want.weighted_max_ema, rel=1e-9, abs=1e-12)
            assert got["msg_throughput_ema"][last] == pytest.approx(
                want.msg_throughput_ema, rel=1e-9
            )
            assert got["weighted_max"][last] == pytest.approx(want.weighted_max, rel=1e-12)


class TestSnapshotOf:
    @settings(max_examples=40, deadline=None)
    @given(small=samples, large=samples)
    def test_folded_brokers_give_the_folds_load_data(
        self, small: list[tuple[Any, ...]], large: list[tuple[Any, ...]]
    ) -> None:
        """A broker handed over folded has exactly LoadModel.fold's load data."""
        model = LoadModel(normalisation="absolute", history=0.75)
        reference = Limits.reference([SMALL, LARGE])
        history = {"a:8080": (as_samples(small), SMALL), "b:8080": (as_samples(large), LARGE)}
        brokers = [
            BrokerTelemetry(node=n, limits=lim, folded=fold(model, items, lim, reference))
            for n, (items, lim) in history.items()
        ]
        built = snapshot_of(brokers, BundleLoads.of([]), model)
        for node, (items, lim) in history.items():
            assert built.snapshot.loads[node] == model.fold(node, items, lim, reference)
        assert built.now == max(s.ts for items, _ in history.values() for s in items)

    def test_down_and_silent_brokers(self) -> None:
        """A down or read-only broker takes no bundles; one that never reported takes them
        without load data, and its limits still count for the reference."""
        last = NodeSample(ts=50.0, cpu=0.5)
        folded = Folded(last=last, weighted_max_ema=0.4, msg_throughput_ema=0.0, samples=3)
        brokers = [
            BrokerTelemetry(node="a", limits=SMALL, folded=folded),
            BrokerTelemetry(node="b", limits=LARGE),
            BrokerTelemetry(node="c", limits=SMALL, writable=False, folded=folded),
        ]
        bundles = BundleLoads.of([Bundle(name="ns/0x0_0x1", broker="a", throughput_in=1.0)])
        built = snapshot_of(brokers, bundles, LoadModel(), bundle_times=[80.0])
        assert built.snapshot.available == frozenset({"a", "b"})
        assert set(built.snapshot.loads) == {"a", "c"}
        assert built.snapshot.loads["a"].samples == 3
        assert built.snapshot.loads["a"].load == 0.4
        assert built.snapshot.loads["a"].updated_at == 50.0
        assert built.now == 80.0

    def test_a_bundle_not_reported_within_the_load_data_ttl_is_left_out(self) -> None:
        """A bundle whose newest sample is older than the newest sample by more than the TTL
        is gone (moved, split or deleted): left out, as upstream's shedder never sees a bundle
        its broker no longer reports. At the TTL exactly it stays (upstream's ``>``)."""
        last = NodeSample(ts=2000.0, cpu=0.5)
        folded = Folded(last=last, weighted_max_ema=0.4, msg_throughput_ema=0.0, samples=3)
        brokers = [
            BrokerTelemetry(node="a", limits=SMALL, folded=folded),
            BrokerTelemetry(node="b", limits=LARGE, folded=folded),
        ]
        bundles = BundleLoads.of(
            [
                Bundle(name="t/n/0x0_0x4", broker="a", throughput_in=1.0),
                Bundle(name="t/n/0x4_0x8", broker="b", throughput_in=2.0),
                Bundle(name="t/n/0x8_0xc", broker="a", throughput_in=3.0),
                Bundle(name="t/n/0xc_0xf", broker="b", throughput_in=4.0),
            ]
        )
        times = [2000.0, 199.0, 200.0, 1900.0]
        built = snapshot_of(brokers, bundles, LoadModel(), bundle_times=times, stale_after_s=1800)
        kept = built.snapshot.bundles
        assert built.left_out == ("t/n/0x4_0x8",)
        assert kept.names == ("t/n/0x0_0x4", "t/n/0x8_0xc", "t/n/0xc_0xf")
        assert [kept.broker_of(i) for i in range(3)] == ["a", "a", "b"]
        assert kept.throughput_in.tolist() == [1.0, 3.0, 4.0]
        assert built.now == 2000.0
        everything = snapshot_of(brokers, bundles, LoadModel(), bundle_times=times)
        assert len(everything.snapshot.bundles) == 4 and not everything.left_out
        with pytest.raises(ValueError, match="3 bundle times for 4 bundles"):
            snapshot_of(brokers, bundles, LoadModel(), bundle_times=times[:3])

    def test_no_telemetry_is_an_empty_snapshot_at_zero(self) -> None:
        """Nothing reported: no loads, time 0 (no wall clock)."""
        built = snapshot_of([], BundleLoads.of([]), LoadModel())
        assert built.now == 0.0 and not built.snapshot.loads


class TestPlanRecordsEachCycle:
    @settings(max_examples=30, deadline=None)
    @given(
        snapshot=shedding_snapshots(),
        strategy=st.sampled_from(("transfer", "balanced", "threshold")),
    )
    def test_settled_loads_are_the_moves_shifted_cycle_by_cycle(
        self, snapshot: Any, strategy: str
    ) -> None:
        """Plan.settled is the start shifted by each cycle's moves; the last is loads_after,
        and each cycle's std before is the previous cycle's after."""
        config = Config.of(strategy=strategy).shedding
        result = plan(snapshot, shedder_for(config), now=10_000.0, cycles=4)
        assert len(result.settled) == len(result.results)
        loads = dict(result.loads_before)
        for outcome, settled in zip(result.results, result.settled, strict=True):
            loads = shift(loads, outcome.moves, result.ratios)
            assert settled.loads == loads
            assert settled.std == LoadStats.of(loads.values()).std
        assert result.settled[-1].loads == result.loads_after
        stds = result.cycle_stds
        assert stds[0][0] == result.std_before and stds[-1][1] == result.std_after
        assert all(a[1] == b[0] for a, b in itertools.pairwise(stds))
