"""``balanced``: the TransferShedder's goal and signals, reached in far fewer cycles.

Goals
    The same target (population std of smoothed loads ≤ ``loadBalancerBrokerLoadTargetStd``,
    plus the underloaded/overloaded rules), in a handful of cycles instead of tens, without
    moving more traffic. PIP-220's own analysis (reference §3) says the lever is parallelism,
    not the per-step rule; the 4-hit reset and the 180 s cooldown after every unload are what
    make upstream take hours at 1,000 brokers.

Constraints
    * Pairs are disjoint: each broker is a source or a destination, once per cycle, so no
      bundle moves twice and no broker both sends and receives.
    * Bundles: the top-K report only (the information upstream has), not recently unloaded,
      not under a policy; a source keeps at least one bundle.
    * Pure: the only memory is :class:`~trimtab.shedding.decisions.ShedderState`.

Algorithm
    1. **Predicted loads.** Start from each fresh broker's smoothed load and add what its own
       recent moves will still do to it: a move changes the instantaneous load by ``δ`` at
       once, and each later sample folds ``1 − h`` of it into the average, so ``δ·h^k`` is
       still to come after ``k`` samples. Throughput EMAs are predicted the same way. No
       cooldown is needed: a broker's next report is read with its pending moves added.
    2. **Gate.** Same trigger as upstream (std above target, min underloaded, max
       overloaded) and the same hit count, but the count is *not* reset by our own moves, so
       a real imbalance is acted on every cycle until it is gone.
    3. **Pairs.** Brokers above the mean, most loaded first, are matched with brokers below
       it, least loaded first: all disjoint pairs, not three. A pair is skipped when the
       std is already at target and neither rule fires (as upstream).
    4. **Amount, capacity-aware.** ``x* = (L_s − L_d) / (r_s + r_d)`` bytes/s equalises the
       pair, where ``r`` is each broker's load per byte/s (:func:`load_per_byte`): a small
       broker gains more load per byte than a big one.
    5. **Bundles by knapsack.** The subset of candidate bundles whose total is closest to
       ``x*`` (:func:`closest_subset`), instead of smallest-first until the first overshoot.

Worked example: loads [0.9, 0.8, 0.1, 0.0] (same capacity), std 0.41. Pairs (0.9, 0.0) and
(0.8, 0.1) both move half their gap in the first cycle → [0.45, 0.45, 0.45, 0.45] with exact
bundles; upstream does the same two pairs but then waits 4+ cycles before looking again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from trimtab.shedding.base import (
    LoadStats,
    Shedder,
    eligible,
    hit_note,
    is_overloaded,
    is_underloaded,
    skip,
    success,
    usable_brokers,
)
from trimtab.shedding.decisions import (
    CycleResult,
    Decision,
    Move,
    Prediction,
    Reason,
    ShedderState,
)
from trimtab.shedding.knapsack import closest_subset
from trimtab.shedding.load import BrokerLoad
from trimtab.shedding.predict import load_per_byte
from trimtab.shedding.snapshot import BundleIndex, LoadSnapshot

__all__ = ["BalancedShedder", "pending"]

#: Predictions smaller than this (in load units) are dropped.
NEGLIGIBLE = 1e-4


def pending(
    loads: tuple[BrokerLoad, ...], predictions: tuple[Prediction, ...], history: float
) -> tuple[dict[str, tuple[float, float]], tuple[Prediction, ...]]:
    """Per broker, the (load, throughput) change still to come; and the predictions to keep."""
    by_broker = {b.broker: b for b in loads}
    todo: dict[str, tuple[float, float]] = {}
    kept: list[Prediction] = []
    for p in predictions:
        load = by_broker.get(p.broker)
        if load is None:
            continue
        factor = history ** max(0, load.samples - p.samples)
        if abs(p.delta) * factor < NEGLIGIBLE:
            continue
        kept.append(p)
        d_load, d_tput = todo.get(p.broker, (0.0, 0.0))
        todo[p.broker] = (d_load + p.delta * factor, d_tput + p.throughput * factor)
    return todo, tuple(kept)


@dataclass(frozen=True, slots=True)
class BalancedShedder(Shedder):
    """All disjoint above/below-mean pairs, knapsack bundles, predicted loads."""

    name = "balanced"

    def decide(self, snapshot: LoadSnapshot, state: ShedderState, *, now: float) -> CycleResult:
        cfg = self.config
        usable = usable_brokers(snapshot, now, cfg)
        notes = [skip(Reason.OUTDATED_DATA, b, "stale load data; left out") for b in usable.stale]
        notes += [
            skip(Reason.NO_LOAD_DATA, b, "not reported yet; left out") for b in usable.missing
        ]
        if not usable.loads:
            reason = Reason.OUTDATED_DATA if usable.stale else Reason.NO_BROKERS
            return CycleResult(decisions=(*notes, skip(reason)), state=state)
        loads = usable.loads
        todo, kept = pending(loads, state.predictions, cfg.history_resource_percentage)
        level = np.array([b.load + todo.get(b.broker, (0.0, 0.0))[0] for b in loads])
        tput_ema = np.array(
            [b.msg_throughput_ema + todo.get(b.broker, (0.0, 0.0))[1] for b in loads]
        )
        stats = LoadStats.of(level.tolist())
        avg, std = stats.avg, stats.std
        order = np.argsort(level, kind="stable")
        top, bottom = int(order[-1]), int(order[0])

        def underloaded(i: int, reference: int) -> bool:
            return is_underloaded(
                float(level[i]), float(tput_ema[i]), avg, float(tput_ema[reference]), cfg
            )

        trigger = (
            std > cfg.target_std
            or underloaded(bottom, top)
            or is_overloaded(float(level[top]), avg, cfg)
        )
        hit = state.hit_count + 1 if trigger else 0
        state = replace(state, hit_count=hit, predictions=kept)
        if hit <= cfg.hit_count_threshold:
            note = hit_note(hit, std, cfg)
            return CycleResult(
                decisions=(*notes, skip(Reason.HIT_COUNT, note=note)),
                state=state,
                avg=avg,
                std=std,
                std_after=std,
            )
        ratio = load_per_byte(loads)
        index = BundleIndex.build(snapshot.bundles, [b.broker for b in loads])
        above = [int(i) for i in order[::-1] if level[i] > avg]
        below = [int(i) for i in order if level[i] < avg]
        moves: list[Decision] = []
        new: list[Prediction] = []
        d = 0
        for s in above:
            if d >= len(below):
                break
            t = below[d]
            if stats.std > cfg.target_std:
                reason = Reason.OVERLOADED
            elif underloaded(t, s):
                reason = Reason.UNDERLOADED
            elif is_overloaded(float(level[s]), avg, cfg):
                reason = Reason.OVERLOADED
            else:
                break
            src, dst = loads[s], loads[t]
            r_s, r_d = ratio[src.broker], ratio[dst.broker]
            if r_s + r_d <= 0 or level[s] <= level[t]:
                continue
            chosen = self._bundles(index, s, float(level[s] - level[t]) / (r_s + r_d), state)
            if not chosen:
                notes.append(skip(Reason.NO_BUNDLES, src.broker, "no top bundle fits the offload"))
                continue
            moved = float(sum(index.throughput[i] for i in chosen))
            for i in chosen:
                move = Move(
                    bundle=index.bundles.names[i],
                    source=src.broker,
                    destination=dst.broker,
                    throughput=float(index.throughput[i]),
                )
                moves.append(success(reason, move))
            for pos, load, sign, r in ((s, src, -1.0, r_s), (t, dst, 1.0, r_d)):
                old = float(level[pos])
                level[pos] = max(0.0, old + sign * moved * r)
                tput_ema[pos] += sign * moved
                stats.replace(old, float(level[pos]))
                new.append(
                    Prediction(
                        broker=load.broker,
                        delta=float(level[pos]) - old,
                        throughput=sign * moved,
                        at=now,
                        samples=load.samples,
                    )
                )
            d += 1
        if not moves:
            reason = (
                Reason.NO_BUNDLES
                if any(n.reason is Reason.NO_BUNDLES for n in notes)
                else Reason.HIT_COUNT
            )
            return CycleResult(
                decisions=(*notes, skip(reason, note=f"std {std:.3f}")),
                state=state,
                avg=avg,
                std=std,
                std_after=stats.std,
            )
        state = replace(state, predictions=kept + tuple(new))
        return CycleResult(
            decisions=(*moves, *notes), state=state, avg=avg, std=std, std_after=stats.std
        )

    def _bundles(
        self, index: BundleIndex, broker: int, amount: float, state: ShedderState
    ) -> list[int]:
        """Knapsack over the broker's eligible top-K bundles; the broker keeps one bundle."""
        cfg = self.config
        count = index.count(broker)
        if count <= 1:
            return []
        candidates = [
            i
            for i in index.top_k(broker, cfg.max_bundles_in_load_report).tolist()
            if index.throughput[i] > 0 and eligible(index, i, state, cfg)
        ]
        if not candidates:
            return []
        sizes = index.throughput[np.array(candidates, dtype=np.intp)]
        picked = [candidates[k] for k in closest_subset(sizes, amount)]
        if len(picked) >= count:  # never empty a broker: keep its smallest pick
            picked = sorted(picked, key=lambda i: float(index.throughput[i]))[1:]
        return picked
