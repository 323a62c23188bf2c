"""The broker load model: per-resource usage, the weighted max, and its moving averages.

Goals
    One number per broker that says how busy it is, comparable across brokers that are not
    alike, computed the way Pulsar's ``BrokerLoadData`` computes it so that upstream settings
    and test numbers carry over.

Constraints
    * Usages are fractions (1.0 = 100 %) and may exceed 1.0 (upstream ``testLoadMoreThan100``).
    * The first sample sets a moving average directly; later ones blend with weight
      ``h = loadBalancerHistoryResourcePercentage`` (0.9): ``ema = h·ema + (1 − h)·x``.
    * Pure: no clock, no I/O. A sample carries its own timestamp.

Algorithm
    1. **Usage** of each resource. ``capacity`` normalisation (the default) divides by the
       broker's *own* limits: ``cpu``/``memory``/``direct_memory`` are already fractions of its
       own cores and memory, bandwidth is ``net_bps / nic_bps``, message throughput is
       ``8·bytes_per_s / nic_bps`` (capped at 1.0, as upstream's extended network signal).
       ``absolute`` normalisation divides by a cluster-wide *reference* broker (the largest
       limits in the cluster) instead, so a full 10 Gb/s broker next to 25 Gb/s ones reads 0.4:
       the comparison point, and what rate-based shedders implicitly do.
    2. **Weighted max** = max(cpu·w_cpu, memory·w_mem, direct_memory·w_dmem, bw_in·w_in,
       bw_out·w_out, and, unless disabled, throughput_in·w_in, throughput_out·w_out). The
       upstream weights are 1, 0, 0, 1, 1.
    3. **weighted_max_ema** and **msg_throughput_ema** (of throughput in + out, bytes/s) fold
       successive samples with ``h``; ``samples`` counts the samples folded in.

Worked example (upstream ``BrokerLoadDataTest``, h = 0.75): throughput 3 then 11 gives
``0.75·3 + 0.25·11 = 5``; weighted max 2.0 then 1.5 gives ``1.875``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from trimtab.cluster import Capacity
from trimtab.config.pulsar import SheddingConfig

__all__ = [
    "BrokerLoad",
    "Limits",
    "LoadModel",
    "NodeSample",
    "ResourceWeights",
    "Usage",
    "ema",
]


def ema(previous: float | None, value: float, history: float) -> float:
    """``history·previous + (1 − history)·value``; a first value (no ``previous``) is kept."""
    if previous is None:
        return value
    return history * previous + (1.0 - history) * value


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceWeights:
    """The ``loadBalancer*ResourceWeight`` settings (upstream defaults)."""

    cpu: float = 1.0
    memory: float = 0.0
    direct_memory: float = 0.0
    bandwidth_in: float = 1.0
    bandwidth_out: float = 1.0

    @classmethod
    def of(cls, config: SheddingConfig) -> ResourceWeights:
        return cls(
            cpu=config.cpu_weight,
            memory=config.memory_weight,
            direct_memory=config.direct_memory_weight,
            bandwidth_in=config.bandwidth_in_weight,
            bandwidth_out=config.bandwidth_out_weight,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeSample:
    """One ``node_metrics`` row: what a broker measured at ``ts`` (seconds since the epoch).

    ``cpu``, ``memory`` and ``direct_memory`` are fractions of the broker's own limits;
    ``net_*_bps`` are bits per second; throughputs are bytes per second.
    """

    ts: float
    cpu: float = 0.0
    memory: float = 0.0
    direct_memory: float = 0.0
    net_in_bps: float = 0.0
    net_out_bps: float = 0.0
    msg_in_per_s: float = 0.0
    msg_out_per_s: float = 0.0
    throughput_in_bytes_per_s: float = 0.0
    throughput_out_bytes_per_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """What a broker has, for normalising its usage (from the inventory's ``Capacity``)."""

    cores: float
    memory_bytes: float
    nic_bps: float

    @classmethod
    def of(cls, capacity: Capacity) -> Limits:
        return cls(
            cores=capacity.cores, memory_bytes=capacity.memory_bytes, nic_bps=capacity.nic_bps
        )

    @classmethod
    def reference(cls, limits: Iterable[Limits]) -> Limits:
        """The cluster's reference broker for ``absolute`` load: the largest of each limit."""
        items = list(limits)
        if not items:
            raise ValueError("a reference needs at least one broker's limits")
        return cls(
            cores=max(x.cores for x in items),
            memory_bytes=max(x.memory_bytes for x in items),
            nic_bps=max(x.nic_bps for x in items),
        )

    @property
    def nic_bytes_per_s(self) -> float:
        return self.nic_bps / 8.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Usage fractions of one sample after normalisation (1.0 = the limit)."""

    cpu: float = 0.0
    memory: float = 0.0
    direct_memory: float = 0.0
    bandwidth_in: float = 0.0
    bandwidth_out: float = 0.0
    throughput_in: float = 0.0
    throughput_out: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerLoad:
    """A broker's load data as the shedders read it (Pulsar's ``BrokerLoadData``).

    ``weighted_max_ema`` is *the* load of the TransferShedder. ``capacity_bytes_per_s`` (the
    NIC in bytes/s, or ``None`` when unknown) lets a shedder predict what a move does to a
    broker of another size. ``updated_at`` is 0 for a broker that never reported.
    """

    broker: str
    cpu: float = 0.0
    memory: float = 0.0
    direct_memory: float = 0.0
    bandwidth_in: float = 0.0
    bandwidth_out: float = 0.0
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    weighted_max: float = 0.0
    weighted_max_ema: float = 1.0  # upstream DEFAULT_RESOURCE_USAGE: unknown looks full
    msg_throughput_ema: float = 0.0
    updated_at: float = 0.0
    samples: int = 0
    capacity_bytes_per_s: float | None = None

    @property
    def load(self) -> float:
        """The smoothed weighted max, the signal the TransferShedder balances."""
        return self.weighted_max_ema

    @property
    def throughput(self) -> float:
        """Message throughput in + out, bytes/s."""
        return self.msg_throughput_in + self.msg_throughput_out

    @property
    def msg_rate(self) -> float:
        return self.msg_rate_in + self.msg_rate_out

    @property
    def max_usage(self) -> float:
        """Unweighted max of cpu, direct memory and bandwidth (upstream leaves memory out)."""
        return max(self.cpu, self.direct_memory, self.bandwidth_in, self.bandwidth_out)

    def weighted_max_within_limit(self, weights: ResourceWeights) -> float:
        """ThresholdShedder's rule: a weighted max above 1.0 is recomputed from the *weighted*
        signals at most 1.0 (upstream ``getMaxResourceUsageWithWeightWithinLimit``); the
        others are taken as misconfigured limits."""
        signals = self._weighted_signals(weights)
        top = max(signals)
        if top <= 1.0:
            return top
        return max((w for w in signals if w <= 1.0), default=0.0)

    def _weighted_signals(self, w: ResourceWeights) -> tuple[float, ...]:
        return (
            self.cpu * w.cpu,
            self.memory * w.memory,
            self.direct_memory * w.direct_memory,
            self.bandwidth_in * w.bandwidth_in,
            self.bandwidth_out * w.bandwidth_out,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadModel:
    """Turns samples into :class:`BrokerLoad` values: normalise, weigh, smooth."""

    weights: ResourceWeights = ResourceWeights()
    history: float = 0.9
    normalisation: str = "capacity"
    throughput_signal: bool = True

    def __post_init__(self) -> None:
        if self.normalisation not in ("capacity", "absolute"):
            raise ValueError(
                f"normalisation must be capacity or absolute, not {self.normalisation!r}"
            )
        if not 0.0 <= self.history <= 1.0:
            raise ValueError(f"history must lie in 0..1, got {self.history}")

    @classmethod
    def of(cls, config: SheddingConfig) -> LoadModel:
        return cls(
            weights=ResourceWeights.of(config),
            history=config.history_resource_percentage,
            normalisation=config.load_normalisation,
            throughput_signal=config.throughput_signal,
        )

    def usage(self, sample: NodeSample, limits: Limits, reference: Limits | None = None) -> Usage:
        """Usage fractions of ``sample``; ``reference`` is required for ``absolute``."""
        if self.normalisation == "absolute":
            if reference is None:
                raise ValueError("absolute load needs the cluster's reference limits")
            scale_cpu = limits.cores / reference.cores if reference.cores else 0.0
            scale_mem = (
                limits.memory_bytes / reference.memory_bytes if reference.memory_bytes else 0.0
            )
            nic = reference.nic_bps
        else:
            scale_cpu = scale_mem = 1.0
            nic = limits.nic_bps
        return Usage(
            cpu=sample.cpu * scale_cpu,
            memory=sample.memory * scale_mem,
            direct_memory=sample.direct_memory * scale_mem,
            bandwidth_in=_share(sample.net_in_bps, nic),
            bandwidth_out=_share(sample.net_out_bps, nic),
            throughput_in=min(1.0, _share(8.0 * sample.throughput_in_bytes_per_s, nic)),
            throughput_out=min(1.0, _share(8.0 * sample.throughput_out_bytes_per_s, nic)),
        )

    def weighted_max(self, usage: Usage) -> float:
        w = self.weights
        signals = [
            usage.cpu * w.cpu,
            usage.memory * w.memory,
            usage.direct_memory * w.direct_memory,
            usage.bandwidth_in * w.bandwidth_in,
            usage.bandwidth_out * w.bandwidth_out,
        ]
        if self.throughput_signal:
            signals += [
                usage.throughput_in * w.bandwidth_in,
                usage.throughput_out * w.bandwidth_out,
            ]
        return max(signals)

    def update(
        self,
        previous: BrokerLoad | None,
        broker: str,
        sample: NodeSample,
        limits: Limits,
        reference: Limits | None = None,
    ) -> BrokerLoad:
        """Fold one sample into a broker's load data (``previous`` None = first sample)."""
        usage = self.usage(sample, limits, reference)
        weighted = self.weighted_max(usage)
        # two rates near the float limit add up to inf: kept at the limit, as the pipeline does
        throughput = min(
            sample.throughput_in_bytes_per_s + sample.throughput_out_bytes_per_s, sys.float_info.max
        )
        first = previous is None or previous.samples == 0
        load = BrokerLoad(
            broker=broker,
            cpu=usage.cpu,
            memory=usage.memory,
            direct_memory=usage.direct_memory,
            bandwidth_in=usage.bandwidth_in,
            bandwidth_out=usage.bandwidth_out,
            msg_throughput_in=sample.throughput_in_bytes_per_s,
            msg_throughput_out=sample.throughput_out_bytes_per_s,
            msg_rate_in=sample.msg_in_per_s,
            msg_rate_out=sample.msg_out_per_s,
            weighted_max=weighted,
            weighted_max_ema=weighted,
            msg_throughput_ema=throughput,
            updated_at=sample.ts,
            samples=1,
            capacity_bytes_per_s=self._capacity(limits, reference),
        )
        if first or previous is None:
            return load
        return replace(
            load,
            weighted_max_ema=ema(previous.weighted_max_ema, weighted, self.history),
            msg_throughput_ema=ema(previous.msg_throughput_ema, throughput, self.history),
            samples=previous.samples + 1,
        )

    def fold(
        self,
        broker: str,
        samples: Iterable[NodeSample],
        limits: Limits,
        reference: Limits | None = None,
    ) -> BrokerLoad | None:
        """A broker's load data after all ``samples`` in time order; None if there are none."""
        load: BrokerLoad | None = None
        for sample in sorted(samples, key=lambda s: s.ts):
            load = self.update(load, broker, sample, limits, reference)
        return load

    def weighted_max_array(
        self,
        columns: Mapping[str, np.ndarray],
        *,
        cores: np.ndarray,
        memory_bytes: np.ndarray,
        nic_bps: np.ndarray,
        reference: Limits | None = None,
    ) -> np.ndarray:
        """:meth:`usage` then :meth:`weighted_max` for many samples at once (NumPy).

        ``columns`` holds the :class:`NodeSample` fields by name (``cpu``, ``net_in_bps``...),
        one array entry per sample; the limits arrays line up with them. The fleet pipeline
        uses this so that its loads are the engine's, computed column-wise.
        """
        if self.normalisation == "absolute":
            if reference is None:
                raise ValueError("absolute load needs the cluster's reference limits")
            scale_cpu = cores / reference.cores if reference.cores else np.zeros_like(cores)
            scale_mem = (
                memory_bytes / reference.memory_bytes
                if reference.memory_bytes
                else np.zeros_like(memory_bytes)
            )
            nic = np.full_like(nic_bps, reference.nic_bps, dtype=float)
        else:
            scale_cpu = scale_mem = np.ones(len(nic_bps))
            nic = nic_bps.astype(float)

        def share(value: np.ndarray) -> np.ndarray:
            out = np.zeros(len(nic))
            np.divide(value, nic, out=out, where=nic > 0)
            return out

        w = self.weights
        signals = [
            columns["cpu"] * scale_cpu * w.cpu,
            columns["memory"] * scale_mem * w.memory,
            columns["direct_memory"] * scale_mem * w.direct_memory,
            share(columns["net_in_bps"]) * w.bandwidth_in,
            share(columns["net_out_bps"]) * w.bandwidth_out,
        ]
        if self.throughput_signal:
            # a rate near the float limit overflows to inf bits/s, which the cap makes 1.0
            with np.errstate(over="ignore"):
                tput_in = np.minimum(1.0, share(8.0 * columns["throughput_in_bytes_per_s"]))
                tput_out = np.minimum(1.0, share(8.0 * columns["throughput_out_bytes_per_s"]))
            signals += [tput_in * w.bandwidth_in, tput_out * w.bandwidth_out]
        result: np.ndarray = np.max(np.vstack(signals), axis=0)
        return result

    def _capacity(self, limits: Limits, reference: Limits | None) -> float | None:
        if limits.nic_bps <= 0:
            return None
        if self.normalisation == "absolute" and reference is not None:
            return reference.nic_bytes_per_s  # every broker is measured against the reference
        return limits.nic_bytes_per_s


def _share(value: float, limit: float) -> float:
    return value / limit if limit > 0 else 0.0
