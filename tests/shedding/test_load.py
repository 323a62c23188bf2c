"""The broker load model: usage, weighted max, moving averages, normalisation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trimtab.config import Config
from trimtab.shedding import BrokerLoad, Limits, LoadModel, NodeSample, ResourceWeights
from trimtab.shedding.load import ema

SMALL = Limits(cores=8, memory_bytes=32e9, nic_bps=10e9)
BIG = Limits(cores=32, memory_bytes=128e9, nic_bps=25e9)


def sample(ts: float = 0.0, **usage: float) -> NodeSample:
    return NodeSample(ts=ts, **usage)


class TestMovingAverage:
    def test_first_sample_sets_the_average(self) -> None:
        """The first value is kept as it is, whatever the history weight."""
        assert ema(None, 0.7, 0.9) == 0.7

    def test_upstream_broker_load_data_numbers(self) -> None:
        """BrokerLoadDataTest, h = 0.75: throughput 3 then 11 gives 5; 2.0 then 1.5 gives 1.875."""
        model = LoadModel(history=0.75, weights=ResourceWeights(cpu=1.0), throughput_signal=False)
        limits = Limits(cores=1, memory_bytes=1, nic_bps=1e12)
        first = model.update(
            None,
            "b",
            sample(1, cpu=2.0, throughput_in_bytes_per_s=1, throughput_out_bytes_per_s=2),
            limits,
        )
        second = model.update(
            first,
            "b",
            sample(2, cpu=1.5, throughput_in_bytes_per_s=5, throughput_out_bytes_per_s=6),
            limits,
        )
        assert first.weighted_max_ema == 2.0 and first.msg_throughput_ema == 3.0
        assert second.msg_throughput_ema == pytest.approx(5.0)
        assert second.weighted_max_ema == pytest.approx(1.875)
        assert second.samples == 2 and second.updated_at == 2

    def test_fold_sorts_samples_by_time(self) -> None:
        """Samples given out of order are folded oldest first."""
        model = LoadModel(history=0.5, throughput_signal=False)
        load = model.fold("b", [sample(2, cpu=0.8), sample(1, cpu=0.0)], SMALL)
        assert load is not None
        assert load.weighted_max_ema == pytest.approx(0.4) and load.updated_at == 2

    def test_no_samples_no_load_data(self) -> None:
        """A broker that never reported has no load data."""
        assert LoadModel().fold("b", [], SMALL) is None

    def test_unknown_broker_looks_fully_loaded(self) -> None:
        """Upstream DEFAULT_RESOURCE_USAGE: load data built without a sample reads 1.0."""
        assert BrokerLoad(broker="b").load == 1.0


class TestWeightedMax:
    def test_upstream_default_weights_ignore_memory(self) -> None:
        """cpu, bandwidth in and out weigh 1; memory and direct memory 0 (upstream since 3.0)."""
        model = LoadModel.of(Config().shedding)
        usage = model.usage(sample(cpu=0.2, memory=0.9, direct_memory=0.95, net_in_bps=3e9), SMALL)
        assert model.weighted_max(usage) == pytest.approx(0.3)

    def test_message_throughput_counts_against_the_nic_and_is_capped(self) -> None:
        """PIP-220 lists msg throughput in the max: 8·bytes/s over the NIC, at most 1.0."""
        model = LoadModel()
        usage = model.usage(sample(throughput_out_bytes_per_s=1e9), SMALL)
        assert usage.throughput_out == pytest.approx(0.8)
        assert model.usage(sample(throughput_in_bytes_per_s=5e9), SMALL).throughput_in == 1.0
        assert LoadModel(throughput_signal=False).weighted_max(usage) == 0.0

    def test_loads_above_one_are_kept(self) -> None:
        """testLoadMoreThan100: a usage of 2.0 stays 2.0."""
        assert LoadModel().weighted_max(LoadModel().usage(sample(net_out_bps=20e9), SMALL)) == 2.0

    def test_threshold_shedder_drops_signals_above_one(self) -> None:
        """getMaxResourceUsageWithWeightWithinLimit: a misconfigured 300 % NIC is ignored."""
        load = BrokerLoad(broker="b", cpu=0.4, bandwidth_in=3.0)
        assert load.weighted_max_within_limit(ResourceWeights()) == pytest.approx(0.4)
        assert BrokerLoad(broker="b", cpu=0.4).weighted_max_within_limit(ResourceWeights()) == 0.4

    def test_within_limit_drops_weighted_values_not_raw_usages(self) -> None:
        """Upstream LocalBrokerDataTest.testMaxResourceUsage (all weights 0.5, memory 400 %):
        the weighted max is 2.0, within the limit 0.02. The rule looks at *weighted* values:
        a raw 150 % weighted 0.5 (75 %) is kept, a raw 90 % weighted 2 (180 %) is dropped."""
        half = ResourceWeights(
            cpu=0.5, memory=0.5, direct_memory=0.5, bandwidth_in=0.5, bandwidth_out=0.5
        )
        load = BrokerLoad(
            broker="b",
            cpu=0.01,
            memory=4.0,
            direct_memory=0.02,
            bandwidth_in=0.03,
            bandwidth_out=0.04,
        )
        assert load.weighted_max_within_limit(half) == pytest.approx(0.02)
        assert BrokerLoad(broker="b", cpu=1.5, memory=4.0).weighted_max_within_limit(
            half
        ) == pytest.approx(0.75)
        heavy = ResourceWeights(cpu=2.0)
        assert BrokerLoad(broker="b", cpu=0.9, bandwidth_in=0.3).weighted_max_within_limit(
            heavy
        ) == pytest.approx(0.3)

    def test_max_usage_leaves_memory_out(self) -> None:
        """maxResourceUsage (OverloadShedder) is max(cpu, direct memory, bandwidth)."""
        assert BrokerLoad(broker="b", cpu=0.3, memory=0.99, bandwidth_out=0.5).max_usage == 0.5


class TestNormalisation:
    @pytest.mark.parametrize(
        ("normalisation", "small", "big"),
        [
            pytest.param("capacity", 0.8, 0.8, id="capacity: each against its own NIC"),
            pytest.param("absolute", 0.32, 0.8, id="absolute: both against the 25 Gb/s reference"),
        ],
    )
    def test_full_nics_of_different_speeds(
        self, normalisation: str, small: float, big: float
    ) -> None:
        """Two brokers at 80 % of their NIC: equal relative loads, unequal absolute ones."""
        model = LoadModel(normalisation=normalisation)
        reference = Limits.reference([SMALL, BIG])
        got_small = model.weighted_max(model.usage(sample(net_out_bps=8e9), SMALL, reference))
        got_big = model.weighted_max(model.usage(sample(net_out_bps=20e9), BIG, reference))
        assert (got_small, got_big) == pytest.approx((small, big))

    def test_absolute_cpu_scales_by_cores(self) -> None:
        """50 % of 8 cores is 12.5 % of the 32-core reference."""
        model = LoadModel(normalisation="absolute")
        usage = model.usage(sample(cpu=0.5), SMALL, Limits.reference([SMALL, BIG]))
        assert usage.cpu == pytest.approx(0.125)

    def test_absolute_needs_a_reference(self) -> None:
        """Without the cluster's reference limits the absolute load is undefined."""
        with pytest.raises(ValueError, match="reference"):
            LoadModel(normalisation="absolute").usage(sample(cpu=0.5), SMALL)

    def test_bad_normalisation_is_refused(self) -> None:
        """Only capacity and absolute exist."""
        with pytest.raises(ValueError, match="normalisation"):
            LoadModel(normalisation="relative")

    def test_capacity_of_a_broker_is_its_nic_in_bytes(self) -> None:
        """Load data carries the NIC in bytes/s for predictions."""
        load = LoadModel().update(None, "b", sample(cpu=0.1), SMALL)
        assert load.capacity_bytes_per_s == 10e9 / 8

    def test_config_names_reach_the_model(self) -> None:
        """Upstream keys set weights, history and normalisation."""
        cfg = Config.of(
            loadBalancerCPUResourceWeight=0.5,
            loadBalancerHistoryResourcePercentage=0.5,
            load_normalisation="absolute",
        ).shedding
        model = LoadModel.of(cfg)
        assert (model.weights.cpu, model.history, model.normalisation) == (0.5, 0.5, "absolute")


_FRACTION = st.floats(min_value=0.0, max_value=1.5, allow_nan=False)
_RATE = st.floats(min_value=0.0, max_value=1e10, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            _FRACTION,
            _FRACTION,
            _FRACTION,
            _RATE,
            _RATE,
            _RATE,
            _RATE,
            st.sampled_from([8, 16, 32]),
            st.sampled_from([0, 10**10, 25 * 10**9]),
        ),
        min_size=1,
        max_size=12,
    ),
    normalisation=st.sampled_from(["capacity", "absolute"]),
    throughput_signal=st.booleans(),
)
def test_array_form_equals_the_scalar_form(rows, normalisation, throughput_signal) -> None:
    """weighted_max_array gives, sample by sample, what usage + weighted_max give."""
    model = LoadModel(normalisation=normalisation, throughput_signal=throughput_signal)
    names = (
        "cpu",
        "memory",
        "direct_memory",
        "net_in_bps",
        "net_out_bps",
        "throughput_in_bytes_per_s",
        "throughput_out_bytes_per_s",
    )
    limits = [Limits(cores=r[7], memory_bytes=2**35 * r[7], nic_bps=r[8]) for r in rows]
    reference: Limits | None = Limits.reference(limits) if normalisation == "absolute" else None
    columns = {n: np.array([r[i] for r in rows], dtype=float) for i, n in enumerate(names)}
    got = model.weighted_max_array(
        columns,
        cores=np.array([x.cores for x in limits], dtype=float),
        memory_bytes=np.array([x.memory_bytes for x in limits], dtype=float),
        nic_bps=np.array([x.nic_bps for x in limits], dtype=float),
        reference=reference,
    )
    for i, (row, lim) in enumerate(zip(rows, limits, strict=True)):
        sample = NodeSample(ts=0.0, **{n: row[j] for j, n in enumerate(names)})
        want = model.weighted_max(model.usage(sample, lim, reference))
        assert got[i] == pytest.approx(want, rel=1e-12, abs=1e-15)
