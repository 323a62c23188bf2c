"""``--abort``: stop what a run left, from its journal.

Used when a run was killed (or asked to stop) with moves in flight: every action the journal
says started and not finished is observed; one still MOVING is cancelled (Kafka: a
reassignment to null), one DONE is journaled done, one that never began is journaled
cancelled. Then every throttle the journal says trimtab set and did not remove is removed.
The journal gets the same records a run writes, so a later ``--resume`` starts from there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from trimtab.execute.journal import JournalState
from trimtab.execute.observe import observe_all
from trimtab.execute.recorder import Recorder
from trimtab.execute.runner import action_record
from trimtab.execute.throttles import Throttles
from trimtab.plans.document import PlanDocument
from trimtab.plans.target import Check, Target

__all__ = ["abort_run"]


def abort_run(
    plan: PlanDocument,
    target: Target,
    state: JournalState,
    recorder: Recorder,
    header: Mapping[str, Any],
) -> list[str]:
    """Cancel the journal's moves in flight and remove its throttles; returns warnings."""
    recorder.record({"record": "run", "digest": plan.digest, "pid": os.getpid()} | dict(header))
    started = [plan.action(i) for i in state.with_state("started", "planned")]
    seen = observe_all(target, started)
    moving = [a for a in started if seen[a.id].check is Check.MOVING]
    if moving:
        target.cancel(moving)
    records = []
    for action in started:
        check = seen[action.id].check
        if check is Check.DONE:
            records.append(action_record(action, "done", "completed", bytes=action.bytes))
        elif check is Check.MOVING:
            records.append(action_record(action, "cancelled", "aborted", "cancelled by --abort"))
        else:
            records.append(action_record(action, "cancelled", "aborted", "had not started"))
    recorder.record(*records)
    throttles = Throttles(target, recorder, None)
    warnings = throttles.clear_all(state.throttles)
    if state.setting is not None:
        warnings += throttles.recover(state.setting)
    recorder.record({"record": "stop", "reason": "aborted by --abort", "exit": 0})
    return warnings
