"""The contract every shedder keeps, and the pieces they share.

Contract
    ``shedder.cycle(snapshot, state, now=...) -> CycleResult``. A cycle is pure: the result
    depends only on the arguments (and on the RNG a shedder is built with, if any). Around the
    strategy's own ``decide`` step, :meth:`Shedder.cycle` does what Pulsar's
    ``UnloadScheduler`` does: before it, bundles unloaded longer than
    ``loadBalancerSheddingGracePeriodMinutes`` ago are forgotten and the shared gate stops a
    cycle with no usable broker (:func:`~trimtab.shedding.gates.no_broker_gate`); after it,
    every moved bundle and every source broker is stamped with ``now``.

Shared pieces
    * :class:`LoadStats`: population mean and std with upstream's incremental update after an
      offload (the mean is kept, only the sum of squares changes).
    * :func:`eligible`: whether a bundle may be shed at all (grace period, policies, PIP-380
      excluded namespaces); :func:`transferable`: whether the broker filters let it go to a
      destination (or anywhere else); :func:`reportable`: which bundles a top-K report holds.
    * :func:`largest_first_until`, :func:`unload`: the modular shedders' pick and decision.

The gates every shedder passes (fresh brokers, the trigger and its hit count, a broker's sole
bundle) are in :mod:`trimtab.shedding.gates`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from trimtab.config.pulsar import SheddingConfig
from trimtab.shedding.decisions import (
    CycleResult,
    Decision,
    Label,
    Move,
    Reason,
    ShedderState,
    frozen_map,
    success,
)
from trimtab.shedding.filters import is_system_namespace
from trimtab.shedding.gates import UsableBrokers, no_broker_gate, usable_brokers
from trimtab.shedding.snapshot import BundleIndex, LoadSnapshot, namespace_of

__all__ = [
    "LoadStats",
    "Shedder",
    "eligible",
    "largest_first_until",
    "reportable",
    "transferable",
    "unload",
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
        try:
            total = math.fsum(values)
            sq_total = math.fsum(v * v for v in values)
        except OverflowError:
            total = sq_total = math.inf
        if not n:
            return cls(total, sq_total, n, 0.0, 0.0)
        if math.isfinite(sq_total):
            avg = total / n
            return cls(total, sq_total, n, avg, math.sqrt(max(0.0, sq_total / n - avg * avg)))
        # Loads so large that their squares overflow (a broken counter, 1e308 bits/s): the
        # same mean and std computed on values scaled down, so they stay finite, not 0 or NaN.
        scale = max(abs(v) for v in values)
        if not math.isfinite(scale):
            return cls(total, sq_total, n, math.inf, math.inf)
        scaled = [v / scale for v in values]
        mean = math.fsum(scaled) / n
        spread = math.fsum((v - mean) ** 2 for v in scaled) / n
        return cls(total, sq_total, n, mean * scale, math.sqrt(spread) * scale)

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


def eligible(index: BundleIndex, i: int, state: ShedderState, config: SheddingConfig) -> bool:
    """Whether bundle ``i`` may be shed: not recently unloaded, not under a policy (unless
    ``loadBalancerSheddingBundlesWithPoliciesEnabled``), not in an excluded namespace."""
    name = index.bundles.names[i]
    if name in state.recently_unloaded_bundles:
        return False
    if _has_policies(index, i) and not config.shed_bundles_with_policies:
        return False
    return not (config.excluded_namespaces and namespace_of(name) in config.excluded_namespaces)


def _has_policies(index: BundleIndex, i: int) -> bool:
    view = index.policies
    return bool(index.bundles.pinned[i]) or (
        view is not None and view.has_policies(index.bundles.names[i])
    )


def transferable(
    index: BundleIndex, i: int, config: SheddingConfig, *, destination: str | None
) -> bool:
    """Upstream ``isTransferable``: the broker filters (:mod:`~trimtab.shedding.filters`) let
    bundle ``i`` go to ``destination``, or (None) to some broker other than its owner. The
    candidates are the cycle's brokers (``index.brokers``). True when no policies are given."""
    view = index.policies
    if view is None:
        return True
    source = index.brokers[int(index.position[i])]
    name = index.bundles.names[i]
    return view.transferable(name, index.brokers, source, destination, config)


def reportable(index: BundleIndex, config: SheddingConfig) -> Callable[[int], bool]:
    """Whether a broker's top-K report holds bundle ``i`` (upstream ``TopKBundles``): not a
    system namespace, not excluded, and not under a policy unless policies may be shed.
    A predicate, so that only the bundles of the brokers a cycle polls are looked at."""
    excluded = frozenset(config.excluded_namespaces)
    names = index.bundles.names

    def keep(i: int) -> bool:
        ns = namespace_of(names[i])
        if ns in excluded or (ns.startswith("pulsar/") and is_system_namespace(ns)):
            return False
        return config.shed_bundles_with_policies or not _has_policies(index, i)

    return keep


def largest_first_until(
    index: BundleIndex,
    broker: int,
    amount: float,
    state: ShedderState,
    config: SheddingConfig,
) -> list[int]:
    """The modular shedders' pick: eligible bundles largest first while less than ``amount``
    is marked, and always at least one (so the last one may overshoot). A bundle without
    traffic is never picked: moving it frees nothing (upstream would take one once every
    busier bundle is marked and ``amount`` is still not reached)."""
    chosen: list[int] = []
    marked = 0.0
    for i in index.largest_first(broker, index.throughput).tolist():
        if not eligible(index, i, state, config):
            continue
        if not transferable(index, i, config, destination=None):
            continue
        if (chosen and marked >= amount) or index.throughput[i] <= 0:
            break
        chosen.append(i)
        marked += float(index.throughput[i])
    return chosen


def unload(
    index: BundleIndex, i: int, reason: Reason, note: str = "", *, destination: str | None = None
) -> Decision:
    """A Success decision for bundle ``i``; without a ``destination`` it is placed at the
    next lookup."""
    move = Move(
        bundle=index.bundles.names[i],
        source=index.brokers[int(index.position[i])],
        destination=destination,
        throughput=float(index.throughput[i]),
    )
    return success(reason, move, note)


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
        usable = usable_brokers(snapshot, now, self.config)
        if (stop := self.no_broker_gate(usable, state)) is not None:
            return stop
        result = self.decide(snapshot, usable, state, now=now)
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

    def no_broker_gate(self, usable: UsableBrokers, state: ShedderState) -> CycleResult | None:
        """The shared gate before :meth:`decide`: stop a cycle without a usable broker."""
        return no_broker_gate(usable, state)

    @abstractmethod
    def decide(
        self, snapshot: LoadSnapshot, usable: UsableBrokers, state: ShedderState, *, now: float
    ) -> CycleResult:
        """The strategy's own step, on the available brokers split by :func:`usable_brokers`
        (``usable.loads`` is never empty here)."""
