"""A living Pulsar cluster, minute by minute, under a shedding strategy.

Goals
    Show what the static experiment cannot: smoothing lag, the hit-count gate, the cooldown,
    report thresholds, flaky traffic, brokers joining and leaving, mixed hardware.

Model
    * **Brokers** cycle through three machine types (8 cores / 10 Gb/s, 16 / 25, 32 / 25). A
      core serves :data:`BYTES_PER_CORE` of traffic, so usage is ``cpu = 0.03 + T/(cores·c)``
      and ``bandwidth = 8·T_dir / nic``: most brokers are CPU-bound, and a small broker gains
      four times the load of a big one for the same bundle.
    * **Bundles** have log-normal sizes and start spread by *count* (the same number on
      every broker, as count-based placement leaves them), so the small brokers start hot.
      Traffic drifts diurnally (``1 + A·sin(2πt/1440 + φ)``, three tenant time zones); one
      large bundle is **flaky** (×5 on and off at random).
    * **Reports.** Every minute each broker folds a sample into its load data (the moving
      average with ``h``) and publishes it when a usage moved by
      ``loadBalancerReportUpdateThresholdPercentage`` points or
      ``loadBalancerReportUpdateMaxIntervalMinutes`` passed. Shedders see published data only.
    * **Events.** A 32-core broker joins at ``join_at_minute``; at ``leave_at_minute`` the first
      broker leaves and its bundles are placed like fresh lookups
      (``LeastResourceUsageWithWeight``).
    * **Shedding** runs every ``loadBalancerSheddingIntervalMinutes`` with the upstream timers;
      unload-only strategies get destinations from the same placement. Moves take effect at
      the next minute.

Figures (:class:`ClusterRun`): the true std of capacity-normalised loads each minute, unloads
per hour, traffic moved, minutes to balance after the start and each event (until the std
stays at or below the target for :data:`SETTLE_MINUTES` minutes), and the share of minutes
spent above the target.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np

from trimtab.config import SheddingConfig
from trimtab.shedding import (
    BrokerLoad,
    BundleLoads,
    Label,
    Limits,
    LoadModel,
    LoadSnapshot,
    NodeSample,
    ShedderState,
    least_resource_usage,
    run_cycle,
    shedder_for,
)

__all__ = [
    "BYTES_PER_CORE",
    "SETTLE_MINUTES",
    "ClusterRun",
    "ClusterScenario",
    "run_cluster",
    "should_publish",
    "with_target",
]

BYTES_PER_CORE = 40e6
SETTLE_MINUTES = 10
MACHINES = ((8, 10e9), (16, 25e9), (32, 25e9))  # (cores, nic_bps)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterScenario:
    """What happens to the cluster; every number has a default that shows all the effects."""

    brokers: int = 24
    bundles_per_broker: int = 25
    hours: float = 12.0
    mean_load: float = 0.45
    diurnal_amplitude: float = 0.3
    flaky: bool = True
    join_at_minute: int | None = 180
    leave_at_minute: int | None = 480
    seed: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterRun:
    """One strategy's run: per-minute std and the summary figures."""

    strategy: str
    std: tuple[float, ...]
    unloads: int
    unloads_per_hour: float
    moved_bytes_per_s: float
    balance_minutes: Mapping[str, float | None]
    above_target_share: float
    outcomes: Mapping[str, int]


def run_cluster(
    strategy: str,
    config: SheddingConfig,
    scenario: ClusterScenario,
    *,
    on_minute: Callable[[], None] | None = None,
) -> ClusterRun:
    """Run ``scenario`` under ``strategy``; the same scenario seed gives the same cluster.

    ``on_minute`` (optional, for progress bars) is called once per simulated minute, after the
    brokers' loads of that minute are known: ``int(hours · 60)`` calls in all.
    """
    cluster = _Cluster(strategy, config, scenario)
    every = max(1, round(config.interval_minutes))
    for minute in range(cluster.minutes):
        now = minute * 60.0
        cluster.events(minute)
        traffic = cluster.traffic(minute)
        cluster.observe(now, traffic)
        if on_minute is not None:
            on_minute()
        if minute % every == 0:
            cluster.shed(now, traffic)
    return cluster.result(strategy)


class _Cluster:
    """One scenario in progress: the brokers, the bundles and their owners, the loads each
    broker keeps and publishes, the shedder's state, and the run's tallies.

    :func:`run_cluster` calls, every minute, :meth:`events` (a broker joins or leaves),
    :meth:`traffic` (the bundles' rates), :meth:`observe` (loads folded and published), and
    every shedding interval :meth:`shed`; the random draws happen in that order."""

    def __init__(self, strategy: str, config: SheddingConfig, scenario: ClusterScenario) -> None:
        self.config, self.scenario = config, scenario
        self.rng = rng = np.random.default_rng(scenario.seed)
        self.place = random.Random(scenario.seed)
        self.shedder = shedder_for(config, strategy)
        self.model = LoadModel.of(config)
        self.total = scenario.brokers + (1 if scenario.join_at_minute is not None else 0)
        self.ids = [f"broker-{i:03d}" for i in range(self.total)]
        kinds = [MACHINES[i % 3] for i in range(scenario.brokers)]
        kinds += [MACHINES[2]] * (self.total - scenario.brokers)
        self.limits = {
            b: Limits(cores=c, memory_bytes=64e9, nic_bps=nic)
            for b, (c, nic) in zip(self.ids, kinds, strict=True)
        }
        self.bundles = n_bundles = scenario.brokers * scenario.bundles_per_broker
        size = rng.lognormal(0.0, 1.0, n_bundles)
        capacity = sum(self.limits[b].cores for b in self.ids[: scenario.brokers]) * BYTES_PER_CORE
        self.size = size * (scenario.mean_load * capacity / size.sum())
        self.phase = rng.choice([0.0, 2 * math.pi / 3, 4 * math.pi / 3], n_bundles)
        self.flaky = int(np.argmax(self.size)) if scenario.flaky else -1
        self.owner = np.repeat(np.arange(scenario.brokers), scenario.bundles_per_broker)
        rng.shuffle(self.owner)
        self.names = tuple(f"tenant/ns{k % 7}/0x{k:08x}_0x{k + 1:08x}" for k in range(n_bundles))
        self.where = {name: k for k, name in enumerate(self.names)}
        self.live = set(range(scenario.brokers))
        self.local: dict[str, BrokerLoad] = {}
        self.published: dict[str, BrokerLoad] = {}
        self.last_usage: dict[str, tuple[float, float, float]] = {}
        self.state, self.burst = ShedderState(), False
        self.stds: list[float] = []
        self.unloads, self.moved = 0, 0.0
        self.outcomes: Counter[str] = Counter()
        self.minutes = int(scenario.hours * 60)

    def events(self, minute: int) -> None:
        """The new broker joins; the first one leaves, its bundles placed like fresh lookups."""
        if minute == self.scenario.join_at_minute:
            self.live.add(self.total - 1)
        if minute == self.scenario.leave_at_minute and 0 in self.live:
            gone = self.ids[0]
            self.live.discard(0)
            self.published.pop(gone, None)
            loads = {b: self.published[b].load for b in self.published}
            for k in np.flatnonzero(self.owner == 0).tolist():
                target = (
                    least_resource_usage(loads, gone, self.config, self.place) if loads else None
                )
                self.owner[k] = self.ids.index(target) if target else min(self.live)

    def traffic(self, minute: int) -> np.ndarray:
        """Each bundle's bytes per second this minute: diurnal drift, the flaky one's bursts."""
        scenario = self.scenario
        if scenario.flaky and self.rng.random() < 0.1:
            self.burst = not self.burst
        traffic: np.ndarray = self.size * (
            1 + scenario.diurnal_amplitude * np.sin(2 * math.pi * minute / 1440 + self.phase)
        )
        if self.flaky >= 0 and self.burst:
            traffic[self.flaky] *= 5.0
        return traffic

    def observe(self, now: float, traffic: np.ndarray) -> None:
        """Fold the minute into every live broker's load, publish the ones due, note the std."""
        per_broker = np.bincount(self.owner, traffic, minlength=self.total)
        true_loads = []
        for pos in sorted(self.live):
            broker = self.ids[pos]
            sample = _sample(now, float(per_broker[pos]), self.limits[broker])
            load = self.model.update(self.local.get(broker), broker, sample, self.limits[broker])
            self.local[broker] = load
            true_loads.append(load.weighted_max)
            usage = (load.cpu, load.bandwidth_in, load.bandwidth_out)
            last = self.published.get(broker)
            if should_publish(last, self.last_usage.get(broker), usage, now, self.config):
                self.published[broker] = load
                self.last_usage[broker] = usage
        self.stds.append(float(np.std(true_loads)))

    def shed(self, now: float, traffic: np.ndarray) -> None:
        """One shedding cycle on the published loads; its moves take effect next minute."""
        snapshot = self._snapshot(traffic)
        result = run_cycle(self.shedder, snapshot, self.state, now=now, rng=self.place)
        self.state = result.state
        outcome = result.outcome if result.decisions else None
        if outcome is not None and outcome.label is not Label.SUCCESS:
            self.outcomes[f"{outcome.label}/{outcome.reason}"] += 1
        for decision in result.decisions:
            move = decision.move
            if move is None or move.destination is None:
                continue
            self.owner[self.where[move.bundle]] = self.ids.index(move.destination)
            self.unloads += 1
            self.moved += move.throughput
            self.outcomes[f"{decision.label}/{decision.reason}"] += 1

    def _snapshot(self, traffic: np.ndarray) -> LoadSnapshot:
        table = BundleLoads(
            names=self.names,
            owners=tuple(self.ids),
            owner=self.owner.copy(),
            throughput_in=traffic / 2,
            throughput_out=traffic / 2,
            msg_rate_in=traffic / 2048,
            msg_rate_out=traffic / 2048,
            pinned=np.zeros(self.bundles, dtype=bool),
        )
        available = frozenset(self.ids[p] for p in self.live)
        return LoadSnapshot(
            bundles=table,
            loads=MappingProxyType({b: x for b, x in self.published.items() if b in available}),
            available=available,
        )

    def result(self, strategy: str) -> ClusterRun:
        scenario, stds, target = self.scenario, self.stds, self.config.target_std
        events = {"start": 0}
        if scenario.join_at_minute is not None and scenario.join_at_minute < self.minutes:
            events["join"] = scenario.join_at_minute
        if scenario.leave_at_minute is not None and scenario.leave_at_minute < self.minutes:
            events["leave"] = scenario.leave_at_minute
        return ClusterRun(
            strategy=strategy,
            std=tuple(stds),
            unloads=self.unloads,
            unloads_per_hour=self.unloads / scenario.hours,
            moved_bytes_per_s=self.moved,
            balance_minutes=MappingProxyType(
                {name: _settle(stds, at, target) for name, at in events.items()}
            ),
            above_target_share=float(np.mean(np.array(stds) > target)),
            outcomes=MappingProxyType(dict(self.outcomes)),
        )


def _sample(now: float, traffic: float, limits: Limits) -> NodeSample:
    half = traffic / 2
    return NodeSample(
        ts=now,
        cpu=0.03 + traffic / (limits.cores * BYTES_PER_CORE),
        memory=0.3,
        direct_memory=0.2,
        net_in_bps=8 * half,
        net_out_bps=8 * half,
        msg_in_per_s=half / 2048,
        msg_out_per_s=half / 2048,
        throughput_in_bytes_per_s=half,
        throughput_out_bytes_per_s=half,
    )


def should_publish(
    last: BrokerLoad | None,
    last_usage: tuple[float, ...] | None,
    usage: tuple[float, ...],
    now: float,
    config: SheddingConfig,
) -> bool:
    """Upstream's ``needBrokerDataUpdate``: publish a broker's load data when a usage moved by
    ``loadBalancerReportUpdateThresholdPercentage`` points since the last published report, or
    ``loadBalancerReportUpdateMaxIntervalMinutes`` passed."""
    if last is None or last_usage is None:
        return True
    if now - last.updated_at >= config.report_update_max_interval_minutes * 60:
        return True
    moved = max(abs(a - b) for a, b in zip(usage, last_usage, strict=True))
    return moved * 100 >= config.report_update_threshold_percentage


def _settle(stds: list[float], start: int, target: float) -> float | None:
    """Minutes from ``start`` until the std stays at or below ``target`` for SETTLE_MINUTES."""
    run = 0
    for minute in range(start, len(stds)):
        run = run + 1 if stds[minute] <= target else 0
        if run >= SETTLE_MINUTES:
            return float(minute - SETTLE_MINUTES + 1 - start)
    return None


def with_target(config: SheddingConfig, target_std: float | None) -> SheddingConfig:
    """``config`` with another target std (None keeps it)."""
    return config if target_std is None else replace(config, target_std=target_std)
