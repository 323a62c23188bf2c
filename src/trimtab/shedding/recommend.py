"""Which plan to run: ``balanced`` by default, beside what upstream's configured shedder does.

Rule
    1. The preferred strategy is ``balanced``, unless the operator named one (``--strategy``,
       or ``loadBalancerLoadSheddingStrategy`` written in the config file).
    2. Upstream's configured shedder is the config's strategy, or upstream's TransferShedder
       when the config names ``balanced`` (trimtab's own). Both run on the same snapshot,
       with the same seed.
    3. The preferred plan is recommended unless it raises the settled std; then upstream's
       plan, unless it raises the std too; then no plan: a plan that raises the std is never
       the one recommended.
    4. A plan has to earn its moves. When the cluster is already within the target (the load
       std under ``loadBalancerBrokerLoadTargetStd`` and every broker inside the band mean ±
       that std, the band the report draws), nothing is recommended: the plan is offered
       beside, with its gain. Below that, a plan is recommended only if it lowers the hottest
       broker's settled load by at least ``min_hottest_gain`` (default 0.02: two points of
       load); moving bundles costs reconnects and cache misses for less.

The sentence says which plan to run and why, in the words the report and ``trimtab shed``
print.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from trimtab.config.pulsar import SheddingConfig, Strategy
from trimtab.shedding.base import Shedder
from trimtab.shedding.plan import WORSE_BY, Plan
from trimtab.shedding.strategies import shedder_for

__all__ = [
    "Recommendation",
    "hottest_gain",
    "raises_std",
    "recommend",
    "upstream_strategy",
    "within_target",
]


@dataclass(frozen=True, slots=True)
class Recommendation:
    """The plan to show as the recommendation, upstream's plan, and the sentence.

    ``plan`` is the recommended plan, or the preferred one when ``apply`` is False: no plan
    lowers the std (``held`` ``raises_std``), the cluster is within the target already
    (``within_target``) or the plan gains less than the minimum (``small_gain``).
    """

    plan: Plan
    upstream: Plan
    apply: bool
    explicit: bool
    sentence: str
    held: str | None = None

    def as_json(self) -> dict[str, Any]:
        """``recommendation`` and ``upstream`` as ``shed --json`` and ``run.json`` carry them."""
        up = self.upstream
        return {
            "recommendation": {
                "strategy": self.plan.strategy if self.apply else None,
                "explicit": self.explicit,
                "sentence": self.sentence,
                "held": self.held,
                "offered": None if self.apply else self.plan.strategy,
                "hottest_gain": hottest_gain(self.plan),
            },
            "upstream": {
                "strategy": up.strategy,
                "std_before": up.std_before,
                "std_after": up.std_after,
                "reached": up.reached,
                "transfers": [
                    {
                        "cycle": k,
                        "bundle": m.bundle,
                        "source": m.source,
                        "destination": m.destination,
                        "throughput": m.throughput,
                    }
                    for k, m, _ in up.transfers
                ],
            },
        }


def upstream_strategy(config: SheddingConfig) -> Strategy:
    """Upstream's configured shedder: the config's, or TransferShedder for ``balanced``."""
    return Strategy.TRANSFER if config.strategy is Strategy.BALANCED else config.strategy


def raises_std(result: Plan) -> bool:
    """Whether the plan's moves leave the settled std above where it started."""
    return bool(result.transfers) and result.std_after > result.std_before + WORSE_BY


def recommend(
    config: SheddingConfig, run: Callable[[Shedder], Plan], *, explicit: str | None = None
) -> Recommendation:
    """Plan the preferred strategy and upstream's with ``run`` (same snapshot, same seed) and
    pick one by the module's rule; ``explicit`` is the strategy the operator named."""
    preferred = Strategy(explicit) if explicit else Strategy.BALANCED
    upstream = upstream_strategy(config)
    mine = run(shedder_for(config, preferred))
    theirs = mine if upstream is preferred else run(shedder_for(config, upstream))
    if not raises_std(mine):
        chosen, apply = mine, True
    elif not raises_std(theirs):
        chosen, apply = theirs, True
    else:
        chosen, apply = mine, False
    if not apply:
        sentence = _sentence(mine, theirs, chosen, apply=apply, explicit=explicit is not None)
        return Recommendation(chosen, theirs, False, explicit is not None, sentence, "raises_std")
    if chosen.transfers and (held := _unearned(chosen, config)) is not None:
        return Recommendation(chosen, theirs, False, explicit is not None, held[1], held[0])
    sentence = _sentence(mine, theirs, chosen, apply=apply, explicit=explicit is not None)
    return Recommendation(chosen, theirs, apply, explicit is not None, sentence)


def within_target(loads: Mapping[str, float], target_std: float) -> bool:
    """Whether ``loads`` are balanced already: std under ``target_std`` and every load inside
    mean ± ``target_std``."""
    values = [v for v in loads.values() if math.isfinite(v)]
    if not values:
        return True
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return (
        std < target_std and max(values) - mean <= target_std and mean - min(values) <= target_std
    )


def hottest_gain(result: Plan) -> float:
    """How much ``result`` lowers the hottest broker's settled load (0 for no move)."""
    before = [v for v in result.loads_before.values() if math.isfinite(v)]
    after = [v for v in result.loads_after.values() if math.isfinite(v)]
    if not before or not after or not result.transfers:
        return 0.0
    return max(before) - max(after)


def _unearned(result: Plan, config: SheddingConfig) -> tuple[str, str] | None:
    """Why ``result``'s moves are not worth making, as (held, sentence), or None."""
    moves, gain = _n(result), hottest_gain(result)
    offer = (
        f"The {result.strategy} plan is offered, not recommended: its {moves} would settle "
        f"the std at {result.std_after:.3f}, the hottest broker's load "
        f"{'down' if gain >= 0 else 'up'} by {abs(gain):.3f}."
    )
    if within_target(result.loads_before, config.target_std):
        return "within_target", (
            f"Nothing to do: the cluster is within the target (load std "
            f"{result.std_before:.3f} under {config.target_std:g}, every broker within mean ± "
            f"{config.target_std:g}). {offer}"
        )
    if gain < config.min_hottest_gain:
        return "small_gain", (
            f"Nothing to do: the {result.strategy} plan's {moves} would lower the hottest "
            f"broker's load by {gain:.3f}, less than min_hottest_gain "
            f"{config.min_hottest_gain:g}. {offer}"
        )
    return None


def _sentence(mine: Plan, theirs: Plan, chosen: Plan, *, apply: bool, explicit: bool) -> str:
    before = f"{mine.std_before:.3f}"
    up = f"upstream's {theirs.strategy} shedder"
    up_does = (
        f"{up} would make {_n(theirs)} and settle it at {theirs.std_after:.3f}"
        if theirs.transfers
        else f"{up} would move nothing"
    )
    if not apply:
        return (
            f"Apply no transfers: the {mine.strategy} plan would raise the broker load std from "
            f"{before} to {mine.std_after:.3f}, and {up} to {theirs.std_after:.3f}."
        )
    if chosen is theirs and chosen is not mine:
        return (
            f"Run the {theirs.strategy} plan, {up}: {_settle(theirs)} the broker load std at "
            f"{theirs.std_after:.3f} (from {before}), while the {mine.strategy} plan would "
            f"raise it to {mine.std_after:.3f}."
        )
    why = " (the strategy named in the options)" if explicit else ""
    if not mine.transfers:
        cycles = len(mine.results)
        return (
            f"Nothing to run: the {mine.strategy} plan{why} moves no bundle in "
            f"{cycles} cycle{'s' if cycles != 1 else ''} (std {before}); {up_does}."
        )
    if mine is theirs:
        return (
            f"Run the {mine.strategy} plan{why}: {_settle(mine)} the broker load std at "
            f"{mine.std_after:.3f} (from {before})."
        )
    return (
        f"Run the {mine.strategy} plan{why}: {_settle(mine)} the broker load std at "
        f"{mine.std_after:.3f} (from {before}), where {up_does}."
    )


def _n(result: Plan) -> str:
    count = len(result.transfers)
    return f"{count} transfer{'s' if count != 1 else ''}"


def _settle(result: Plan) -> str:
    return f"its {_n(result)} settle{'s' if len(result.transfers) == 1 else ''}"
