"""Where an unloaded bundle lands when its shedder names no destination.

The modular shedders (Threshold, Overload, Uniform) and the TransferShedder with
``loadBalancerTransferEnabled=false`` only unload; the bundle is placed again at its next
lookup. This module plays that lookup with Pulsar's ``LeastResourceUsageWithWeight``:

* candidates are brokers whose smoothed load plus
  ``loadBalancerAverageResourceUsageDifferenceThresholdPercentage`` (10 %) is at most the
  average; one is picked at random, and if there is none, any broker is picked at random;
* the unloading broker itself is never picked (the loop of PR #20822);
* every bundle of a cycle is placed on the same (stale) load data, as upstream does;
* with policies (:mod:`~trimtab.shedding.filters`), only brokers the filter pipeline keeps
  are candidates, and the average is theirs; a bundle no broker may take keeps no destination.

The RNG is injected, so the same seed gives the same placement.
"""

from __future__ import annotations

import random
from dataclasses import replace

from trimtab.config.pulsar import SheddingConfig
from trimtab.shedding.decisions import CycleResult, Decision
from trimtab.shedding.filters import BrokerFilterError
from trimtab.shedding.gates import usable_brokers
from trimtab.shedding.snapshot import LoadSnapshot

__all__ = ["assign_destinations", "least_resource_usage"]


def least_resource_usage(
    loads: dict[str, float], source: str, config: SheddingConfig, rng: random.Random
) -> str | None:
    """One destination for a bundle leaving ``source``, or None if there is no other broker."""
    others = sorted(b for b in loads if b != source)
    if not others:
        return None
    avg = sum(loads.values()) / len(loads)
    margin = config.average_resource_usage_difference_threshold_percentage / 100.0
    candidates = [b for b in others if loads[b] + margin <= avg]
    return rng.choice(candidates or others)


def assign_destinations(
    result: CycleResult,
    snapshot: LoadSnapshot,
    config: SheddingConfig,
    rng: random.Random,
    *,
    now: float,
) -> CycleResult:
    """The same result with a destination on every move that had none."""
    if all(d.move is None or d.move.destination is not None for d in result.decisions):
        return result
    loads = {b.broker: b.load for b in usable_brokers(snapshot, now, config).loads}
    policies = snapshot.policies
    view = policies.bind(*_ownership(snapshot)) if policies is not None else None
    decisions: list[Decision] = []
    for decision in result.decisions:
        move = decision.move
        if move is not None and move.destination is None:
            allowed = loads
            if view is not None:
                try:
                    kept = view.candidates(move.bundle, loads)
                except BrokerFilterError:
                    kept = frozenset()
                allowed = {b: x for b, x in loads.items() if b in kept or b == move.source}
            target = least_resource_usage(allowed, move.source, config, rng)
            decision = replace(decision, move=replace(move, destination=target))
        decisions.append(decision)
    return replace(result, decisions=tuple(decisions))


def _ownership(snapshot: LoadSnapshot) -> tuple[tuple[str, ...], list[str]]:
    bundles = snapshot.bundles
    return bundles.names, [bundles.owners[o] for o in bundles.owner.tolist()]
