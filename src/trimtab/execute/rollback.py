"""``--rollback``: the reverse of what a run did, as a plan of its own.

The actions the journal shows done by this executor (not those it found already done: it
did not make them), in reverse order, each with precondition and target swapped: a
reassignment goes back to its original replicas, an unload back to its original owner. A
split cannot be undone and is left out (a warning says so). Where a forward target left a
value to the cluster (an unload to ``"owner": null``), the rollback's precondition is the
live value read now. The result is a :class:`~trimtab.plans.PlanDocument` with
``rollback_of`` the forward plan's digest: it has its own digest, its own dry run and its own
approval, and runs with the same batching and checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trimtab.errors import PlanError
from trimtab.execute.journal import JournalState
from trimtab.plans.document import Action, PlanDocument
from trimtab.plans.target import Check, Observation

__all__ = ["reverse_action", "reverse_plan", "to_reverse"]


def to_reverse(plan: PlanDocument, state: JournalState) -> tuple[list[Action], list[str]]:
    """The forward actions a rollback reverses (plan order), and warnings for those left out."""
    done = set(state.with_state("done"))
    chosen, warnings = [], []
    for action in plan.actions:
        if action.id not in done or state.causes.get(action.id) == "already-done":
            continue
        if action.kind == "split":
            warnings.append(f"action {action.id} split {action.item}: a split cannot be undone")
            continue
        chosen.append(action)
    return chosen, warnings


def reverse_action(action: Action, live: Observation | None) -> Action:
    """``action`` backwards: from where it took the item to where it found it."""
    after: dict[str, Any] = dict(action.target)
    if live is not None and live.check is Check.DONE:
        for key, value in after.items():
            if value is None and key in live.live:
                after[key] = live.live[key]
    effect = dict(action.effect)
    if "moves" in effect:
        effect["moves"] = [{"from": m.get("to"), "to": m.get("from")} for m in effect["moves"]]
    return Action(
        id=f"rollback-{action.id}",
        kind=action.kind,
        item=action.item,
        precondition=after,
        target=dict(action.precondition),
        effect=effect,
        reason=f"rollback of {action.id}",
        required=action.required,
    )


def reverse_plan(
    plan: PlanDocument,
    state: JournalState,
    live: Mapping[str, Observation],
    *,
    journal: str,
) -> PlanDocument:
    """The rollback plan of ``plan`` from its journal ``state`` (``live``: observations of the
    forward actions, for targets the forward plan left to the cluster)."""
    forward, _ = to_reverse(plan, state)
    if not forward:
        raise PlanError(
            f"journal {journal} shows no action this executor completed: nothing to roll back"
        )
    actions = tuple(reverse_action(a, live.get(a.id)) for a in reversed(forward))
    return PlanDocument(
        system=plan.system,
        cluster=plan.cluster,
        created=state.last_at or plan.created,
        actions=actions,
        source={
            "command": "trimtab execute --rollback",
            "plan_digest": plan.digest,
            "journal": journal,
            "journal_at": state.last_at,
        },
        summary={"actions": len(actions), "bytes": sum(a.bytes for a in actions)},
        settings=dict(plan.settings),
        rollback_of=plan.digest,
    )
