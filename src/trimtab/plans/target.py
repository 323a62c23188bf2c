"""What ``trimtab execute`` asks of a real system: the contract each executor target fulfils.

The executor (:mod:`trimtab.execute`) decides what runs when: batches, concurrency, throttle,
back-off, the journal. A target (``trimtab.systems.kafka.target``, ``trimtab.systems.pulsar
.target``) only talks to its cluster: it reads the live state an action assumes, starts and
cancels actions, sets and removes throttles, and reads the guards. Keeping that line here lets
the executor be tested against every target alike, and a target against its stand-in server.

Every method may raise :class:`trimtab.errors.TargetError` (unreachable, refused, an
authentication failure) with one line naming the endpoint; nothing here retries forever.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from trimtab.plans.document import Action

__all__ = [
    "Check",
    "Guards",
    "Observation",
    "Progress",
    "Target",
    "ThrottlePreview",
    "ThrottleSet",
]


class Check(StrEnum):
    """How an action's precondition compares with the live cluster."""

    READY = "ready"  # the precondition holds and nothing moves the item: the action may start
    DONE = "done"  # the item already is where the action takes it (run before, or by someone)
    MOVING = "moving"  # the item is moving to exactly the action's target (started before)
    CHANGED = "changed"  # neither: someone else changed it, or a node it needs is gone


@dataclass(frozen=True, slots=True)
class Observation:
    """One action's live check: ``live`` is what the cluster shows for the item, in the
    shape of the action's ``precondition`` (so a diff prints side by side); ``why`` says what
    no longer holds when ``check`` is CHANGED."""

    action_id: str
    check: Check
    live: Mapping[str, Any]
    why: str = ""


@dataclass(frozen=True, slots=True)
class Progress:
    """A started action's progress: done, failed (with the cluster's reason) or moving."""

    action_id: str
    done: bool = False
    failed: str | None = None
    bytes_done: int = 0


@dataclass(frozen=True, slots=True)
class ThrottleSet:
    """The throttle settings a target made, exactly enough to undo them after a crash:
    ``entries`` are JSON objects (resource, key, value set, value found before) the target
    itself wrote and reads back. The journal stores them."""

    rate: int
    entries: tuple[Mapping[str, Any], ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"rate": self.rate, "entries": [dict(e) for e in self.entries]}

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> ThrottleSet:
        return ThrottleSet(int(doc["rate"]), tuple(dict(e) for e in doc.get("entries", [])))


@dataclass(frozen=True, slots=True)
class Guards:
    """What says a run harms the cluster: items under-replicated beyond the moving ones
    (Kafka), each broker's load from its latest report (Pulsar), and nodes that left."""

    under_replicated: tuple[str, ...] = ()
    loads: Mapping[str, float] = field(default_factory=dict)
    missing_nodes: tuple[str, ...] = ()


class Target(Protocol):
    """A live cluster ``trimtab execute`` acts on (see the module docstring)."""

    system: str

    def describe(self) -> str:
        """The endpoint, for messages (never a credential)."""
        ...

    def observe(self, actions: Sequence[Action]) -> Mapping[str, Observation]:
        """The live check of each action (by id), read now, read-only."""
        ...

    def submit(self, actions: Sequence[Action]) -> None:
        """Start ``actions`` (their checks were READY just before)."""
        ...

    def poll(self, actions: Sequence[Action]) -> Mapping[str, Progress]:
        """Progress of started actions (by id)."""
        ...

    def cancel(self, actions: Sequence[Action]) -> None:
        """Cancel started actions that are not done (Kafka: a reassignment to null)."""
        ...

    def set_throttle(self, rate: int, actions: Sequence[Action]) -> ThrottleSet:
        """Throttle the moves of ``actions`` to ``rate`` bytes/s; a target without throttles
        returns an empty :class:`ThrottleSet`."""
        ...

    def clear_throttle(self, throttle: ThrottleSet) -> None:
        """Undo ``throttle`` (also one read back from a journal after a crash)."""
        ...

    def guards(self, moving: Sequence[Action]) -> Guards:
        """The harm readings now; ``moving`` are the actions in flight (not counted)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class ThrottlePreview(Protocol):
    """Optional for a target: what :meth:`Target.set_throttle` would write, and the values it
    would replace, without writing anything. The executor journals it before setting, so a
    kill between the cluster accepting a throttle and the journal recording it still leaves
    enough to undo it (``clear_throttle`` of the preview)."""

    def preview_throttle(self, rate: int, actions: Sequence[Action]) -> ThrottleSet: ...
