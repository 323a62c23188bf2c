"""Run shedding cycles on a snapshot and project where the moves take the loads.

Goals
    Answer an operator's "what would the shedder do now, and where would it leave us?" for
    one cycle, N cycles, or until the strategy has nothing left to do.

Algorithm
    Each cycle runs the shedder at ``now``; moves without a destination are placed like a
    fresh lookup (:func:`~trimtab.shedding.cycle.run_cycle`, seeded RNG). Then the moves are
    applied to the brokers' current values (:func:`project`) and every broker reports once at
    the next interval (:func:`report`), so smoothing lag, hit counts and cooldowns play out as
    upstream.
    The *settled* loads are the starting loads shifted by every move (:func:`shift`): where the
    loads end once reports catch up; ``std_after`` is their population std. The plan keeps them
    after every cycle too (:attr:`Plan.settled`), so a report reads each cycle's effect rather
    than replaying the moves.

    ``until_balanced`` stops after the first idle cycle whose shedding condition is off (the
    strategy's own "balanced": Skip/HitCount with the hit count back at 0), after
    :data:`PATIENCE` idle cycles in a row for any other reason (CoolDown, NoBundles...), or at
    ``max_cycles``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass

from trimtab.shedding.base import LoadStats, Shedder
from trimtab.shedding.cycle import run_cycle
from trimtab.shedding.decisions import CycleResult, Label, Move, Reason, ShedderState
from trimtab.shedding.net import net_transfers
from trimtab.shedding.predict import load_per_byte, project, report, shift
from trimtab.shedding.snapshot import LoadSnapshot

__all__ = ["PATIENCE", "Plan", "Settled", "plan", "worsening"]

PATIENCE = 30
#: How much the settled std may rise before a plan is called harmful (rounding, not load).
WORSE_BY = 1e-6
#: A receiver gaining this many times its sender's load per byte/s counts as unequal.
UNEQUAL = 1.05


@dataclass(frozen=True, slots=True)
class Settled:
    """Where the loads end once reports catch up with the moves so far, and their std."""

    loads: Mapping[str, float]
    std: float

    @classmethod
    def of(cls, loads: Mapping[str, float]) -> Settled:
        return cls(loads, LoadStats.of(loads.values()).std if loads else math.nan)


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """Cycles run, their results, and the loads before and after (settled).

    ``settled`` holds the settled loads after each cycle, one entry per result; the last one
    is ``loads_after``.
    """

    strategy: str
    start: LoadSnapshot
    end: LoadSnapshot
    results: tuple[CycleResult, ...]
    loads_before: Mapping[str, float]
    loads_after: Mapping[str, float]
    std_before: float
    std_after: float
    target_std: float
    ratios: Mapping[str, float]  # load per byte/s of each broker, as the loads were projected
    settled: tuple[Settled, ...] = ()

    @property
    def cycle_stds(self) -> list[tuple[float, float]]:
        """(settled std before, after) each cycle's moves; cycle 1 starts at ``std_before``."""
        afters = [s.std for s in self.settled]
        return list(zip([self.std_before, *afters], afters, strict=False))

    @property
    def transfers(self) -> list[tuple[int, Move, Reason]]:
        """(cycle number from 1, move, reason) for every move, in order."""
        return [
            (k, d.move, d.reason)
            for k, result in enumerate(self.results, start=1)
            for d in result.decisions
            if d.move is not None
        ]

    @property
    def net_transfers(self) -> list[tuple[int, Move, Reason]]:
        """:attr:`transfers` with each bundle's moves composed into one (see
        :mod:`trimtab.shedding.net`): what the commands and the plan document carry."""
        return net_transfers(self.transfers)

    @property
    def reached(self) -> bool:
        return self.std_after <= self.target_std

    @property
    def warning(self) -> str | None:
        """Why this plan should not be applied as is, if its moves raise the std."""
        moves = [move for _, move, _ in self.transfers]
        ratio = self.ratios
        uphill = any(
            ratio.get(m.destination, 0.0) > UNEQUAL * ratio.get(m.source, 0.0)
            for m in moves
            if m.destination is not None
        )
        return worsening(self.strategy, self.std_before, self.std_after, len(moves), unequal=uphill)


def worsening(
    strategy: str, std_before: float, std_after: float, transfers: int, *, unequal: bool
) -> str | None:
    """A warning when ``transfers`` moves leave the settled std above where it started.

    With ``unequal`` (some move lands on a broker that gains more load per byte/s than its
    sender loses), the transfer strategy's known cause is named: PIP-220 sizes a move as if
    the receiver gained the load the sender loses, so a smaller receiver can end above the
    sender. Otherwise the warning does not guess a cause.
    """
    if transfers == 0 or not std_after > std_before + WORSE_BY:
        return None
    text = (
        f"applying these {transfers} transfers would raise broker load std from "
        f"{std_before:.3f} to {std_after:.3f}"
    )
    if strategy == "transfer" and unequal:
        return (
            f"{text}: the transfer strategy (PIP-220) sizes each move as if the receiving broker "
            "gained the load the sender loses, which does not hold between brokers of unequal "
            "capacity; strategy 'balanced' sizes moves by each broker's capacity"
        )
    return f"{text}; review it before applying"


def plan(
    snapshot: LoadSnapshot,
    shedder: Shedder,
    *,
    now: float,
    cycles: int = 1,
    until_balanced: bool = False,
    max_cycles: int = 500,
    rng: random.Random | None = None,
    state: ShedderState | None = None,
) -> Plan:
    """Run ``cycles`` cycles (or until balanced, at most ``max_cycles``) from ``now``."""
    cfg = shedder.config
    rng = rng if rng is not None else random.Random(0)
    interval = cfg.interval_minutes * 60.0
    usable = [b for name, b in snapshot.loads.items() if name in (snapshot.available or ())]
    ratios = load_per_byte(usable)
    start = Settled.of({b.broker: b.load for b in usable})
    settled = [start]
    current, state = snapshot, state or ShedderState()
    results: list[CycleResult] = []
    idle = 0
    limit = max_cycles if until_balanced else cycles
    for _ in range(limit):
        result = run_cycle(shedder, current, state, now=now, rng=rng)
        results.append(result)
        moves = result.moves
        settled.append(Settled.of(shift(settled[-1].loads, moves, ratios)))
        state = result.state
        now += interval
        current = report(
            project(current, moves, ratios=ratios), now=now, history=cfg.history_resource_percentage
        )
        if moves:
            idle = 0
            continue
        idle += 1
        outcome = result.outcome
        balanced = (
            outcome.label is Label.SKIP
            and outcome.reason is Reason.HIT_COUNT
            and state.hit_count == 0
        )
        if until_balanced and (balanced or idle >= PATIENCE):
            break
    return Plan(
        strategy=shedder.name,
        start=snapshot,
        end=current,
        results=tuple(results),
        loads_before=start.loads,
        loads_after=settled[-1].loads,
        std_before=start.std,
        std_after=settled[-1].std,
        target_std=cfg.target_std,
        ratios=ratios,
        settled=tuple(settled[1:]),
    )
