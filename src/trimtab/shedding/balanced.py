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
       std is already at target and neither rule fires (as upstream), except for the
       *spread rule*: in a cycle upstream's trigger leaves alone, pairs at least
       ``loadBalancerAvgShedderLowThreshold`` (15) points apart still move, so the
       utilisation range closes too (AvgShedder's criterion, read on the smaller of the
       smoothed and the raw gap: noise the average absorbs does not trigger it, nor a spike
       or dip the average still remembers; such a pair moves that smaller gap's worth).
       Step 2 counts the extreme pair's spread as a hit, and a spread of ``…HighThreshold``
       (40) points acts after ``…HitCountHighThreshold`` (2) hits when that is sooner than
       upstream's count.
    4. **Amount, capacity-aware.** ``x* = (L_s − L_d) / (r_s + r_d)`` bytes/s equalises the
       pair, where ``r`` is each broker's load per byte/s (:func:`load_per_byte`): a small
       broker gains more load per byte than a big one.
    5. **Bundles by knapsack.** The subset of candidate bundles whose total is closest to
       ``x*`` (:func:`closest_subset`), instead of smallest-first until the first overshoot.
    6. **Trades.** A spread pair whose source holds only bundles too big to send alone (a
       small broker left with one or two large bundles) trades with one of the next
       :data:`TRADE_PARTNERS` brokers below the mean: one bundle out, at most
       :data:`TRADE_BACK` smaller ones back, the net closest to ``x*``, and only if that at
       least halves the pair's gap. Upstream's trigger never trades: a hot bundle that comes
       and goes would be passed from broker to broker.

In the code: :meth:`Levels.predicted` (1), :meth:`BalancedShedder._gate` (2, with the shared
gates of :mod:`trimtab.shedding.gates`), :meth:`~BalancedShedder._match` (3), :func:`_amount`
(4), :meth:`~BalancedShedder._bundles` (5), :meth:`~BalancedShedder._trade` (6).

Worked example: loads [0.9, 0.8, 0.1, 0.0] (same capacity), std 0.41. Pairs (0.9, 0.0) and
(0.8, 0.1) both move half their gap in the first cycle → [0.45, 0.45, 0.45, 0.45] with exact
bundles; upstream does the same two pairs but then waits 4+ cycles before looking again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations

import numpy as np

from trimtab.shedding.base import LoadStats, Shedder, eligible, reportable, transferable
from trimtab.shedding.decisions import (
    CycleResult,
    Decision,
    Move,
    Prediction,
    Reason,
    ShedderState,
    skip,
    success,
)
from trimtab.shedding.gates import (
    Level,
    UsableBrokers,
    count_hits,
    hit_count_gate,
    no_broker_gate,
    pair_reason,
)
from trimtab.shedding.knapsack import closest_subset
from trimtab.shedding.load import BrokerLoad
from trimtab.shedding.predict import load_per_byte
from trimtab.shedding.snapshot import BundleIndex, FloatArray, LoadSnapshot

__all__ = ["BalancedShedder", "Levels", "pending"]

#: Predictions smaller than this (in load units) are dropped.
NEGLIGIBLE = 1e-4

#: Step 6: brokers below the mean a source may trade with, the bundles it may take back,
#: and the most a trade may miss the even point by (a share of the amount: 0.5 halves the
#: pair's gap at least).
TRADE_PARTNERS = 8
TRADE_BACK = 2
TRADE_GAIN = 0.5


def pending(
    loads: tuple[BrokerLoad, ...], predictions: tuple[Prediction, ...], history: float
) -> tuple[dict[str, tuple[float, float, float]], tuple[Prediction, ...]]:
    """Per broker, the (smoothed load, throughput, raw load) change still to come; and the
    predictions to keep. A move shows in full in the raw load at the broker's next sample."""
    by_broker = {b.broker: b for b in loads}
    todo: dict[str, tuple[float, float, float]] = {}
    kept: list[Prediction] = []
    for p in predictions:
        load = by_broker.get(p.broker)
        if load is None:
            continue
        factor = history ** max(0, load.samples - p.samples)
        if abs(p.delta) * factor < NEGLIGIBLE:
            continue
        kept.append(p)
        d_load, d_tput, d_raw = todo.get(p.broker, (0.0, 0.0, 0.0))
        unseen = p.delta if load.samples <= p.samples else 0.0
        todo[p.broker] = (d_load + p.delta * factor, d_tput + p.throughput * factor, d_raw + unseen)
    return todo, tuple(kept)


@dataclass(slots=True)
class Levels:
    """Step 1's predicted load and throughput EMA of each usable broker (id order), with their
    stats; a matched pair shifts them in place (cycle-local and mutable on purpose)."""

    loads: tuple[BrokerLoad, ...]
    level: FloatArray
    tput_ema: FloatArray
    stats: LoadStats
    #: The last sample's load (no smoothing) plus the moves not sampled yet: the spread rule
    #: reads the smaller of this gap and the smoothed one (a spike or a dip that the average
    #: still remembers is not a spread).
    raw: FloatArray

    @classmethod
    def predicted(
        cls, loads: tuple[BrokerLoad, ...], todo: dict[str, tuple[float, float, float]]
    ) -> Levels:
        """Each broker's smoothed load and EMA plus what its recent moves will still do."""
        none = (0.0, 0.0, 0.0)
        level = np.array([b.load + todo.get(b.broker, none)[0] for b in loads])
        tput_ema = np.array([b.msg_throughput_ema + todo.get(b.broker, none)[1] for b in loads])
        raw = np.array([b.weighted_max + todo.get(b.broker, none)[2] for b in loads])
        return cls(loads, level, tput_ema, LoadStats.of(level.tolist()), raw)

    def gap(self, s: int, t: int) -> float:
        """How far ``s`` is above ``t``: the smaller of the smoothed and the raw gap."""
        return float(min(self.level[s] - self.level[t], self.raw[s] - self.raw[t]))

    def at(self, i: int) -> Level:
        return Level(float(self.level[i]), float(self.tput_ema[i]))

    def shift(self, i: int, throughput: float, ratio: float, *, now: float) -> Prediction:
        """Move ``throughput`` bytes/s onto broker ``i`` (off it when negative); the
        prediction of what the move will still do to its reports."""
        old = float(self.level[i])
        self.level[i] = max(0.0, old + throughput * ratio)
        self.raw[i] = max(0.0, float(self.raw[i]) + throughput * ratio)
        self.tput_ema[i] += throughput
        self.stats.replace(old, float(self.level[i]))
        load = self.loads[i]
        return Prediction(
            broker=load.broker,
            delta=float(self.level[i]) - old,
            throughput=throughput,
            at=now,
            samples=load.samples,
        )


@dataclass(slots=True)
class _Matching:
    """What steps 3-6 produce: the moves, the skips on the way, and the new predictions."""

    moves: list[Decision]
    notes: list[Decision]
    predictions: list[Prediction]

    def record(
        self,
        levels: Levels,
        index: BundleIndex,
        pair: tuple[int, int],
        reason: Reason,
        ratio: dict[str, float],
        *,
        out: list[int],
        back: tuple[int, ...] = (),
        now: float,
    ) -> None:
        """The pair's moves (``out`` to the destination, and for a trade ``back`` from it),
        and both brokers shifted by the net bytes/s."""
        src, dst = (levels.loads[i] for i in pair)
        note = f"trade with {dst.broker}" if back else ""
        moves = [(i, src.broker, dst.broker) for i in out]
        moves += [(i, dst.broker, src.broker) for i in back]
        for i, source, destination in moves:
            move = Move(
                bundle=index.bundles.names[i],
                source=source,
                destination=destination,
                throughput=float(index.throughput[i]),
            )
            self.moves.append(success(reason, move, note))
        net = float(sum(index.throughput[i] for i in out) - sum(index.throughput[i] for i in back))
        self.predictions.append(levels.shift(pair[0], -net, ratio[src.broker], now=now))
        self.predictions.append(levels.shift(pair[1], net, ratio[dst.broker], now=now))


@dataclass(frozen=True, slots=True)
class BalancedShedder(Shedder):
    """All disjoint above/below-mean pairs, knapsack bundles, predicted loads."""

    name = "balanced"

    def no_broker_gate(self, usable: UsableBrokers, state: ShedderState) -> CycleResult | None:
        """The shared gate, with a Skip for each broker left out and no note of its own."""
        return no_broker_gate(usable, state, notes=_left_out(usable), note="")

    def decide(
        self, snapshot: LoadSnapshot, usable: UsableBrokers, state: ShedderState, *, now: float
    ) -> CycleResult:
        notes = _left_out(usable)
        todo, kept = pending(
            usable.loads, state.predictions, self.config.history_resource_percentage
        )
        levels = Levels.predicted(usable.loads, todo)  # step 1
        avg, std = levels.stats.avg, levels.stats.std
        state, count, needed = self._gate(levels, state)  # step 2
        state = replace(state, predictions=kept)
        gate = replace(self.config, hit_count_threshold=needed - 1)
        counted = replace(state, hit_count=count)
        if (held := hit_count_gate(counted, gate, avg=avg, std=std, notes=notes)) is not None:
            return replace(held, state=state)
        index = BundleIndex.build(
            snapshot.bundles, [b.broker for b in usable.loads], snapshot.policies
        )
        matching = self._match(levels, index, state, avg, notes, now=now)  # steps 3-5
        if not matching.moves:
            return self._nothing_moved(matching, state, avg, std, levels.stats.std)
        return CycleResult(
            decisions=(*matching.moves, *matching.notes),
            state=replace(state, predictions=kept + tuple(matching.predictions)),
            avg=avg,
            std=std,
            std_after=levels.stats.std,
        )

    def _gate(self, levels: Levels, state: ShedderState) -> tuple[ShedderState, int, int]:
        """Step 2: the state with both runs of hits advanced (our moves never reset them), the
        run that decides, and the hits it needs.

        Upstream's trigger on the extreme brokers counts in ``hit_count`` and acts after
        upstream's count (or after ``…HitCountHighThreshold`` hits when the spread is wide).
        The spread rule alone counts in ``spread_hits`` and, like AvgShedder, waits for
        ``…HitCountLowThreshold`` (8) hits in a row, or ``…HitCountHighThreshold`` (2) when
        wide: a hysteresis gate, so a spread that comes and goes never moves a bundle.
        ``hit_count`` runs while either fires, so a plan knows the condition is still on.
        """
        cfg = self.config
        order = np.argsort(levels.level, kind="stable")
        bottom, top = levels.at(int(order[0])), levels.at(int(order[-1]))
        stats = levels.stats
        spread = levels.gap(int(order[-1]), int(order[0]))
        upstream = pair_reason(stats.std, stats.avg, bottom, top, cfg) is not None
        spreads = spread >= cfg.avg_low_threshold / 100.0
        wide = spread >= cfg.avg_high_threshold / 100.0
        state = replace(
            count_hits(state, upstream or spreads),
            spread_hits=state.spread_hits + 1 if spreads else 0,
        )
        if upstream:
            needed = cfg.hit_count_threshold + 1
            if wide:  # a wide spread shortens the wait, never lengthens it
                needed = min(needed, cfg.avg_hit_count_high_threshold)
            return state, state.hit_count, needed
        needed = cfg.avg_hit_count_high_threshold if wide else cfg.avg_hit_count_low_threshold
        return state, state.spread_hits, needed

    def _match(
        self,
        levels: Levels,
        index: BundleIndex,
        state: ShedderState,
        avg: float,
        notes: tuple[Decision, ...],
        *,
        now: float,
    ) -> _Matching:
        """Step 3: brokers above the mean, most loaded first, each with the next broker below
        it, least loaded first, while a rule still fires; steps 4-5 for each pair."""
        order = np.argsort(levels.level, kind="stable")
        above = [int(i) for i in order[::-1] if levels.level[i] > avg]
        below = [int(i) for i in order if levels.level[i] < avg]
        ratio = load_per_byte(levels.loads)
        # The spread rule drives only cycles that upstream's trigger leaves alone: the std
        # target is reached first at upstream's cost in traffic, the range closed after.
        bottom, top = levels.at(int(order[0])), levels.at(int(order[-1]))
        spread = pair_reason(levels.stats.std, avg, bottom, top, self.config) is None
        matching = _Matching([], list(notes), [])
        free = list(below)  # destinations not matched yet, least loaded first
        for s in above:
            if not free:
                break
            t = free[0]
            reason = pair_reason(levels.stats.std, avg, levels.at(t), levels.at(s), self.config)
            by_spread = reason is None and spread and self._spread(levels, s, t)
            if by_spread:
                reason = Reason.OVERLOADED
            if reason is None:
                break
            # step 4; a spread is closed by the smaller of its two gaps
            amount = _amount(levels, s, t, ratio, raw=by_spread)
            if amount is None:
                continue
            destination = levels.loads[t].broker
            chosen = self._bundles(index, s, amount, state, destination)  # step 5
            if chosen:
                matching.record(levels, index, (s, t), reason, ratio, out=chosen, now=now)
                free.remove(t)
                continue
            traded = (
                self._trade(levels, index, s, free[:TRADE_PARTNERS], state, ratio)  # step 6
                if by_spread
                else None
            )
            if traded is None:
                source = levels.loads[s].broker
                matching.notes.append(
                    skip(Reason.NO_BUNDLES, source, "no top bundle fits the offload")
                )
                continue
            partner, out, back = traded
            matching.record(
                levels, index, (s, partner), reason, ratio, out=[out], back=back, now=now
            )
            free.remove(partner)
        return matching

    def _trade(
        self,
        levels: Levels,
        index: BundleIndex,
        s: int,
        partners: list[int],
        state: ShedderState,
        ratio: dict[str, float],
    ) -> tuple[int, int, tuple[int, ...]] | None:
        """Step 6: when every bundle of ``s`` is too big to send alone, one bundle out and at
        most :data:`TRADE_BACK` smaller ones back, with one of the first ``partners``; the
        trade that leaves the pair closest to even, made only if it at least halves the
        pair's gap (so noise never pays for a trade). (partner, out, back) or None."""
        best: tuple[float, int, int, tuple[int, ...]] | None = None
        for t in partners:
            amount = _amount(levels, s, t, ratio, raw=True)
            if amount is None:
                continue
            dst, src = levels.loads[t].broker, levels.loads[s].broker
            out = self._candidates(index, s, state, dst)
            back = self._candidates(index, t, state, src)
            if not out or not back:
                continue
            found = _closest_trade(index.throughput, out, back, amount)
            if found is None:
                continue
            miss, o, returned = found
            if miss <= TRADE_GAIN * amount and (best is None or miss < best[0]):
                best = (miss, t, o, returned)
        if best is None:
            return None
        return best[1], best[2], best[3]

    def _candidates(
        self, index: BundleIndex, broker: int, state: ShedderState, destination: str
    ) -> list[int]:
        """The broker's top-K bundles that may move to ``destination`` now."""
        cfg = self.config
        return [
            i
            for i in index.top_k(
                broker, cfg.max_bundles_in_load_report, reportable(index, cfg)
            ).tolist()
            if index.throughput[i] > 0
            and eligible(index, i, state, cfg)
            and transferable(index, i, cfg, destination=destination)
        ]

    def _spread(self, levels: Levels, s: int, t: int) -> bool:
        """The spread rule: the pair is ``loadBalancerAvgShedderLowThreshold`` points apart,
        smoothed and raw."""
        return levels.gap(s, t) >= self.config.avg_low_threshold / 100.0

    def _bundles(
        self,
        index: BundleIndex,
        broker: int,
        amount: float,
        state: ShedderState,
        destination: str,
    ) -> list[int]:
        """Step 5: knapsack over the broker's eligible top-K bundles that the broker filters
        let go to ``destination``; the broker keeps one."""
        count = index.count(broker)
        if count <= 1:
            return []
        candidates = self._candidates(index, broker, state, destination)
        if not candidates:
            return []
        sizes = index.throughput[np.array(candidates, dtype=np.intp)]
        picked = [candidates[k] for k in closest_subset(sizes, amount)]
        if len(picked) >= count:  # never empty a broker: keep its smallest pick
            picked = sorted(picked, key=lambda i: float(index.throughput[i]))[1:]
        return picked

    @staticmethod
    def _nothing_moved(
        matching: _Matching, state: ShedderState, avg: float, std: float, std_after: float
    ) -> CycleResult:
        """No pair moved: NoBundles if some source had none that fit, else HitCount."""
        notes = matching.notes
        no_bundles = any(n.reason is Reason.NO_BUNDLES for n in notes)
        reason = Reason.NO_BUNDLES if no_bundles else Reason.HIT_COUNT
        return CycleResult(
            decisions=(*notes, skip(reason, note=f"std {std:.3f}")),
            state=state,
            avg=avg,
            std=std,
            std_after=std_after,
        )


def _amount(
    levels: Levels, s: int, t: int, ratio: dict[str, float], *, raw: bool = False
) -> float | None:
    """Step 4: the bytes/s ``x* = (L_s − L_d) / (r_s + r_d)`` that equalise the pair (with
    ``raw``, the smaller of the smoothed and the raw gap), or None when the source is not
    above the destination or neither gains load from bytes."""
    r_s, r_d = ratio[levels.loads[s].broker], ratio[levels.loads[t].broker]
    gap = levels.gap(s, t) if raw else float(levels.level[s] - levels.level[t])
    if r_s + r_d <= 0 or gap <= 0:
        return None
    return gap / (r_s + r_d)


def _closest_trade(
    sizes: FloatArray, out: list[int], back: list[int], amount: float
) -> tuple[float, int, tuple[int, ...]] | None:
    """The trade (one of ``out`` for at most :data:`TRADE_BACK` of ``back``, each of them
    smaller than the one sent) whose net comes closest to ``amount``, the net positive:
    (miss, out bundle, back bundles)."""
    back_sizes = sizes[np.array(back, dtype=np.intp)]
    combos = [c for r in range(1, TRADE_BACK + 1) for c in combinations(range(len(back)), r)]
    totals = np.array([back_sizes[list(c)].sum() for c in combos])
    largest = np.array([back_sizes[list(c)].max() for c in combos])
    best: tuple[float, int, tuple[int, ...]] | None = None
    for o in out:
        net = float(sizes[o]) - totals
        ok = (largest < sizes[o]) & (net > 0)  # two smaller bundles may still outweigh it
        if not ok.any():
            continue
        miss = np.where(ok, np.abs(net - amount), np.inf)
        k = int(np.argmin(miss))
        if best is None or miss[k] < best[0]:
            best = (float(miss[k]), o, tuple(back[j] for j in combos[k]))
    return best


def _left_out(usable: UsableBrokers) -> tuple[Decision, ...]:
    """A Skip for each available broker left out of the cycle, stale ones first."""
    stale = [skip(Reason.OUTDATED_DATA, b, "stale load data; left out") for b in usable.stale]
    missing = [skip(Reason.NO_LOAD_DATA, b, "not reported yet; left out") for b in usable.missing]
    return (*stale, *missing)
