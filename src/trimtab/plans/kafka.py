"""A Kafka or Redpanda rebalance plan as a plan document: one ``reassign`` action a partition.

An action is ``required`` when every move in it is (drains, nodes down, full disks, rack
repair); an action made only for count balancing is optional. The summary carries the plan's
lower bound (``lower_bound_moves`` / ``_bytes``) and what count balancing adds or would add.

Each action's precondition is the partition's replica list as the plan found it (broker ids,
in order: the first is the preferred leader) and its target the list it asks for, as the
"Current" and "Proposed" documents of ``kafka-reassign-partitions.sh --generate`` hold them.
The expected effect is the bytes the new replicas copy and the replica moves behind it.
Actions run in the order the planner made the moves (drains and repairs before balancing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trimtab.allocation.balance_plan import RebalancePlan
from trimtab.cluster import NodeId
from trimtab.plans.document import Action, PlanDocument

__all__ = ["partition_item", "rebalance_plan_document"]


def partition_item(topic: str, partition: int) -> str:
    """The item name of a partition: ``topic/partition`` (``/`` cannot occur in a topic)."""
    return f"{topic}/{partition}"


def rebalance_plan_document(
    plan: RebalancePlan,
    ids: Mapping[NodeId, int],
    *,
    system: str,
    created: str,
    source: Mapping[str, Any],
    concurrent_moves: int,
) -> PlanDocument:
    """The document of ``plan``; ``ids`` names nodes by broker id."""
    before = {(a.topic, a.partition): a for a in plan.before}
    after = {(a.topic, a.partition): a for a in plan.after}
    moves_of: dict[tuple[str, int], list[Any]] = {}
    for m in plan.moves:
        moves_of.setdefault((m.topic, m.partition), []).append(m)
    actions = []
    for key, moves in moves_of.items():
        old, new = before[key], after[key]
        reasons = list(dict.fromkeys(m.reason for m in moves))
        actions.append(
            Action(
                id=f"reassign:{partition_item(*key)}",
                kind="reassign",
                item=partition_item(*key),
                precondition={"replicas": [ids[n] for n in old.nodes]},
                target={"replicas": [ids[n] for n in new.nodes]},
                effect={
                    "bytes": sum(m.size_bytes for m in moves),
                    "moves": [{"from": ids[m.source], "to": ids[m.target]} for m in moves],
                },
                reason=",".join(reasons),
                required=all(m.required for m in moves),
            )
        )
    summary = {
        "actions": len(actions),
        "moves": len(plan.moves),
        "bytes": plan.bytes_moved,
        "mode": plan.mode,
        "score": "balance",
        "score_before": plan.balance_before,
        "score_after": plan.balance_after,
        "counts_by_reason": plan.counts_by_reason,
        "unfixable": len(plan.unfixable),
        "required_actions": sum(1 for a in actions if a.required),
        "optional_actions": sum(1 for a in actions if not a.required),
        "lower_bound_moves": plan.lower_bound_moves,
        "lower_bound_bytes": plan.lower_bound_bytes,
        "lower_bound_terms": dict(plan.lower_bound_terms),
        "diversity_lowered": plan.diversity_lowered,
        # what count balancing adds (its actions are the optional ones) or would add (not
        # actions: the operator asks for it with ``--mode continuous``)
        "balancing": None if plan.balancing is None else plan.balancing.figures(),
    }
    return PlanDocument(
        system=system,
        cluster=plan.cluster,
        created=created,
        actions=tuple(actions),
        source=source,
        summary=summary,
        settings={"concurrent_moves": concurrent_moves},
    )
