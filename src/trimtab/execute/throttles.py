"""The throttles one run has set, kept so that every one of them is removed.

Each batch's moves are throttled through the target (``set_throttle``), which returns a
:class:`~trimtab.plans.target.ThrottleSet` holding the values it found before. A change of
rate while the batch moves sets a new one on top; removal goes newest first, so the values
each set found are restored in turn and the cluster ends as it was before the run. Every set
and removal is journaled, so after a crash ``--resume`` and ``--abort`` remove what a killed
run left (:meth:`Throttles.clear_all` on the journal's list). A removal that fails is a
warning naming the command that retries it: never a reason to stop removing the others.

A kill between the target setting a throttle and the journal recording what it replaced is
covered by journaling the intent first (``op`` ``setting``) with the target's preview of the
set (:class:`~trimtab.plans.target.ThrottlePreview`): the next ``--resume``/``--abort`` clears
the preview. A target without previews cannot be undone there: a warning names the rate and
the actions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trimtab.errors import TargetError
from trimtab.execute.recorder import Recorder
from trimtab.plans.document import Action
from trimtab.plans.target import Target, ThrottlePreview, ThrottleSet

__all__ = ["Throttles"]


class Throttles:
    """The stack of throttle sets in force, and the rate the run wants."""

    def __init__(self, target: Target, recorder: Recorder, rate: int | None) -> None:
        self.target = target
        self.recorder = recorder
        self.rate = rate
        self.active: list[ThrottleSet] = []

    def apply(self, actions: Sequence[Action], *, op: str = "set") -> None:
        """Throttle ``actions`` at :attr:`rate` (nothing without a rate)."""
        if self.rate is None or not actions:
            return
        intent: dict[str, Any] = {"record": "throttle", "op": "setting", "rate": self.rate,
                                  "ids": [a.id for a in actions]}  # fmt: skip
        if isinstance(self.target, ThrottlePreview):
            intent["throttle"] = self.target.preview_throttle(self.rate, actions).as_json()
        self.recorder.record(intent)
        throttle = self.target.set_throttle(self.rate, actions)
        self.active.append(throttle)
        self.recorder.record({"record": "throttle", "op": op, "throttle": throttle.as_json()})

    def change(self, rate: int, actions: Sequence[Action]) -> None:
        """A new rate, for the moves in flight now and the batches to come."""
        if rate == self.rate:
            return
        self.rate = rate
        self.apply(actions, op="changed")

    def clear(self) -> list[str]:
        """Remove every throttle this run set, newest first; warnings for the failures."""
        warnings = self.clear_all(self.active)
        self.active = []
        return warnings

    def recover(self, setting: Mapping[str, Any]) -> list[str]:
        """Undo the throttle a killed run was setting: through its journaled preview, or (a
        target without previews) a warning that it cannot be undone."""
        if "throttle" in setting:
            return self.clear_all([ThrottleSet.from_json(setting["throttle"])])
        return [self.lost(setting)]

    def lost(self, setting: Mapping[str, Any]) -> str:
        """Journal that a killed run's throttle ``setting`` cannot be undone; the warning."""
        self.recorder.record(
            {"record": "throttle", "op": "lost"}
            | {k: v for k, v in setting.items() if k in ("rate", "ids")}
        )
        return (
            f"a run was killed while setting a throttle of {setting.get('rate')} B/s for "
            f"actions {', '.join(map(str, setting.get('ids', [])))}: the values it replaced "
            "cannot be known, so check the throttle settings of their brokers and topics "
            "(kafka-configs --describe; Redpanda raft_learner_recovery_rate) and remove it"
        )

    def clear_all(self, throttles: Sequence[ThrottleSet]) -> list[str]:
        """Remove ``throttles`` (e.g. those a crashed run journaled), newest first."""
        warnings = []
        for throttle in reversed(list(throttles)):
            try:
                self.target.clear_throttle(throttle)
            except TargetError as exc:
                warnings.append(
                    f"{exc}; a throttle trimtab set is still in place: run trimtab execute "
                    "--abort (or --resume) again to remove it"
                )
                continue
            self.recorder.record(
                {"record": "throttle", "op": "cleared", "throttle": throttle.as_json()}
            )
        return warnings
