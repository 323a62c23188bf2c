"""Actions as the plan builders write them, for the Kafka target tests."""

from __future__ import annotations

from trimtab.plans.document import Action

__all__ = ["GB", "move"]

GB = 10**9


def move(index: int, before: list[int], after: list[int], topic: str = "orders") -> Action:
    """A reassignment of ``topic/index`` from ``before`` to ``after`` (1 GB per new replica)."""
    added = [b for b in after if b not in before]
    removed = [b for b in before if b not in after]
    moves = [{"from": a, "to": b} for a, b in zip(removed, added, strict=False)]
    return Action(
        id=f"{topic}/{index}",
        kind="reassign",
        item=f"{topic}/{index}",
        precondition={"replicas": before},
        target={"replicas": after},
        effect={"bytes": GB * len(added), "moves": moves},
    )
