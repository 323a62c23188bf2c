"""The dry run: every action checked against the live cluster, nothing written.

It reads (``observe``, in chunks: :mod:`trimtab.execute.observe`) and
reports, per action, what would run (READY), what already is done (DONE), what is moving to
its target (MOVING, a run in progress or crashed) and what no longer holds (CHANGED, with the
live state beside the planned one); then the digest to approve and the estimated duration of
what is left at the throttle.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from trimtab.execute.batches import Limits
from trimtab.execute.estimate import Estimate, estimate
from trimtab.execute.observe import observe_all
from trimtab.plans.document import Action, PlanDocument
from trimtab.plans.target import Check, Observation, Target

__all__ = ["DryRun", "dry_run"]


@dataclass(frozen=True, slots=True)
class DryRun:
    """What a run of the plan would do now."""

    plan: PlanDocument
    seen: tuple[tuple[Action, Observation], ...]
    estimate: Estimate
    rate: int | None
    limits: Limits

    def counts(self) -> Counter[str]:
        return Counter(o.check.value for _, o in self.seen)

    def changed(self) -> list[tuple[Action, Observation]]:
        return [(a, o) for a, o in self.seen if o.check is Check.CHANGED]

    def as_json(self) -> dict[str, Any]:
        counts = self.counts()
        return {
            "digest": self.plan.digest,
            "system": self.plan.system,
            "cluster": self.plan.cluster,
            "rollback_of": self.plan.rollback_of,
            "counts": {c.value: counts.get(c.value, 0) for c in Check},
            "throttle_bytes_per_second": self.rate,
            "max_in_flight": self.limits.max_in_flight,
            "max_in_flight_per_broker": self.limits.max_per_node,
            "batches": self.estimate.batches,
            "estimated_seconds": self.estimate.seconds,
            "actions": [
                {
                    "id": a.id,
                    "kind": a.kind,
                    "item": a.item,
                    "check": o.check.value,
                    "why": o.why,
                    "precondition": dict(a.precondition),
                    "live": dict(o.live),
                    "target": dict(a.target),
                    "bytes": a.bytes,
                }
                for a, o in self.seen
            ],
        }


def dry_run(plan: PlanDocument, target: Target, limits: Limits, rate: int | None) -> DryRun:
    """Check every action of ``plan`` read-only; estimate what is left (READY and MOVING)."""
    seen = observe_all(target, plan.actions)
    pairs = tuple((a, seen[a.id]) for a in plan.actions)
    left = [a for a, o in pairs if o.check in (Check.READY, Check.MOVING)]
    cooldown = float(plan.settings.get("broker_cooldown_s", 0) or 0)
    return DryRun(plan, pairs, estimate(left, limits, rate, cooldown_s=cooldown), rate, limits)
