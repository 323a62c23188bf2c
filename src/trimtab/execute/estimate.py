"""How long a plan takes at a throttle: the dry run's estimate, and the limits it assumes.

Each batch takes as long as its busiest node needs: the bytes of the batch's actions that
touch the node (a reassignment copies the whole partition to each replica it adds) divided by
the throttle, which Kafka applies per broker. Batches run one after the other. An action
without bytes (a Pulsar unload) costs the plan's ``broker_cooldown_s`` (upstream's pause
between unloads of one broker) in its batch. Without a throttle there is no estimate, nor
when a reassignment's size is unknown (a plan made without partition sizes): 0 s would lie.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from trimtab.execute.batches import Limits, batches
from trimtab.plans.document import Action

__all__ = ["Estimate", "estimate"]


@dataclass(frozen=True, slots=True)
class Estimate:
    """Batches, the busiest node's bytes summed over batches, and the seconds (None: unknown)."""

    batches: int
    bytes: int
    seconds: float | None


def estimate(
    actions: Sequence[Action], limits: Limits, rate: int | None, *, cooldown_s: float = 0.0
) -> Estimate:
    """The :class:`Estimate` of running ``actions`` within ``limits`` at ``rate`` bytes/s."""
    cut = batches(actions, limits)
    busiest_total = 0
    seconds = 0.0
    for batch in cut:
        per_node: Counter[str] = Counter()
        for action in batch:
            for node in action.nodes:
                per_node[node] += action.bytes
        busiest = max(per_node.values(), default=0)
        busiest_total += busiest
        if rate:
            seconds += busiest / rate
        if any(a.bytes == 0 for a in batch):
            seconds += cooldown_s
    sized = all(a.bytes > 0 for a in actions if a.kind == "reassign")
    known = (bool(rate) or busiest_total == 0) and sized
    return Estimate(len(cut), busiest_total, seconds if known else None)
