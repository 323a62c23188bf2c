"""Every strategy side by side on the same clusters: how fast, how even, how much churn.

Clusters
    ``uniform``: brokers of one size; ``mixed``: brokers of 1×, 2× and 4× the size in turn
    (:data:`KINDS`). A broker's utilisation is its bundles' bytes/s over its capacity; the
    reported load is that utilisation (the bandwidth signal), so every shedder reads the same
    truth. Each strategy runs with upstream's own defaults (hit counts and cooldowns on), from
    the same draw: :func:`~trimtab.sim.convergence.static_rng` gives every strategy the same
    cluster for a (seed, size, trial).

Convergence trial
    Utilisations drawn uniformly in [0, 1], split at random (Dirichlet(1)) into bundles.
    Every cycle (a minute) brokers report their load and its moving average
    (``loadBalancerHistoryResourcePercentage``), as real brokers do: smoothing shedders read
    the average, AvgShedder the raw value. The run records the first cycle
    at which the std is at most ``std_target`` and the first at which the utilisation range
    (max − min) is at most ``span``, and stops when both are reached, after ``patience`` idle
    cycles, or at ``max_cycles``. Also: bundles and bytes/s moved, and the *big-broker gap*:
    the mean utilisation of the other brokers minus that of the largest ones (positive: the
    big brokers are under-used; AvgShedder's author reports a big broker stuck under half).

Churn trial
    A stationary cluster that is almost balanced, as a real one is between events: brokers
    start with utilisations uniform in ``utilisation`` (35-65 %), and every minute each
    bundle's rate is redrawn within ±``noise`` (10 %) of its base, independently of the
    others. Brokers fold a sample every minute but publish it at upstream's cadence
    (``needBrokerDataUpdate``: a usage moved by 10 points, or 15 minutes passed), so the
    shedders read what a leader would. The shedders settle the starting spread during ``warmup``
    (four hours: longer than any strategy's hit counts, cooldowns and 30-minute grace
    period need to close it); the bundles moved over the next ``minutes`` move for noise
    alone, and are scaled to a day. (Noise that swings a whole broker's bundles together,
    around brokers that all start at 50 %, never trips any shedder: every strategy scored 0.)
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from trimtab.config import SheddingConfig
from trimtab.shedding import (
    BrokerLoad,
    BundleLoads,
    LoadSnapshot,
    Move,
    Shedder,
    ShedderState,
    run_cycle,
)
from trimtab.sim.convergence import CAPACITY, exact_reports
from trimtab.sim.shedding_cluster import should_publish

__all__ = [
    "KINDS",
    "ChurnTrial",
    "ConvergenceTrial",
    "capacities",
    "churn_trial",
    "convergence_trial",
]

#: Broker sizes (multiples of :data:`CAPACITY`) of each kind of cluster, in turn.
KINDS: dict[str, tuple[float, ...]] = {"uniform": (1.0,), "mixed": (1.0, 2.0, 4.0)}


def capacities(kind: str, brokers: int) -> np.ndarray:
    """Bytes/s of each broker of a ``kind`` cluster."""
    return np.resize(np.array(KINDS[kind]), brokers) * CAPACITY


@dataclass(frozen=True, slots=True, kw_only=True)
class ConvergenceTrial:
    """One convergence run; a ``cycles_to_*`` is None when the run never got there."""

    strategy: str
    brokers: int
    cycles: int
    cycles_to_std: int | None
    cycles_to_range: int | None
    bundles_moved: int
    moved_bytes_per_s: float
    std_end: float
    range_end: float
    big_gap: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ChurnTrial:
    """Bundles moved per simulated day under stationary noisy load, and the mean std."""

    strategy: str
    brokers: int
    unloads_per_day: float
    moved_bytes_per_s_per_day: float
    std_mean: float


@dataclass(slots=True)
class _Cluster:
    """Bundles (base bytes/s, owner) on brokers of known capacity; mutable on purpose."""

    ids: list[str]
    caps: np.ndarray
    owner: np.ndarray
    base: np.ndarray
    names: tuple[str, ...]

    @classmethod
    def draw(
        cls, caps: np.ndarray, rng: np.random.Generator, *, per: int, low: float, high: float
    ) -> _Cluster:
        n = len(caps)
        util = rng.uniform(low, high, n)
        shares = rng.dirichlet(np.ones(per), size=n)
        base = (shares * (util * caps)[:, None]).ravel()
        names = tuple(f"sim/ns/0x{k:08x}_0x{k + 1:08x}" for k in range(len(base)))
        ids = [f"broker-{i:05d}" for i in range(n)]
        return cls(ids, caps, np.repeat(np.arange(n), per), base, names)

    def utilisation(self, sizes: np.ndarray) -> np.ndarray:
        level: np.ndarray = np.bincount(self.owner, sizes, minlength=len(self.ids)) / self.caps
        return level

    def table(self, sizes: np.ndarray) -> BundleLoads:
        return BundleLoads(
            names=self.names,
            owners=tuple(self.ids),
            owner=self.owner,
            throughput_in=sizes / 2,
            throughput_out=sizes / 2,
            msg_rate_in=np.zeros(len(sizes)),
            msg_rate_out=np.zeros(len(sizes)),
            pinned=np.zeros(len(sizes), dtype=bool),
        )

    def apply(self, moves: Sequence[Move]) -> tuple[int, float]:
        """Move the bundles; (bundles moved, bytes/s moved)."""
        where = {name: k for k, name in enumerate(self.names)}
        owner = self.owner.copy()
        count, moved = 0, 0.0
        for move in moves:
            if move.destination is None:
                continue
            owner[where[move.bundle]] = int(move.destination.rsplit("-", 1)[1])
            count += 1
            moved += move.throughput
        self.owner = owner
        return count, moved


def _cycle(
    shedder: Shedder, snapshot: LoadSnapshot, state: ShedderState, place: random.Random, now: float
) -> tuple[tuple[Move, ...], ShedderState]:
    result = run_cycle(shedder, snapshot, state, now=now, rng=place)
    return result.moves, result.state


def _start(
    caps: np.ndarray,
    shedder: Shedder,
    rng: np.random.Generator,
    per: int,
    utilisation: tuple[float, float],
    *,
    cadence: bool = False,
) -> tuple[_Cluster, random.Random, _Reports]:
    """A drawn cluster, the RNG that places unload-only moves, and its brokers' reports
    (every sample published, or with ``cadence`` at the shedder's report cadence)."""
    low, high = utilisation
    cluster = _Cluster.draw(caps, rng, per=per, low=low, high=high)
    place = random.Random(int(rng.integers(2**31)))
    cfg = shedder.config
    reports = _Reports(
        cluster.ids, caps, cfg.history_resource_percentage, cadence=cfg if cadence else None
    )
    return cluster, place, reports


def _patience(shedder: Shedder, interval: float) -> int:
    """Idle cycles after which a run is over: longer than any strategy's own wait (hit
    counts, cooldown, and the grace period before a moved bundle may move again)."""
    cfg = shedder.config
    upstream = cfg.hit_count_threshold + math.ceil(cfg.shedding_delay_seconds / interval)
    grace = math.ceil(cfg.grace_period_minutes * 60 / interval)
    return max(upstream, cfg.avg_hit_count_low_threshold, grace) + 3


def convergence_trial(
    caps: np.ndarray,
    shedder: Shedder,
    rng: np.random.Generator,
    *,
    std_target: float = 0.15,
    span: float = 0.15,
    bundles_per_broker: int = 10,
    max_cycles: int = 3000,
    interval_seconds: float = 60.0,
) -> ConvergenceTrial:
    """One convergence run of ``shedder`` on a cluster of brokers of ``caps`` bytes/s."""
    cluster, place, reports = _start(caps, shedder, rng, bundles_per_broker, (0.0, 1.0))
    state, now = ShedderState(), 0.0
    to_std: int | None = None
    to_range: int | None = None
    cycles = idle = bundles = 0
    moved = 0.0
    level = cluster.utilisation(cluster.base)
    patience = _patience(shedder, interval_seconds)
    while cycles < max_cycles and idle <= patience:
        if to_std is None and level.std() <= std_target:
            to_std = cycles
        if to_range is None and np.ptp(level) <= span:
            to_range = cycles
        if to_std is not None and to_range is not None:
            break
        cycles += 1
        snapshot = LoadSnapshot.of(reports.at(level, now), cluster.table(cluster.base))
        moves, state = _cycle(shedder, snapshot, state, place, now)
        count, size = cluster.apply(moves)
        bundles, moved = bundles + count, moved + size
        idle = 0 if count else idle + 1
        level = cluster.utilisation(cluster.base)
        now += interval_seconds
    return ConvergenceTrial(
        strategy=shedder.name,
        brokers=len(caps),
        cycles=cycles,
        cycles_to_std=to_std,
        cycles_to_range=to_range,
        bundles_moved=bundles,
        moved_bytes_per_s=moved,
        std_end=float(level.std()),
        range_end=float(np.ptp(level)),
        big_gap=_big_gap(level, caps),
    )


def _big_gap(level: np.ndarray, caps: np.ndarray) -> float:
    """Mean utilisation of the other brokers minus that of the largest (0 if all equal)."""
    big = caps == caps.max()
    if big.all():
        return 0.0
    return float(level[~big].mean() - level[big].mean())


def churn_trial(
    caps: np.ndarray,
    shedder: Shedder,
    rng: np.random.Generator,
    *,
    minutes: int = 1440,
    warmup: int = 240,
    noise: float = 0.10,
    bundles_per_broker: int = 10,
    utilisation: tuple[float, float] = (0.35, 0.65),
) -> ChurnTrial:
    """Unloads per simulated day of ``shedder`` on a stationary, noisy cluster (see the
    module docstring)."""
    cluster, place, reports = _start(
        caps, shedder, rng, bundles_per_broker, utilisation, cadence=True
    )
    state = ShedderState()
    counted = 0
    moved = 0.0
    stds = []
    for minute in range(warmup + minutes):
        now = minute * 60.0
        sizes = cluster.base * rng.uniform(1 - noise, 1 + noise, len(cluster.base))
        level = cluster.utilisation(sizes)
        snapshot = LoadSnapshot.of(reports.at(level, now), cluster.table(sizes))
        moves, state = _cycle(shedder, snapshot, state, place, now)
        count, size = cluster.apply(moves)
        if minute >= warmup:
            counted += count
            moved += size
            stds.append(float(level.std()))
    scale = 1440 / minutes
    return ChurnTrial(
        strategy=shedder.name,
        brokers=len(caps),
        unloads_per_day=counted * scale,
        moved_bytes_per_s_per_day=moved * scale,
        std_mean=float(np.mean(stds)),
    )


@dataclass(slots=True)
class _Reports:
    """Brokers reporting every minute: the raw load and its moving average, as real brokers
    do (``history`` = ``loadBalancerHistoryResourcePercentage``); mutable on purpose."""

    ids: list[str]
    caps: np.ndarray
    history: float
    ema: np.ndarray | None = None
    samples: int = 0
    #: None: every sample is published; a config: published at its report cadence.
    cadence: SheddingConfig | None = None
    published: dict[str, BrokerLoad] = field(default_factory=dict)

    def at(self, level: np.ndarray, now: float) -> list[BrokerLoad]:
        h = self.history
        self.ema = level if self.ema is None else h * self.ema + (1 - h) * level
        self.samples += 1
        local = [
            replace(r, weighted_max_ema=float(x), msg_throughput_ema=float(x * cap), samples=k)
            for r, x, cap, k in zip(
                exact_reports(self.ids, level, now, self.caps),
                self.ema.tolist(),
                self.caps.tolist(),
                [self.samples] * len(self.ids),
                strict=True,
            )
        ]
        if self.cadence is None:
            return local
        for load in local:
            last = self.published.get(load.broker)
            before = None if last is None else (last.weighted_max,)
            if should_publish(last, before, (load.weighted_max,), now, self.cadence):
                self.published[load.broker] = load
        return [self.published[b] for b in self.ids]
