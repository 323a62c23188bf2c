"""An in-memory cluster for the executor's tests: partitions move in simulated time.

It implements :class:`trimtab.plans.target.Target` the way the real targets do (observe by
comparing precondition and target with the live replicas, moves that copy ``bytes`` at the
throttled rate, throttles that remember the value they replaced) and counts reads and writes.
``kill_at`` simulates a SIGKILL at the n-th step (the start of a target call or journal
append, or the moment after a write took effect): that step and every later one raise
:class:`Killed`, which no cleanup code can get past, as no cleanup runs in a killed process.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from trimtab.execute.journal import Journal
from trimtab.plans.document import Action, PlanDocument
from trimtab.plans.target import Check, Guards, Observation, Progress, ThrottleSet

__all__ = [
    "FakeClock",
    "FakeCluster",
    "KillableJournal",
    "Killed",
    "PreviewCluster",
    "reassign_plan",
]

UNTHROTTLED = 10**9  # bytes/s a move copies without a throttle


class Killed(BaseException):
    """The process was killed here."""


class FakeClock:
    """Simulated time: ``sleep`` advances it; no test waits for real."""

    def __init__(self, start: datetime = datetime(2026, 11, 28, 12, 0)) -> None:
        self.t = 0.0
        self.start = start
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.t

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.t)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += max(seconds, 0.0)

    def wake(self) -> None:
        pass


@dataclass
class _Move:
    target: dict[str, Any]
    size: int
    done: int = 0


@dataclass
class FakeCluster:
    """Partitions (``item`` -> replicas), moves in flight, one broker-wide throttle."""

    clock: FakeClock
    replicas: dict[str, list[int]]
    sizes: dict[str, int] = field(default_factory=dict)
    system: str = "kafka"
    moves: dict[str, _Move] = field(default_factory=dict)
    throttle: int | None = None
    reads: int = 0
    writes: int = 0
    submitted: Counter[str] = field(default_factory=Counter)
    in_flight_max: int = 0
    throttle_log: list[int | None] = field(default_factory=list)
    under_replicated: tuple[str, ...] = ()
    moving_under_replicated: bool = False  # moves show as under-replicated (Kafka adds replicas)
    loads: dict[str, float] = field(default_factory=dict)
    stalled: set[str] = field(default_factory=set)
    failing: dict[str, str] = field(default_factory=dict)
    kill_at: int | None = None
    steps: int = 0
    dead: bool = False
    closed: bool = False
    _last: float = 0.0

    # -- crash simulation -----------------------------------------------------------------
    def step(self) -> None:
        if self.dead:
            raise Killed
        self.steps += 1
        if self.kill_at is not None and self.steps >= self.kill_at:
            self.dead = True
            raise Killed

    def revive(self) -> None:
        self.dead = False
        self.kill_at = None

    # -- Target ---------------------------------------------------------------------------
    def describe(self) -> str:
        return "fake://cluster"

    def _tick(self) -> None:
        now = self.clock.monotonic()
        elapsed, self._last = now - self._last, now
        rate = self.throttle or UNTHROTTLED
        for item, move in list(self.moves.items()):
            if item not in self.stalled:
                move.done = min(move.size, move.done + int(rate * elapsed))
            if move.done >= move.size and item not in self.failing:
                self.replicas[item] = list(move.target["replicas"])
                del self.moves[item]

    def observe(self, actions: Sequence[Action]) -> Mapping[str, Observation]:
        self.step()
        self.reads += 1
        self._tick()
        out = {}
        for a in actions:
            live = {"replicas": list(self.replicas.get(a.item, []))}
            move = self.moves.get(a.item)
            if move is not None:
                check = Check.MOVING if move.target == dict(a.target) else Check.CHANGED
                why = "" if check is Check.MOVING else "another reassignment is in progress"
            elif live == dict(a.target):
                check, why = Check.DONE, ""
            elif live == dict(a.precondition):
                check, why = Check.READY, ""
            else:
                check, why = Check.CHANGED, f"replicas are {live['replicas']}"
            out[a.id] = Observation(a.id, check, live, why)
        return out

    def submit(self, actions: Sequence[Action]) -> None:
        self.step()
        self.writes += 1
        for a in actions:
            self.submitted[a.item] += 1
            self.moves[a.item] = _Move(dict(a.target), int(self.sizes.get(a.item, a.bytes)))
        self.in_flight_max = max(self.in_flight_max, len(self.moves))
        self.step()  # a kill after the write took effect

    def poll(self, actions: Sequence[Action]) -> Mapping[str, Progress]:
        self.step()
        self.reads += 1
        self._tick()
        out = {}
        for a in actions:
            move = self.moves.get(a.item)
            if a.item in self.failing and move is not None and move.done >= move.size:
                del self.moves[a.item]
                out[a.id] = Progress(a.id, failed=self.failing[a.item])
            elif move is None:
                out[a.id] = Progress(a.id, done=True, bytes_done=a.bytes)
            else:
                out[a.id] = Progress(a.id, bytes_done=move.done)
        return out

    def cancel(self, actions: Sequence[Action]) -> None:
        self.step()
        self.writes += 1
        for a in actions:
            self.moves.pop(a.item, None)
        self.step()

    def set_throttle(self, rate: int, actions: Sequence[Action]) -> ThrottleSet:
        self.step()
        self.writes += 1
        entry = {"resource": "broker", "key": "rate", "value": rate, "before": self.throttle}
        self.throttle = rate
        self.throttle_log.append(rate)
        self.step()
        return ThrottleSet(rate, (entry,))

    def clear_throttle(self, throttle: ThrottleSet) -> None:
        self.step()
        self.writes += 1
        self.throttle = throttle.entries[0]["before"] if throttle.entries else None
        self.throttle_log.append(self.throttle)
        self.step()

    def guards(self, moving: Sequence[Action]) -> Guards:
        self.step()
        self.reads += 1
        urp = self.under_replicated
        if self.moving_under_replicated:
            urp += tuple(self.moves)
        return Guards(under_replicated=urp, loads=dict(self.loads))

    def close(self) -> None:
        self.closed = True


class PreviewCluster(FakeCluster):
    """The fake cluster that also previews its throttles (:class:`ThrottlePreview`)."""

    def preview_throttle(self, rate: int, actions: Sequence[Action]) -> ThrottleSet:
        self.step()
        self.reads += 1
        entry = {"resource": "broker", "key": "rate", "value": rate, "before": self.throttle}
        return ThrottleSet(rate, (entry,))


class KillableJournal(Journal):
    """A journal whose appends are steps of the cluster's simulated SIGKILL."""

    def __init__(self, path: Path, cluster: FakeCluster) -> None:
        super().__init__(path)
        self.cluster = cluster

    def append(self, *records: Mapping[str, Any]) -> None:
        self.cluster.step()
        super().append(*records)
        self.cluster.step()


def reassign_plan(
    moves: Sequence[tuple[str, Sequence[int], Sequence[int], int]],
    *,
    settings: Mapping[str, Any] | None = None,
    system: str = "kafka",
) -> PlanDocument:
    """A plan of reassignments ``(item, before, after, bytes)``, ids ``a0``, ``a1``..."""
    actions = tuple(
        Action(
            id=f"a{i}",
            kind="reassign",
            item=item,
            precondition={"replicas": list(before)},
            target={"replicas": list(after)},
            effect={"bytes": size},
        )
        for i, (item, before, after, size) in enumerate(moves)
    )
    return PlanDocument(
        system=system,
        cluster="c1",
        created="2026-11-28T12:00:00Z",
        actions=actions,
        source={"argv": ["trimtab", "rebalance", "--plan", "p.json"]},
        summary={"actions": len(actions)},
        settings=dict(settings or {}),
    )
