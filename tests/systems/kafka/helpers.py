"""Actions as the plan builders write them, for the Kafka target tests."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from tests.standins.kafka import Cluster
from trimtab.plans.document import Action

__all__ = ["GB", "StandinClock", "move"]

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


class StandinClock:
    """The run's clock in the stand-in's simulated time: a sleep advances both; ``on_sleep``
    lets a test change the cluster mid-run."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.t = 0.0
        self.on_sleep: Callable[[int], None] | None = None
        self.sleeps = 0

    def monotonic(self) -> float:
        return self.t

    def now(self) -> datetime:
        return datetime(2026, 11, 28, 12, 0) + timedelta(seconds=self.t)

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        if self.on_sleep is not None:
            self.on_sleep(self.sleeps)
        self.t += max(seconds, 0.0)
        self.cluster.clock.advance(max(seconds, 0.0))

    def wake(self) -> None:
        pass
