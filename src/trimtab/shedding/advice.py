"""The one shedding decision every caller asks for: which plan to run on a snapshot, and why.

Goals
    ``trimtab shed`` (on tables or on Pulsar's load reports) and the pipeline's shedding plans
    ask the same question of one snapshot and get the same answer from one call, so the
    guards, the seeds and the strategy rule cannot drift apart between them.

Algorithm
    1. Guard: a snapshot with no writable broker, or none with load data, has no load to
       compare (a plan of it would be a std of nothing, NaN): the answer is then why, in
       :attr:`Advice.nothing_to_shed`, and no plan runs.
    2. Otherwise the preferred strategy and upstream's configured one each plan the snapshot
       (:func:`~trimtab.shedding.plan.plan`: cycle, destinations, projection, as many cycles
       as asked), each from the same seed, with the destinations filtered by ``policies``;
       :func:`~trimtab.shedding.recommend.recommend` picks the plan to run.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from trimtab.config.pulsar import SheddingConfig
from trimtab.shedding.filters import Policies
from trimtab.shedding.plan import plan
from trimtab.shedding.recommend import Recommendation, recommend
from trimtab.shedding.snapshot import LoadSnapshot

__all__ = ["Advice", "advise"]


@dataclass(frozen=True, slots=True)
class Advice:
    """The recommendation for a snapshot, or (``recommendation`` None) why nothing can be shed."""

    recommendation: Recommendation | None
    nothing_to_shed: str | None = None


def advise(
    snapshot: LoadSnapshot,
    config: SheddingConfig,
    *,
    now: float,
    cycles: int = 1,
    until_balanced: bool = False,
    max_cycles: int = 500,
    seed: int = 0,
    policies: Policies | None = None,
    explicit: str | None = None,
    refused: Sequence[str] = (),
) -> Advice:
    """The recommended plan of ``snapshot`` from ``now`` beside upstream's (see the module
    docstring): ``cycles`` cycles, or with ``until_balanced`` until the strategy has nothing
    left to do (at most ``max_cycles``); ``policies`` are the isolation and anti-affinity
    filters on destinations (None: the snapshot's own), ``explicit`` the strategy the operator
    named. ``refused`` (the telemetry rows rejected, as ``file:line: reason``) lets the guard
    say where the load data went."""
    if (why := _nothing_to_shed(snapshot, refused)) is not None:
        return Advice(None, why)
    planned = snapshot if policies is None else replace(snapshot, policies=policies)
    recommendation = recommend(
        config,
        lambda shedder: plan(
            planned,
            shedder,
            now=now,
            cycles=cycles,
            until_balanced=until_balanced,
            max_cycles=max_cycles,
            rng=random.Random(seed),
        ),
        explicit=explicit,
    )
    return Advice(recommendation)


def _nothing_to_shed(snapshot: LoadSnapshot, refused: Sequence[str]) -> str | None:
    """Why no shedder could move a bundle in ``snapshot`` whatever it decides, or None."""
    available = snapshot.available or frozenset()
    if not available:
        return "no broker is writable (read-only and down brokers neither give nor take bundles)"
    if any(name in snapshot.loads for name in available):
        return None
    why = f"none of the {len(available)} writable broker(s) has a usable node_metrics sample"
    if refused:
        return f"{why}: {len(refused)} row(s) were rejected, the first {refused[0]}"
    return why
