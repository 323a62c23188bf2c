"""Pulsar's UniformLoadShedder (modular load manager): even out message rate or throughput.

Goals
    Keep the busiest and idlest brokers' message rates (or throughputs) within a bound.

Constraints
    * Raw rates, not usage: brokers of different sizes are pushed to equal traffic, which
      overloads the small ones (PIP-364 lists it; #12902 asks for weights).
    * One broker is shed per cycle; its sole bundle never; no destination is named.
    * A minimum of 0 is replaced by 1.0, so a new empty broker always triggers.

Algorithm (after the fix of #21025)
    1. Find the max and min brokers by msg rate and, separately, by throughput.
    2. Trigger on ``(maxRate − minRate)/minRate·100 > 50`` (msg rate first), else on
       ``maxThroughput/minThroughput > 4``.
    3. Required = ``int((max − min) × maxUnloadPercentage)`` (0.2); skip it below
       ``minUnloadMessage`` (1000 msg/s) or ``minUnloadMessageThroughput`` (1 MB/s).
    4. Walk the max broker's bundles largest first (skipping idle and recently unloaded ones);
       take each whose size is at most what is still ``required`` and subtract it, up to
       ``maxUnloadBundleNumPerShedding`` bundles (-1: no limit). No +1000 slack (PR #21906:
       it moved all of a small broker's traffic, #21905).
    A threshold of 0 turns its rule off (msg rate or throughput), as upstream.

Worked example (PIP-220 case 1, throughput tracking load): 12, 2, 1, 1 MB/s → ratio 12 > 4;
required = int(11 MB/s × 0.2) = 2.2 MB/s, so the 12 MB/s broker sheds up to 2.2 MB/s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trimtab.shedding.base import LoadStats, Shedder, eligible, transferable, unload
from trimtab.shedding.decisions import CycleResult, Decision, Reason, ShedderState, skip
from trimtab.shedding.gates import UsableBrokers, sole_bundle_gate
from trimtab.shedding.snapshot import BundleIndex, FloatArray, LoadSnapshot

__all__ = ["UniformLoadShedder"]

EPS = 1e-6


@dataclass(frozen=True, slots=True)
class UniformLoadShedder(Shedder):
    """Move a share of the max-min gap off the busiest broker."""

    name = "uniform"

    def decide(
        self, snapshot: LoadSnapshot, usable: UsableBrokers, state: ShedderState, *, now: float
    ) -> CycleResult:
        cfg = self.config
        loads = usable.loads
        stats = LoadStats.of(b.load for b in loads)
        rate_hi, rate_lo = _extremes([b.msg_rate for b in loads])
        tput_hi, tput_lo = _extremes([b.throughput for b in loads])
        max_rate, min_rate = loads[rate_hi].msg_rate, _nonzero(loads[rate_lo].msg_rate)
        max_tput, min_tput = loads[tput_hi].throughput, _nonzero(loads[tput_lo].throughput)
        rate_gap = (max_rate - min_rate) * 100.0 / min_rate
        tput_ratio = max_tput / min_tput
        rate_hit = 0 < cfg.msg_rate_difference_threshold < rate_gap
        tput_hit = 0 < cfg.throughput_multiplier_threshold < tput_ratio
        index = BundleIndex.build(snapshot.bundles, [b.broker for b in loads], snapshot.policies)
        if rate_hit:
            pos, by, floor = rate_hi, index.rate, cfg.min_unload_message
            required = float(int((max_rate - min_rate) * cfg.max_unload_percentage))
        elif tput_hit:
            pos, by, floor = tput_hi, index.throughput, cfg.min_unload_message_throughput
            required = float(int((max_tput - min_tput) * cfg.max_unload_percentage))
        else:
            note = (
                f"msg-rate gap {rate_gap:.0f} %, throughput ratio {tput_ratio:.2f}: within bounds"
            )
            return self._idle(state, stats, note)
        broker = loads[pos].broker
        if (sole := sole_bundle_gate(index, pos, broker)) is not None:
            return self._idle(state, stats, "nothing to unload", (sole,))
        if required < floor:
            return self._idle(state, stats, f"would move {required:g}, below the minimum {floor:g}")
        moves = self._select(index, pos, by, required, state)
        if not moves:
            return self._idle(state, stats, "no bundle fits", (skip(Reason.NO_BUNDLES, broker),))
        return CycleResult(decisions=tuple(moves), state=state, avg=stats.avg, std=stats.std)

    def _select(
        self, index: BundleIndex, pos: int, by: FloatArray, required: float, state: ShedderState
    ) -> list[Decision]:
        cfg = self.config
        limit = cfg.max_unload_bundle_num_per_shedding
        moves: list[Decision] = []
        for i in index.largest_first(pos, by).tolist():
            size = float(by[i])
            if size <= 0 or not eligible(index, i, state, cfg):
                continue
            if not transferable(index, i, cfg, destination=None):
                continue
            if limit != -1 and len(moves) >= limit:
                break
            if size <= required:
                required -= size
                moves.append(unload(index, i, Reason.OVERLOADED))
        return moves

    @staticmethod
    def _idle(
        state: ShedderState, stats: LoadStats, note: str, notes: tuple[Decision, ...] = ()
    ) -> CycleResult:
        return CycleResult(
            decisions=(*notes, skip(Reason.HIT_COUNT, note=note)),
            state=state,
            avg=stats.avg,
            std=stats.std,
        )


def _extremes(values: list[float]) -> tuple[int, int]:
    """Positions of the first max and the first min (id order breaks ties)."""
    array = np.asarray(values)
    return int(np.argmax(array)), int(np.argmin(array))


def _nonzero(value: float) -> float:
    return 1.0 if -EPS <= value <= EPS else value
