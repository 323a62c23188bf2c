"""Pulsar's OverloadShedder (modular load manager): shed only brokers past a fixed usage.

Goals
    Take load off any broker whose current usage has crossed the overload threshold.

Constraints
    * Usage is the *unweighted* max of cpu, direct memory and bandwidth of the latest report,
      with no moving average.
    * A broker's sole bundle is never shed; no destination is named.
    * Underloaded brokers play no part: a new, empty broker gets nothing until some broker
      passes the threshold (the PIP-220 motivation).

Algorithm
    For every broker with ``usage ≥ loadBalancerBrokerOverloadedThresholdPercentage`` (85 %):
    shed at least ``throughput × (usage − 0.85 + 0.05)``, bundles largest first, at least one.

Worked example: a broker at 95 % with 100 MB/s sheds at least 15 MB/s; brokers at
[50 % × 5, 0 %] (PIP case 2) shed nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from trimtab.shedding.base import LoadStats, Shedder, largest_first_until, unload
from trimtab.shedding.decisions import CycleResult, Decision, Reason, ShedderState, skip
from trimtab.shedding.gates import UsableBrokers, sole_bundle_gate
from trimtab.shedding.snapshot import BundleIndex, LoadSnapshot

__all__ = ["OverloadShedder"]

MARGIN = 0.05


@dataclass(frozen=True, slots=True)
class OverloadShedder(Shedder):
    """Shed what is above the overload threshold, plus a 5 % margin."""

    name = "overload"

    def decide(
        self, snapshot: LoadSnapshot, usable: UsableBrokers, state: ShedderState, *, now: float
    ) -> CycleResult:
        cfg = self.config
        stats = LoadStats.of(b.max_usage for b in usable.loads)
        threshold = cfg.overloaded_threshold_percentage / 100.0
        index = BundleIndex.build(
            snapshot.bundles, [b.broker for b in usable.loads], snapshot.policies
        )
        moves: list[Decision] = []
        notes: list[Decision] = []
        for pos, load in enumerate(usable.loads):
            usage = load.max_usage
            if usage < threshold:
                continue
            if (sole := sole_bundle_gate(index, pos, load.broker)) is not None:
                notes.append(sole)
                continue
            amount = load.throughput * (usage - threshold + MARGIN)
            chosen = largest_first_until(index, pos, amount, state, cfg)
            moves.extend(unload(index, i, Reason.OVERLOADED) for i in chosen)
        if not moves:
            note = f"no broker at or above {threshold:.0%}"
            return CycleResult(
                decisions=(*notes, skip(Reason.HIT_COUNT, note=note)),
                state=state,
                avg=stats.avg,
                std=stats.std,
            )
        return CycleResult(decisions=(*moves, *notes), state=state, avg=stats.avg, std=stats.std)
