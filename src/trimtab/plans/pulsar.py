"""A Pulsar shedding plan as a plan document: one ``unload`` action a bundle, net moves only.

The actions are the plan's net moves (:mod:`trimtab.shedding.net`): a bundle moved twice is
unloaded once, from where it is to where it ends; a round trip is not unloaded at all. Each
action's precondition is the bundle's owner as the snapshot saw it; its target the
destination broker, or ``null`` when the shedder leaves the choice to the next lookup. The
cooldown the shedder respects between unloads of one broker
(``loadBalanceSheddingDelayInSeconds``) goes in the settings, for the executor to keep.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trimtab.plans.document import Action, PlanDocument
from trimtab.shedding.plan import Plan

__all__ = ["shed_plan_document"]


def shed_plan_document(
    plan: Plan,
    *,
    cluster: str,
    created: str,
    source: Mapping[str, Any],
    cooldown_s: float,
    recommended: bool = True,
) -> PlanDocument:
    """The document of ``plan`` (its net transfers) for ``cluster``; a plan the
    recommendation says not to run (``recommended`` False: it lowers no std) has no action."""
    actions = (
        ()
        if not recommended
        else tuple(
            Action(
                id=f"unload:{move.bundle}",
                kind="unload",
                item=move.bundle,
                precondition={"owner": move.source},
                target={"owner": move.destination},
                effect={"throughput": move.throughput, "cycle": cycle},
                reason=str(reason),
            )
            for cycle, move, reason in plan.net_transfers
        )
    )
    summary = {
        "actions": len(actions),
        "recommended": recommended,
        "transfers_before_netting": len(plan.transfers),
        "bytes": 0,
        "strategy": plan.strategy,
        "cycles": len(plan.results),
        "score": "std",
        "score_before": plan.std_before,
        "score_after": plan.std_after,
        "target_std": plan.target_std,
        "throughput": sum(a.effect["throughput"] for a in actions),
    }
    return PlanDocument(
        system="pulsar",
        cluster=cluster,
        created=created,
        actions=actions,
        source=source,
        summary=summary,
        settings={"broker_cooldown_s": cooldown_s},
    )
