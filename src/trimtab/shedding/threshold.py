"""Pulsar's ThresholdShedder (PIP-122; the modular load manager's default since 2.10).

Goals
    Unload any broker whose smoothed usage is more than a fixed margin above the average.

Constraints
    * A broker's score is its own moving average (``h = loadBalancerHistoryResourcePercentage``)
      of the weighted max, kept by the shedder (``ShedderState.scores``) and started from the
      first sample (early versions started at 0, #13119). A weighted max above 100 % is
      recomputed from the weighted signals at most 100 % (the others are taken as
      misconfigured limits).
    * A bundle without traffic, or one the broker filters keep on its broker, is passed over.
    * A broker's sole bundle is never shed; planned unloads below
      ``loadBalancerBundleUnloadMinThroughputThreshold`` (10 MB/s) are skipped.
    * It names no destination: bundles are placed at the next lookup.

Algorithm
    1. Update every fresh broker's score; ``avg`` = mean score (stop if 0).
    2. For each broker with ``score ≥ avg + t`` (t = 10 %): shed at least
       ``throughput × (score − avg − t + 5 %)``, bundles largest first, at least one.
    3. ``lowerBoundarySheddingEnabled`` (off): if nothing was selected and some broker is below
       ``avg − t``, shed ``throughput × t × 0.5`` from the highest-scoring broker that has more
       than one bundle (PR #17456).

Worked example (PIP-220 case 2): scores [0.5 × 5, 0] → avg 0.417; nobody is above 0.517, so
nothing moves, the new broker stays empty; with the lower boundary on, the 0 broker is below
0.317 and 5 % of a 50 % broker's throughput moves.

Deviation: upstream's lower-boundary pass recomputes the averages, folding the current sample
into the scores a second time in the same cycle; here each cycle folds it once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from trimtab.shedding.base import LoadStats, Shedder, largest_first_until, unload
from trimtab.shedding.decisions import CycleResult, Decision, Reason, ShedderState, frozen_map, skip
from trimtab.shedding.gates import UsableBrokers, sole_bundle_gate
from trimtab.shedding.load import BrokerLoad, ResourceWeights, ema
from trimtab.shedding.snapshot import BundleIndex, LoadSnapshot

__all__ = ["MB", "ThresholdShedder"]

MB = 1024.0 * 1024.0
MARGIN = 0.05
LOWER_BOUNDARY_MARGIN = 0.5


@dataclass(frozen=True, slots=True)
class ThresholdShedder(Shedder):
    """Shed brokers more than ``loadBalancerBrokerThresholdShedderPercentage`` above average."""

    name = "threshold"

    def decide(
        self, snapshot: LoadSnapshot, usable: UsableBrokers, state: ShedderState, *, now: float
    ) -> CycleResult:
        cfg = self.config
        weights = ResourceWeights.of(cfg)
        h = cfg.history_resource_percentage
        scores = {
            b.broker: ema(state.scores.get(b.broker), b.weighted_max_within_limit(weights), h)
            for b in usable.loads
        }
        state = replace(state, scores=frozen_map(scores))
        stats = LoadStats.of(scores.values())
        avg, std = stats.avg, stats.std
        if avg == 0:
            note = "average resource usage is 0"
            return CycleResult(
                decisions=(skip(Reason.HIT_COUNT, note=note),), state=state, avg=avg, std=std
            )
        threshold = cfg.threshold_shedder_percentage / 100.0
        min_throughput = cfg.bundle_unload_min_throughput_mb * MB
        index = BundleIndex.build(
            snapshot.bundles, [b.broker for b in usable.loads], snapshot.policies
        )
        moves: list[Decision] = []
        notes: list[Decision] = []
        for pos, load in enumerate(usable.loads):
            score = scores[load.broker]
            if score < avg + threshold:
                continue
            amount = load.throughput * (score - avg - threshold + MARGIN)
            if amount < min_throughput:
                minimum = min_throughput / MB
                note = f"would shed {amount / MB:.1f} MB/s, below the {minimum:g} MB/s minimum"
                notes.append(skip(Reason.NO_BUNDLES, load.broker, note))
            elif (sole := sole_bundle_gate(index, pos, load.broker)) is not None:
                notes.append(sole)
            else:
                chosen = largest_first_until(index, pos, amount, state, cfg)
                moves.extend(unload(index, i, Reason.OVERLOADED) for i in chosen)
        if not moves and cfg.lower_boundary_shedding_enabled:
            moves.extend(self._lower_boundary(index, usable.loads, scores, avg, state))
        if not moves:
            note = f"no broker above avg {avg:.3f} + {threshold:g}"
            return CycleResult(
                decisions=(*notes, skip(Reason.HIT_COUNT, note=note)), state=state, avg=avg, std=std
            )
        return CycleResult(decisions=(*moves, *notes), state=state, avg=avg, std=std)

    def _lower_boundary(
        self,
        index: BundleIndex,
        loads: tuple[BrokerLoad, ...],
        scores: dict[str, float],
        avg: float,
        state: ShedderState,
    ) -> list[Decision]:
        """PR #17456: some broker is far below average, so shed a little from the top one."""
        cfg = self.config
        threshold = cfg.threshold_shedder_percentage / 100.0
        if not any(s < avg - threshold for s in scores.values()):
            return []
        best, best_score = -1, avg - threshold
        for pos, load in enumerate(loads):
            if scores[load.broker] > best_score and index.count(pos) > 1:
                best, best_score = pos, scores[load.broker]
        if best < 0:
            return []
        amount = loads[best].throughput * threshold * LOWER_BOUNDARY_MARGIN
        if amount < cfg.bundle_unload_min_throughput_mb * MB:
            return []
        chosen = largest_first_until(index, best, amount, state, cfg)
        return [unload(index, i, Reason.UNDERLOADED, "lower-boundary shedding") for i in chosen]
