"""Pulsar's AvgShedder (PIP-364; the modular load manager's default since PR #26609).

Goals
    Even out the highest and lowest loaded brokers pair by pair, and ride out load jitter by
    counting hits instead of smoothing the load (PIP-364 shows how a moving average
    over-unloads).

Constraints
    * A broker's score is its latest weighted max × 100, with no smoothing
      (:attr:`BrokerLoad.weighted_max`).
    * Hit counts are kept *per broker*, as upstream keeps them: a broker's count goes on while
      it keeps being paired at a gap of at least the low threshold, whoever its partner is.
    * Moves are sized in message rate or throughput, not in score: brokers of different sizes
      are pushed to equal traffic, so a big broker can stay far below the others' utilisation
      (its author's heterogeneous test). ``balanced`` sizes moves by capacity instead.
    * The destination is fixed when shedding (upstream binds its placement to the shedder).

Algorithm (upstream ``AvgShedder.findBundlesForUnloading``)
    1. Score the fresh brokers and sort them ascending.
    2. Pair them outside-in: lowest with highest, second lowest with second highest, …
       (an odd count pairs the middle broker with itself, a gap of 0).
    3. A pair whose gap is below ``loadBalancerAvgShedderLowThreshold`` (15) resets both
       brokers' counts. Otherwise both brokers count a hit, and a high hit when the gap is at
       least ``loadBalancerAvgShedderHighThreshold`` (40), else their high counts reset. No
       pair at all: every count resets.
    4. A pair unloads once either broker has ``…HitCountHighThreshold`` (2) high hits or
       ``…HitCountLowThreshold`` (8) hits; both brokers' counts then reset.
    5. Amount: ``(max − min)`` message rate × ``maxUnloadPercentage``; if that is not above
       ``minUnloadMessage``, the same on throughput; if that is not above
       ``minUnloadMessageThroughput``, the pair is skipped.
    6. The max broker's bundles largest first (by that unit): each one with traffic that still
       fits the amount is taken and subtracted; each goes to the pair's min broker.

Worked example (upstream ``AvgShedderTest.testHitHighThreshold``, ``maxUnloadPercentage`` 0.5):
cpu 80 %, 30 %, 50 %: the 80/30 pair is a high hit (gap 50); on the second cycle it unloads
(20,000 − 2,000) × 0.5 = 9,000 msg/s, ten 900 msg/s bundles, all to the 30 % broker.

Departures, each on purpose
    * Brokers are sorted by their exact score; upstream's comparator truncates the difference
      to an int, so brokers less than a point apart sort in map order.
    * A broker's sole bundle is never shed (upstream only logs a warning; its sole bundle
      never fits the amount unless the bundle and broker reports disagree).
    * Stale brokers (older than ``loadBalancerBrokerLoadDataTTLInSeconds``) are left out, as
      every trimtab shedder does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from trimtab.config.pulsar import SheddingConfig
from trimtab.shedding.base import LoadStats, Shedder, eligible, unload
from trimtab.shedding.decisions import (
    CycleResult,
    Decision,
    Reason,
    ShedderState,
    frozen_map,
    skip,
)
from trimtab.shedding.gates import UsableBrokers, sole_bundle_gate
from trimtab.shedding.load import BrokerLoad
from trimtab.shedding.snapshot import BundleIndex, FloatArray, LoadSnapshot

__all__ = ["AvgShedder", "Pair", "pairs_of"]


@dataclass(frozen=True, slots=True)
class Pair:
    """Step 2's pair: positions (in id order) of the lower and higher scored broker."""

    low: int
    high: int
    gap: float


def pairs_of(scores: list[float]) -> list[Pair]:
    """Outside-in pairs of ``scores`` sorted ascending (stable: id order breaks ties)."""
    order = sorted(range(len(scores)), key=lambda k: scores[k])
    pairs = []
    i, j = 0, len(order) - 1
    while i <= j:
        lo, hi = order[i], order[j]
        pairs.append(Pair(lo, hi, scores[hi] - scores[lo]))
        i, j = i + 1, j - 1
    return pairs


@dataclass(frozen=True, slots=True)
class AvgShedder(Shedder):
    """Outside-in pairs of unsmoothed scores, counted hits, half the traffic gap moved."""

    name = "avg"

    def decide(
        self, snapshot: LoadSnapshot, usable: UsableBrokers, state: ShedderState, *, now: float
    ) -> CycleResult:
        loads = usable.loads
        scores = [100.0 * b.weighted_max for b in loads]
        stats = LoadStats.of(b.weighted_max for b in loads)
        hits = _Hits(self.config, dict(state.hits_low), dict(state.hits_high))
        names = [b.broker for b in loads]
        hit = [p for p in pairs_of(scores) if hits.count((names[p.low], names[p.high]), p.gap)]
        index = BundleIndex.build(snapshot.bundles, names)
        moves: list[Decision] = []
        notes: list[Decision] = []
        for pair in hit:
            if hits.ready((names[pair.low], names[pair.high])):
                self._shed(index, loads, pair, state, moves, notes)
        if not hit:
            hits = _Hits(self.config, {}, {})
        state = replace(
            state,
            hits_low=frozen_map(hits.low),
            hits_high=frozen_map(hits.high),
            hit_count=int(max([*hits.low.values(), *hits.high.values()], default=0)),
        )
        if moves:
            return CycleResult(
                decisions=(*moves, *notes), state=state, avg=stats.avg, std=stats.std
            )
        note = self._idle_note(hit, names, hits)
        return CycleResult(
            decisions=(*notes, skip(Reason.HIT_COUNT, note=note)),
            state=state,
            avg=stats.avg,
            std=stats.std,
        )

    def _shed(
        self,
        index: BundleIndex,
        loads: tuple[BrokerLoad, ...],
        pair: Pair,
        state: ShedderState,
        moves: list[Decision],
        notes: list[Decision],
    ) -> None:
        """Steps 5-6 for a ready pair: its moves, or the note saying why there are none."""
        src, dst = loads[pair.high], loads[pair.low]
        sized = self._amount(index, src, dst)
        if isinstance(sized, str):
            notes.append(skip(Reason.NO_BUNDLES, src.broker, sized))
            return
        by, amount = sized
        if (sole := sole_bundle_gate(index, pair.high, src.broker)) is not None:
            notes.append(sole)
            return
        chosen = []
        for i in index.largest_first(pair.high, by).tolist():
            size = float(by[i])
            if 0 < size <= amount and eligible(index, i, state, self.config):
                chosen.append(i)
                amount -= size
        if not chosen:
            notes.append(skip(Reason.NO_BUNDLES, src.broker, "no bundle fits the amount"))
        moves.extend(unload(index, i, Reason.OVERLOADED, destination=dst.broker) for i in chosen)

    def _amount(
        self, index: BundleIndex, src: BrokerLoad, dst: BrokerLoad
    ) -> tuple[FloatArray, float] | str:
        """Step 5: (bundle column, amount) in msg/s or bytes/s; or why nothing is moved."""
        cfg = self.config
        share = cfg.max_unload_percentage
        rate = (src.msg_rate - dst.msg_rate) * share
        if rate > cfg.min_unload_message:
            return index.rate, rate
        tput = (src.throughput - dst.throughput) * share
        if tput > cfg.min_unload_message_throughput:
            return index.throughput, tput
        return (
            f"would move {rate:.0f} msg/s and {tput:.0f} bytes/s to {dst.broker}, not above "
            f"minUnloadMessage {cfg.min_unload_message} nor minUnloadMessageThroughput "
            f"{cfg.min_unload_message_throughput}"
        )

    def _idle_note(self, hit: list[Pair], names: list[str], hits: _Hits) -> str:
        cfg = self.config
        if not hit:
            return f"no pair {cfg.avg_low_threshold:g} points apart: balanced"
        top = max(hit, key=lambda p: p.gap)
        pair = (names[top.low], names[top.high])
        return (
            f"widest pair {pair[1]}/{pair[0]} {top.gap:.1f} points apart: "
            f"{max(hits.low.get(n, 0) for n in pair):g} of {cfg.avg_hit_count_low_threshold} "
            f"hits, {max(hits.high.get(n, 0) for n in pair):g} of "
            f"{cfg.avg_hit_count_high_threshold} high hits"
        )


@dataclass(slots=True)
class _Hits:
    """Steps 3-4: consecutive hits and high hits per broker (cycle-local, mutable)."""

    config: SheddingConfig
    low: dict[str, float]
    high: dict[str, float]

    def count(self, pair: tuple[str, str], gap: float) -> bool:
        """Step 3 for one pair: both brokers' counts advanced or reset; whether it is a hit."""
        if gap < self.config.avg_low_threshold:
            self.forget(pair)
            return False
        for name in pair:
            self.low[name] = self.low.get(name, 0) + 1
            if gap >= self.config.avg_high_threshold:
                self.high[name] = self.high.get(name, 0) + 1
            else:
                self.high.pop(name, None)
        return True

    def ready(self, pair: tuple[str, str]) -> bool:
        """Step 4: either broker has enough high hits or hits; if so both counts reset."""
        cfg = self.config
        due = any(
            self.high.get(n, 0) >= cfg.avg_hit_count_high_threshold
            or self.low.get(n, 0) >= cfg.avg_hit_count_low_threshold
            for n in pair
        )
        if due:
            self.forget(pair)
        return due

    def forget(self, pair: tuple[str, str]) -> None:
        for name in pair:
            self.low.pop(name, None)
            self.high.pop(name, None)
