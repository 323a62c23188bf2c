"""The contract every shedder keeps, and the pieces they share.

Contract
    ``shedder.cycle(snapshot, state, now=...) -> CycleResult``. A cycle is pure: the result
    depends only on the arguments (and on the RNG a shedder is built with, if any). Around the
    strategy's own ``decide`` step, :meth:`Shedder.cycle` does what Pulsar's
    ``UnloadScheduler`` does: before it, bundles unloaded longer than
    ``loadBalancerSheddingGracePeriodMinutes`` ago are forgotten; after it, every moved bundle
    and every source broker is stamped with ``now``.

Shared pieces
    * :class:`LoadStats`: population mean and std with upstream's incremental update after an
      offload (the mean is kept, only the sum of squares changes).
    * :func:`is_underloaded` / :func:`is_overloaded`: the TransferShedder's broker rules, also
      used by the balanced shedder.
    * :func:`eligible`: whether a bundle may be shed at all (grace period, policies, PIP-380
      excluded namespaces).
    * :func:`usable_brokers`: available brokers with load data that is not stale.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, replace

from trimtab.config import SheddingConfig
from trimtab.shedding.decisions import (
    CycleResult,
    Decision,
    Label,
    Move,
    Reason,
    ShedderState,
    frozen_map,
)
from trimtab.shedding.load import BrokerLoad
from trimtab.shedding.snapshot import BundleIndex, LoadSnapshot, namespace_of

__all__ = [
    "LoadStats",
    "Shedder",
    "UsableBrokers",
    "eligible",
    "hit_note",
    "is_overloaded",
    "is_underloaded",
    "largest_first_until",
    "skip",
    "success",
    "underload_multiplier",
    "unload",
    "usable_brokers",
]


@dataclass(slots=True)
class LoadStats:
    """Mean and population std of loads, updated after each offload like upstream's
    ``LoadStats``: ``offload(max, min, x)`` replaces max by ``max(0, max − x)`` and min by
    ``min + x`` in the sum of squares. Cycle-local and mutable on purpose."""

    total: float
    sq_total: float
    count: int
    avg: float
    std: float

    @classmethod
    def of(cls, loads: Iterable[float]) -> LoadStats:
        values = list(loads)
        n = len(values)
        total = math.fsum(values)
        sq_total = math.fsum(v * v for v in values)
        avg = total / n if n else 0.0
        std = math.sqrt(max(0.0, sq_total / n - avg * avg)) if n else 0.0
        return cls(total, sq_total, n, avg, std)

    def offload(self, high: float, low: float, amount: float) -> None:
        self.sq_total -= high * high + low * low
        new_high = max(0.0, high - amount)
        new_low = low + amount
        self.sq_total += new_high * new_high + new_low * new_low
        self.std = math.sqrt(abs(self.sq_total / self.count - self.avg * self.avg))

    def replace(self, old: float, new: float) -> None:
        """One load changes (a move between brokers of different sizes changes the mean)."""
        self.total += new - old
        self.sq_total += new * new - old * old
        self.avg = self.total / self.count
        self.std = math.sqrt(max(0.0, self.sq_total / self.count - self.avg * self.avg))


def underload_multiplier(config: SheddingConfig) -> float:
    """``min(0.5, max(0, targetStd / 2))``: 0.125 with the default target of 0.25."""
    return min(0.5, max(0.0, config.target_std / 2.0))


def is_underloaded(
    load: float,
    throughput_ema: float,
    avg: float,
    max_throughput_ema: float,
    config: SheddingConfig,
) -> bool:
    """Load below ``avg·m``, or throughput EMA below ``m`` × the max broker's (PR #22321)."""
    m = underload_multiplier(config)
    return load < avg * m or throughput_ema < m * max_throughput_ema


def is_overloaded(load: float, avg: float, config: SheddingConfig) -> bool:
    """Load above the overload threshold (85 %) **and** above ``avg + targetStd`` (PR #20059)."""
    threshold = config.overloaded_threshold_percentage / 100.0
    return load > threshold and load > avg + config.target_std


def hit_note(hit: int, std: float, config: SheddingConfig) -> str:
    """Why a cycle stopped at the hit-count gate, in words."""
    if hit == 0:
        return (
            f"balanced: std {std:.3f} <= target {config.target_std:g}, "
            "no broker underloaded or overloaded"
        )
    return (
        f"shedding condition hit {hit} time(s) in a row; acting after {config.hit_count_threshold}"
    )


def eligible(index: BundleIndex, i: int, state: ShedderState, config: SheddingConfig) -> bool:
    """Whether bundle ``i`` may be shed: not recently unloaded, not under a policy (unless
    ``loadBalancerSheddingBundlesWithPoliciesEnabled``), not in an excluded namespace."""
    name = index.bundles.names[i]
    if name in state.recently_unloaded_bundles:
        return False
    if index.bundles.pinned[i] and not config.shed_bundles_with_policies:
        return False
    return not (config.excluded_namespaces and namespace_of(name) in config.excluded_namespaces)


@dataclass(frozen=True, slots=True)
class UsableBrokers:
    """Available brokers with fresh load data, in id order, and why the others were left out."""

    loads: tuple[BrokerLoad, ...]
    stale: tuple[str, ...]
    missing: tuple[str, ...]


def usable_brokers(snapshot: LoadSnapshot, now: float, config: SheddingConfig) -> UsableBrokers:
    available = snapshot.available or frozenset()
    loads: list[BrokerLoad] = []
    stale: list[str] = []
    missing: list[str] = []
    for broker in sorted(available):
        load = snapshot.loads.get(broker)
        if load is None:
            missing.append(broker)
        elif now - load.updated_at > config.load_data_ttl_seconds:
            stale.append(broker)
        else:
            loads.append(load)
    return UsableBrokers(tuple(loads), tuple(stale), tuple(missing))


def largest_first_until(
    index: BundleIndex,
    broker: int,
    amount: float,
    state: ShedderState,
    config: SheddingConfig,
) -> list[int]:
    """The modular shedders' pick: eligible bundles largest first while less than ``amount``
    is marked, and always at least one (so the last one may overshoot)."""
    chosen: list[int] = []
    marked = 0.0
    for i in index.largest_first(broker, index.throughput).tolist():
        if not eligible(index, i, state, config):
            continue
        if chosen and marked >= amount:
            break
        chosen.append(i)
        marked += float(index.throughput[i])
    return chosen


def unload(index: BundleIndex, i: int, reason: Reason, note: str = "") -> Decision:
    """A Success decision for bundle ``i`` without a destination (placed at the next lookup)."""
    move = Move(
        bundle=index.bundles.names[i],
        source=index.brokers[int(index.position[i])],
        destination=None,
        throughput=float(index.throughput[i]),
    )
    return success(reason, move, note)


def success(reason: Reason, move: Move, note: str = "") -> Decision:
    return Decision(label=Label.SUCCESS, reason=reason, broker=move.source, move=move, note=note)


def skip(reason: Reason, broker: str | None = None, note: str = "") -> Decision:
    return Decision(label=Label.SKIP, reason=reason, broker=broker, note=note)


@dataclass(frozen=True, slots=True)
class Shedder(ABC):
    """A shedding strategy: immutable settings in, one pure ``cycle`` per interval."""

    config: SheddingConfig

    #: The strategy's name as ``trimtab shed --strategy`` spells it.
    name = "abstract"

    def cycle(self, snapshot: LoadSnapshot, state: ShedderState, *, now: float) -> CycleResult:
        """Run one cycle at time ``now`` (seconds; the same clock as the load timestamps)."""
        grace = self.config.grace_period_minutes * 60.0
        recent = {b: t for b, t in state.recently_unloaded_bundles.items() if now - t <= grace}
        state = replace(state, recently_unloaded_bundles=frozen_map(recent))
        if snapshot.available is None:
            failed = Decision(
                label=Label.FAILURE, reason=Reason.UNKNOWN, note="could not read the registry"
            )
            return CycleResult(decisions=(failed,), state=state)
        result = self.decide(snapshot, state, now=now)
        moves = result.moves
        if not moves:
            return result
        bundles = dict(result.state.recently_unloaded_bundles)
        brokers = dict(result.state.recently_unloaded_brokers)
        for move in moves:
            bundles[move.bundle] = now
            brokers[move.source] = now
        stamped = replace(
            result.state,
            recently_unloaded_bundles=frozen_map(bundles),
            recently_unloaded_brokers=frozen_map(brokers),
        )
        return replace(result, state=stamped)

    @abstractmethod
    def decide(self, snapshot: LoadSnapshot, state: ShedderState, *, now: float) -> CycleResult:
        """The strategy's own step; ``snapshot.available`` is not None here."""
