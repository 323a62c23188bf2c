"""Cutting a plan into batches within the concurrency limits.

Actions start in the document's order: a batch is the longest run of the next actions that
keeps at most ``max_in_flight`` actions in the cluster and at most ``max_per_node`` actions
on any one node (:attr:`trimtab.plans.Action.nodes`: the replicas a reassignment adds and
removes, an unload's source and destination). A batch ends at the first action that would go
over a limit, so no action overtakes one before it; the next batch starts when the whole
batch has finished. One action alone is always a batch, whatever the limits.

Worked example, limits 3 in flight and 1 per node: a (1→4), b (2→5), c (3→4), d (2→6) give
the batches [a, b] (c would put a second move on node 4) then [c, d].
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from trimtab.plans.document import Action

__all__ = ["Limits", "batches", "next_batch"]


@dataclass(frozen=True, slots=True)
class Limits:
    """``max_in_flight`` actions in the cluster, ``max_per_node`` per node (None: no limit)."""

    max_in_flight: int
    max_per_node: int | None = None


def next_batch(pending: Sequence[Action], limits: Limits) -> list[Action]:
    """The next batch: the longest prefix of ``pending`` within ``limits`` (at least one)."""
    batch: list[Action] = []
    per_node: Counter[str] = Counter()
    for action in pending:
        if batch and len(batch) >= limits.max_in_flight:
            break
        cap = limits.max_per_node
        if batch and cap is not None and any(per_node[n] >= cap for n in action.nodes):
            break
        batch.append(action)
        per_node.update(action.nodes)
    return batch


def batches(actions: Sequence[Action], limits: Limits) -> list[list[Action]]:
    """All the batches of ``actions``, in order (for estimates; a run cuts them as it goes)."""
    out: list[list[Action]] = []
    rest = list(actions)
    while rest:
        batch = next_batch(rest, limits)
        out.append(batch)
        rest = rest[len(batch) :]
    return out
