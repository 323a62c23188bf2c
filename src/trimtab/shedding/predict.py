"""What a move does to the loads: convert bytes/s to load per broker, and project moves.

Goals
    Say how much a broker's load changes when a bundle of ``x`` bytes/s leaves or arrives,
    for brokers that are not alike, without waiting for the next report.

Constraints
    * A broker that carries real traffic tells its own ratio: ``weighted_max / throughput``.
    * A broker with (almost) no traffic, such as a new one, cannot: it gets the cluster's
      median ratio scaled by capacity, ``median(ratio_j · cap_j) / cap_i`` (``cap`` = NIC in
      bytes/s; 1 for every broker when unknown). So a 10 Gb/s broker gains 2.5 × the load a
      25 Gb/s one gains for the same bundle.

Algorithm
    * :func:`load_per_byte` returns the ratios.
    * :func:`shift` applies moves to a map of loads (``±x·ratio``): where the moves take the
      loads a shedder balances, once they have settled.
    * :func:`project` applies moves to a snapshot's *current* values (instantaneous load,
      usages, throughputs, message rates, bundle owners), and :func:`report` has every broker
      publish a new report at ``now``, folding the current load into its moving averages with
      ``h``. Projecting over several cycles therefore keeps upstream's smoothing lag.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType

import numpy as np

from trimtab.shedding.decisions import Move
from trimtab.shedding.load import BrokerLoad, ema
from trimtab.shedding.snapshot import LoadSnapshot

__all__ = ["TRAFFIC_FLOOR", "load_per_byte", "project", "report", "shift"]

#: A broker below this share of its NIC does not tell its own ratio (health checks, warm-up).
TRAFFIC_FLOOR = 0.01


def load_per_byte(loads: Sequence[BrokerLoad]) -> dict[str, float]:
    """Load units per byte/s for each broker (see the module docstring)."""
    caps = np.array([b.capacity_bytes_per_s or 1.0 for b in loads], dtype=float)
    known = np.array([b.capacity_bytes_per_s is not None for b in loads], dtype=bool)
    tput = np.array([b.throughput for b in loads], dtype=float)
    level = np.array([b.weighted_max for b in loads], dtype=float)
    floor = np.where(known, TRAFFIC_FLOOR * caps, 0.0)
    own = (tput > 0) & (level > 0) & (tput >= floor)
    ratio = np.zeros(len(loads))
    ratio[own] = level[own] / tput[own]
    # Nobody tells a ratio: assume traffic-bound brokers (load = share of the NIC) if sizes are
    # known, else admit that a move's effect is unknown (0).
    bare = 1.0 if known.all() else 0.0
    typical = float(np.median(ratio[own] * caps[own])) if own.any() else bare
    fallback = typical / caps
    ratio = np.where(own, ratio, fallback)
    return {b.broker: float(r) for b, r in zip(loads, ratio, strict=True)}


def shift(
    loads: Mapping[str, float], moves: Iterable[Move], ratios: Mapping[str, float]
) -> dict[str, float]:
    """``loads`` after ``moves`` (moves without a destination change nothing)."""
    out = dict(loads)
    for move in moves:
        if move.destination is None:
            continue
        for broker, sign in ((move.source, -1.0), (move.destination, 1.0)):
            if broker in out:
                out[broker] = max(
                    0.0, out[broker] + sign * move.throughput * ratios.get(broker, 0.0)
                )
    return out


def project(
    snapshot: LoadSnapshot,
    moves: Iterable[Move],
    *,
    ratios: Mapping[str, float] | None = None,
) -> LoadSnapshot:
    """The snapshot's current values after ``moves``; moves without a destination are left
    out. Smoothed values and ``updated_at`` do not change until :func:`report`."""
    steps = [m for m in moves if m.destination is not None]
    if not steps:
        return snapshot
    loads = dict(snapshot.loads)
    rate = ratios if ratios is not None else load_per_byte(list(loads.values()))
    where = {name: i for i, name in enumerate(snapshot.bundles.names)}
    bundles = snapshot.bundles
    delta: dict[str, list[float]] = {}  # broker -> [load, tput in, tput out, rate in, rate out]
    owners: dict[int, str] = {}
    for move in steps:
        i = where[move.bundle]
        assert move.destination is not None
        sizes = (
            float(bundles.throughput_in[i]),
            float(bundles.throughput_out[i]),
            float(bundles.msg_rate_in[i]),
            float(bundles.msg_rate_out[i]),
        )
        total = sizes[0] + sizes[1]
        for broker, sign in ((move.source, -1.0), (move.destination, 1.0)):
            acc = delta.setdefault(broker, [0.0] * 5)
            acc[0] += sign * total * rate.get(broker, 0.0)
            for k in range(4):
                acc[k + 1] += sign * sizes[k]
        owners[i] = move.destination
    for broker, acc in delta.items():
        if broker in loads:
            loads[broker] = _shifted(loads[broker], acc)
    return replace(snapshot, bundles=bundles.moved(owners), loads=MappingProxyType(loads))


def report(snapshot: LoadSnapshot, *, now: float, history: float) -> LoadSnapshot:
    """Every broker with load data reports at ``now``: one more sample in its averages."""
    loads = {
        broker: replace(
            load,
            weighted_max_ema=ema(load.weighted_max_ema, load.weighted_max, history),
            msg_throughput_ema=ema(load.msg_throughput_ema, load.throughput, history),
            updated_at=now,
            samples=load.samples + 1,
        )
        for broker, load in snapshot.loads.items()
    }
    return replace(snapshot, loads=MappingProxyType(loads))


def _shifted(load: BrokerLoad, acc: list[float]) -> BrokerLoad:
    level = max(0.0, load.weighted_max + acc[0])
    scale = level / load.weighted_max if load.weighted_max > 0 else 1.0
    bandwidth = acc[0] if load.weighted_max <= 0 else 0.0  # an idle broker: traffic-bound
    return replace(
        load,
        cpu=load.cpu * scale,
        memory=load.memory * scale,
        direct_memory=load.direct_memory * scale,
        bandwidth_in=max(load.bandwidth_in * scale, bandwidth),
        bandwidth_out=max(load.bandwidth_out * scale, bandwidth),
        msg_throughput_in=max(0.0, load.msg_throughput_in + acc[1]),
        msg_throughput_out=max(0.0, load.msg_throughput_out + acc[2]),
        msg_rate_in=max(0.0, load.msg_rate_in + acc[3]),
        msg_rate_out=max(0.0, load.msg_rate_out + acc[4]),
        weighted_max=level,
    )
