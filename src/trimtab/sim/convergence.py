"""How fast shedders balance a cluster: PIP-220's static experiment and a living cluster.

Static experiment (PIP-220's "epochs per cluster size" table)
    N brokers of one size with loads drawn uniformly in [0, 1]; each broker's load is split
    at random (Dirichlet(1)) into ``bundles_per_broker`` bundles (10 = the default top-K
    report, so the shedder sees every bundle at the start). Every cycle, brokers report their
    exact load and the real shedder runs; its moves are applied; the run stops when the
    population std of the loads is at most the target (0.15 = the PIP's 15 %). A *transfer* is
    one (source, destination) pair in a cycle, the PIP's *epoch*. Without ``timers`` the hit
    count and cooldown are off (the PIP's theoretical setting); with them, a cycle is a
    minute and upstream's defaults apply. Nothing here is fitted to the PIP's numbers: the
    model is the one the reference (§3) derives, and the table falls out of it.

Dynamic cluster
    See :mod:`trimtab.sim.shedding_cluster`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from trimtab.config import SheddingConfig
from trimtab.shedding import (
    BrokerLoad,
    BundleLoads,
    LoadSnapshot,
    Shedder,
    ShedderState,
    run_cycle,
    shedder_for,
)

__all__ = [
    "CAPACITY",
    "PIP_EPOCHS",
    "StaticRow",
    "StaticTrial",
    "exact_reports",
    "experiment_config",
    "static_experiment",
    "static_rng",
    "static_trial",
]

#: PIP-220's table: cluster size -> epochs (single transfers) to reach std 15 %.
PIP_EPOCHS = {
    10: 3,
    20: 5,
    40: 8,
    80: 15,
    100: 19,
    200: 36,
    300: 54,
    400: 72,
    500: 89,
    600: 107,
    700: 125,
    800: 143,
    900: 160,
    1000: 178,
}

CAPACITY = 1e9  # bytes/s of every broker in the static experiment; load 1.0 = 1 GB/s


@dataclass(frozen=True, slots=True, kw_only=True)
class StaticTrial:
    """One static run: what it took to reach the target (or how far it got)."""

    brokers: int
    strategy: str
    transfers: int
    cycles: int
    bundles_moved: int
    moved_bytes_per_s: float
    std_start: float
    std_end: float
    reached: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class StaticRow:
    """Means over the trials of one (cluster size, strategy); ``pip_epochs`` when the PIP lists
    the size. ``moved_share`` is the traffic moved as a share of all traffic."""

    brokers: int
    strategy: str
    trials: int
    transfers_mean: float
    cycles_mean: float
    bundles_mean: float
    moved_bytes_per_s_mean: float
    moved_share_mean: float
    reached_share: float
    pip_epochs: int | None


def static_trial(
    brokers: int,
    shedder: Shedder,
    rng: np.random.Generator,
    *,
    bundles_per_broker: int = 10,
    interval_seconds: float = 60.0,
    max_cycles: int = 10_000,
) -> StaticTrial:
    """One run of the static experiment with ``shedder`` (its config holds the target)."""
    cfg = shedder.config
    loads = rng.uniform(0.0, 1.0, brokers)
    shares = rng.dirichlet(np.ones(bundles_per_broker), size=brokers)
    sizes = (shares * loads[:, None] * CAPACITY).ravel()
    owner = np.repeat(np.arange(brokers), bundles_per_broker)
    ids = [f"broker-{i:05d}" for i in range(brokers)]
    names = [f"static/ns/0x{k:08x}_0x{k + 1:08x}" for k in range(len(sizes))]
    place = random.Random(int(rng.integers(2**31)))
    state, now = ShedderState(), 0.0
    transfers = cycles = moved_bundles = idle = 0
    moved = 0.0
    patience = (
        cfg.hit_count_threshold + math.ceil(cfg.shedding_delay_seconds / interval_seconds) + 3
    )
    level = np.bincount(owner, sizes, minlength=brokers) / CAPACITY
    start = float(level.std())
    while level.std() > cfg.target_std and cycles < max_cycles and idle <= patience:
        cycles += 1
        table = BundleLoads(
            names=tuple(names),
            owners=tuple(ids),
            owner=owner,
            throughput_in=sizes / 2,
            throughput_out=sizes / 2,
            msg_rate_in=np.zeros(len(sizes)),
            msg_rate_out=np.zeros(len(sizes)),
            pinned=np.zeros(len(sizes), dtype=bool),
        )
        snapshot = LoadSnapshot.of(exact_reports(ids, level, now), table)
        result = run_cycle(shedder, snapshot, state, now=now, rng=place)
        state = result.state
        pairs: set[frozenset[str]] = set()
        where = {name: k for k, name in enumerate(names)}
        owner = owner.copy()
        for move in result.moves:
            if move.destination is None:
                continue
            k = where[move.bundle]
            owner[k] = int(move.destination.rsplit("-", 1)[1])
            pairs.add(frozenset((move.source, move.destination)))
            moved += move.throughput
            moved_bundles += 1
        transfers += len(pairs)
        idle = 0 if pairs else idle + 1
        level = np.bincount(owner, sizes, minlength=brokers) / CAPACITY
        now += interval_seconds
    end = float(level.std())
    return StaticTrial(
        brokers=brokers,
        strategy=shedder.name,
        transfers=transfers,
        cycles=cycles,
        bundles_moved=moved_bundles,
        moved_bytes_per_s=moved,
        std_start=start,
        std_end=end,
        reached=end <= cfg.target_std,
    )


def exact_reports(
    ids: Sequence[str], level: np.ndarray, now: float, capacities: np.ndarray | None = None
) -> list[BrokerLoad]:
    """Load data of brokers of :data:`CAPACITY` bytes/s (or ``capacities``) at loads ``level``,
    reported at ``now`` with no smoothing lag (the static model's brokers report their exact
    load)."""
    caps = np.full(len(ids), CAPACITY) if capacities is None else capacities
    out = []
    for broker, x, cap in zip(ids, level.tolist(), caps.tolist(), strict=True):
        tput = x * cap
        out.append(
            BrokerLoad(
                broker=broker,
                bandwidth_in=x,
                bandwidth_out=x,
                msg_throughput_in=tput / 2,
                msg_throughput_out=tput / 2,
                weighted_max=x,
                weighted_max_ema=x,
                msg_throughput_ema=tput,
                updated_at=now,
                samples=1,
                capacity_bytes_per_s=cap,
            )
        )
    return out


def static_rng(seed: int, brokers: int, trial: int) -> np.random.Generator:
    """The random source of trial ``trial`` at ``brokers`` brokers: it depends on the size and
    the trial only, so every strategy sees the same clusters, and a sweep task that knows
    (seed, brokers, trial) draws exactly what :func:`static_experiment` draws."""
    return np.random.default_rng([seed, brokers, trial])


def experiment_config(
    config: SheddingConfig,
    *,
    target_std: float,
    pairs_per_cycle: int | None = None,
    timers: bool = False,
) -> SheddingConfig:
    """``config`` set up for the static experiment (timers off unless asked for)."""
    changes: dict[str, object] = {"target_std": target_std}
    if pairs_per_cycle is not None:
        changes["max_broker_shedding_per_cycle"] = pairs_per_cycle
    if not timers:
        changes |= {"hit_count_threshold": 0, "shedding_delay_seconds": 0}
    return replace(config, **changes)  # type: ignore[arg-type]


def static_experiment(
    sizes: Sequence[int],
    strategies: Sequence[str],
    *,
    trials: int,
    config: SheddingConfig,
    seed: int = 0,
    bundles_per_broker: int = 10,
    on_trial: object = None,
) -> list[StaticRow]:
    """The table: for each size and strategy, the means over ``trials`` seeded runs.

    Every strategy sees the same initial clusters (:func:`static_rng`: size and trial only).
    ``on_trial`` (a callable taking no arguments) is called after each run, for progress bars.
    """
    rows = []
    for n in sizes:
        for strategy in strategies:
            shedder = shedder_for(config, strategy)
            runs = []
            for t in range(trials):
                rng = static_rng(seed, n, t)
                runs.append(static_trial(n, shedder, rng, bundles_per_broker=bundles_per_broker))
                if callable(on_trial):
                    on_trial()
            total = n * 0.5 * CAPACITY  # expected traffic of uniform loads
            rows.append(
                StaticRow(
                    brokers=n,
                    strategy=strategy,
                    trials=trials,
                    transfers_mean=float(np.mean([r.transfers for r in runs])),
                    cycles_mean=float(np.mean([r.cycles for r in runs])),
                    bundles_mean=float(np.mean([r.bundles_moved for r in runs])),
                    moved_bytes_per_s_mean=float(np.mean([r.moved_bytes_per_s for r in runs])),
                    moved_share_mean=float(np.mean([r.moved_bytes_per_s for r in runs])) / total,
                    reached_share=float(np.mean([r.reached for r in runs])),
                    pip_epochs=PIP_EPOCHS.get(n),
                )
            )
    return rows
