"""A run's figures, kept from its records: what the progress bar and the metrics show.

The ETA comes from the rate observed in this run (bytes, or actions for plans without bytes,
done since the run started, over the time since), never from the planned throttle: a throttle
says what may move, the cluster says what does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RunStats"]


@dataclass(slots=True)
class RunStats:
    """Totals of the plan, the state of each action, bytes moved, the throttle in force."""

    actions_total: int
    bytes_total: int
    clock: Callable[[], float]
    state: dict[str, tuple[str, str]] = field(default_factory=dict)
    bytes_done: int = 0
    bytes_moving: int = 0
    throttle: int | None = None
    _start: float | None = None
    _start_bytes: int = 0
    _start_done: int = 0

    def __call__(self, rec: Mapping[str, Any]) -> None:
        """Listener: fold one record in."""
        kind = rec.get("record")
        if kind == "action":
            aid = str(rec["id"])
            self.state[aid] = (str(rec["state"]), str(rec.get("cause", "")))
            if rec["state"] == "done":
                self.bytes_done += int(rec.get("bytes", 0))
        elif kind == "progress":
            self.bytes_moving = int(rec.get("bytes_moving", 0))
        elif kind == "throttle" and rec.get("op") in ("set", "changed"):
            self.throttle = int(rec["throttle"]["rate"])
        elif kind == "throttle" and rec.get("op") == "cleared":
            self.throttle = None
        elif kind == "run":
            self.mark_start()

    def mark_start(self) -> None:
        """Start the observed-rate clock here (after what earlier runs did)."""
        self._start = self.clock()
        self._start_bytes = self.bytes_moved
        self._start_done = self.actions_done

    @property
    def actions_done(self) -> int:
        return sum(1 for s, _ in self.state.values() if s == "done")

    @property
    def bytes_moved(self) -> int:
        return self.bytes_done + self.bytes_moving

    def by_state(self) -> Counter[tuple[str, str]]:
        """Actions counted by (state, cause); actions not yet journaled are ("pending", "")."""
        counts = Counter(self.state.values())
        pending = self.actions_total - len(self.state)
        if pending:
            counts[("pending", "")] += pending
        return counts

    def eta(self) -> float | None:
        """Seconds left at the observed rate; None until something moved."""
        if self._start is None:
            return None
        elapsed = self.clock() - self._start
        if elapsed <= 0:
            return None
        if self.bytes_total > 0:
            moved = self.bytes_moved - self._start_bytes
            left = max(self.bytes_total - self.bytes_moved, 0)
        else:
            moved = self.actions_done - self._start_done
            left = self.actions_total - self.actions_done
        if left == 0:
            return 0.0
        return left * elapsed / moved if moved > 0 else None
