"""Reading the cluster for a set of actions: every action gets an answer.

A target answers by action id. A chunk of at most :data:`CHUNK` actions goes in each call, so
ten thousand checks are ten calls. An action the target leaves out is never assumed fine: its
check is CHANGED ("not reported"), which stops a run before it starts anything of that batch,
and a move left out of a poll counts as making no progress, so ``--stall-timeout`` ends the
wait for it instead of looping for ever.
"""

from __future__ import annotations

from collections.abc import Sequence

from trimtab.plans.document import Action
from trimtab.plans.target import Check, Observation, Progress, Target

__all__ = ["CHUNK", "observe_all", "poll_all"]

CHUNK = 1000  # actions per call


def observe_all(target: Target, actions: Sequence[Action]) -> dict[str, Observation]:
    """The live check of every action of ``actions`` (in chunks of :data:`CHUNK`)."""
    seen: dict[str, Observation] = {}
    for start in range(0, len(actions), CHUNK):
        seen.update(target.observe(actions[start : start + CHUNK]))
    for action in actions:
        if action.id not in seen:
            seen[action.id] = Observation(
                action.id, Check.CHANGED, {}, f"{target.describe()} did not report {action.item}"
            )
    return seen


def poll_all(target: Target, actions: Sequence[Action]) -> dict[str, Progress]:
    """The progress of every action of ``actions``; one left out shows no progress."""
    progress: dict[str, Progress] = {}
    for start in range(0, len(actions), CHUNK):
        progress.update(target.poll(actions[start : start + CHUNK]))
    return {a.id: progress.get(a.id) or Progress(a.id) for a in actions}
