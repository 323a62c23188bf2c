"""A Kafka or Redpanda rebalance plan as a plan document: one ``reassign`` action a partition.

An action is ``required`` when every move in it is (drains, nodes down, full disks, rack
repair); an action made only for count balancing is optional. The summary carries the plan's
lower bound (``lower_bound_moves`` / ``_bytes``) and what count balancing adds or would add.

Each action's precondition is the partition's replica list as the plan found it (broker ids,
in order: the first is the preferred leader) and its target the list it asks for, as the
"Current" and "Proposed" documents of ``kafka-reassign-partitions.sh --generate`` hold them.
The expected effect is the bytes the new replicas copy and the replica moves behind it.
Actions run in the order the planner made the moves (drains and repairs before balancing).
A replica moving between log dirs of its broker (issue 40 part 7: ``--cordon``, a full dir
relieved inside its broker) puts ``log_dirs`` in the target, as the ``log_dirs`` field of
the reassignment JSON (a directory for that replica, ``"any"`` for the others); its bytes
are in ``effect.dir_moves``, not in ``effect.bytes`` (they cross no network). Such actions
come after the moves between brokers, and are required.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trimtab.allocation.balance_plan import RebalancePlan
from trimtab.allocation.log_dirs import DirMove
from trimtab.allocation.model import PartitionAssignment
from trimtab.cluster import NodeId
from trimtab.plans.document import Action, PlanDocument

__all__ = ["DIR_MOVE", "partition_item", "rebalance_plan_document"]


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
    dir_moves_of: dict[tuple[str, int], list[DirMove]] = {}
    for d in plan.dir_moves:
        dir_moves_of.setdefault((d.topic, d.partition), []).append(d)
    for a in plan.dir_partitions:
        before.setdefault((a.topic, a.partition), a)
        after.setdefault((a.topic, a.partition), a)
    for key in dir_moves_of:
        moves_of.setdefault(key, [])
    for key, moves in moves_of.items():
        old, new = before[key], after[key]
        reasons = list(dict.fromkeys([m.reason for m in moves]))
        if key in dir_moves_of:
            reasons.append(DIR_MOVE)
        actions.append(
            Action(
                id=f"reassign:{partition_item(*key)}",
                kind="reassign",
                item=partition_item(*key),
                precondition={"replicas": [ids[n] for n in old.nodes]},
                target=_target(new, ids, dir_moves_of.get(key, [])),
                effect=_effect(moves, dir_moves_of.get(key, []), ids),
                reason=",".join(reasons),
                required=all(m.required for m in moves),
            )
        )
    extra: dict[str, Any] = {}
    if plan.dir_moves:
        extra["dir_moves"] = len(plan.dir_moves)
        extra["dir_bytes"] = sum(d.size_bytes for d in plan.dir_moves)
        extra["lower_bound_all_moves"] = plan.lower_bound_all_moves
    if plan.closed:
        extra["closed_brokers"] = {str(ids[n]): why for n, why in plan.closed.items()}
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
        **extra,
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


#: The reason of a move between log dirs of one broker (``--cordon``, a full dir relieved).
DIR_MOVE = "log_dir_move"


def _target(
    new: PartitionAssignment, ids: Mapping[NodeId, int], dirs: list[DirMove]
) -> dict[str, Any]:
    """The replicas asked for, and ``log_dirs`` as kafka-reassign-partitions.sh takes it
    (a directory for a replica moving between dirs, ``"any"`` for the others) when a replica
    of the partition changes dir."""
    target: dict[str, Any] = {"replicas": [ids[n] for n in new.nodes]}
    if dirs:
        where = {d.node: d.target for d in dirs}
        target["log_dirs"] = [where.get(n, "any") for n in new.nodes]
    return target


def _effect(moves: list[Any], dirs: list[DirMove], ids: Mapping[NodeId, int]) -> dict[str, Any]:
    """Bytes over the network and the moves between brokers; moves between log dirs of one
    broker apart (their bytes stay on the broker)."""
    effect: dict[str, Any] = {
        "bytes": sum(m.size_bytes for m in moves),
        "moves": [{"from": ids[m.source], "to": ids[m.target]} for m in moves],
    }
    if dirs:
        effect["dir_moves"] = [
            {"broker": ids[d.node], "from_dir": d.source, "to_dir": d.target, "bytes": d.size_bytes}
            for d in dirs
        ]
    return effect
