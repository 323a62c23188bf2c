"""One shedding cycle as every caller runs it: the shedder decides, then every move it left
without a destination is placed like a fresh lookup.

The multi-cycle plans (:func:`trimtab.shedding.plan.plan`), the live loop
(:class:`~trimtab.shedding.follow.Follower`), the pipeline's stream and the simulators all
take this one step, so an unload-only strategy lands its bundles the same way everywhere
(:func:`~trimtab.shedding.destinations.assign_destinations`, with the caller's seeded RNG).
"""

from __future__ import annotations

import random

from trimtab.shedding.base import Shedder
from trimtab.shedding.decisions import CycleResult, ShedderState
from trimtab.shedding.destinations import assign_destinations
from trimtab.shedding.snapshot import LoadSnapshot

__all__ = ["run_cycle"]


def run_cycle(
    shedder: Shedder,
    snapshot: LoadSnapshot,
    state: ShedderState,
    *,
    now: float,
    rng: random.Random,
) -> CycleResult:
    """``shedder``'s cycle on ``snapshot`` at ``now`` from ``state``, with a destination on
    every move (``rng`` picks among the candidates); the result's state feeds the next cycle."""
    result = shedder.cycle(snapshot, state, now=now)
    return assign_destinations(result, snapshot, shedder.config, rng, now=now)
