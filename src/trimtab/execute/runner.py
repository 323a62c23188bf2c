"""The run: batches started in order, each re-checked first, watched until done.

Algorithm, for each batch (:mod:`trimtab.execute.batches`):

1. Wait until new work may start: inside ``--window``, no harm (:mod:`~trimtab.execute
   .backoff`), no stop request.
2. Observe the batch's actions. One CHANGED: nothing of the batch starts, the run stops with
   the diff (exit 3). DONE: journaled done, never run again. MOVING (started by a run that
   crashed): journaled started and watched. READY: throttled, journaled started, submitted.
3. Poll until every action is done or failed, reading the guards and the control file on
   each poll: a harm halves the throttle; past ``--abort-on``, or ``abort`` in the control
   file, the moves in flight are cancelled and the run stops (exit 5). SIGINT/SIGTERM stop it
   after the poll (exit 130), moves left running.
4. Remove the batch's throttles; a failed action stops the run after its batch (exit 4).

Whatever way the run ends (an exception included) the throttles it set are removed.
Journaling ``started`` before submitting, and observing before every batch, is what makes a
resumed run run each action exactly once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trimtab.config.secrets import scrub
from trimtab.errors import TrimtabError
from trimtab.execute.backoff import BackOff, GuardLimits
from trimtab.execute.batches import Limits, next_batch
from trimtab.execute.clock import Clock
from trimtab.execute.control import Control
from trimtab.execute.journal import JournalState
from trimtab.execute.observe import observe_all, poll_all
from trimtab.execute.outcome import (
    EXIT_ABORTED,
    EXIT_CHANGED,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    Diff,
    Outcome,
)
from trimtab.execute.rates import Window
from trimtab.execute.recorder import Recorder
from trimtab.execute.throttles import Throttles
from trimtab.plans.document import Action, PlanDocument
from trimtab.plans.target import Check, Observation, Target

__all__ = ["RunSettings", "Runner", "action_record"]


@dataclass(frozen=True, slots=True)
class RunSettings:
    """How a run goes: concurrency, throttle, window, guards, poll interval."""

    limits: Limits
    rate: int | None = None
    window: Window | None = None
    guards: GuardLimits = field(default_factory=GuardLimits)
    poll_s: float = 5.0


def action_record(
    action: Action, state: str, cause: str, reason: str = "", **extra: Any
) -> dict[str, Any]:
    """The journal record of one action's transition (``cause``: a short code for metrics)."""
    return {
        "record": "action",
        "id": action.id,
        "item": action.item,
        "state": state,
        "cause": cause,
        "reason": reason,
    } | extra


class Runner:
    """Runs one approved plan against one target (see the module docstring)."""

    def __init__(
        self,
        plan: PlanDocument,
        target: Target,
        recorder: Recorder,
        settings: RunSettings,
        *,
        control: Control,
        clock: Clock,
    ) -> None:
        self.plan = plan
        self.target = target
        self.rec = recorder
        self.settings = settings
        self.control = control
        self.clock = clock
        self.throttles = Throttles(target, recorder, settings.rate)
        self.backoff = BackOff(settings.guards)
        self.warnings: list[str] = []
        self._harmed = False

    def run(self, state: JournalState, header: Mapping[str, Any]) -> Outcome:
        """Run what ``state`` (the journal so far) has not done; remove every throttle."""
        self.rec.record(
            {"record": "run", "digest": self.plan.digest, "pid": os.getpid()} | dict(header)
        )
        if self.control.control_file is not None:
            self.rec.record({"record": "control", "path": str(self.control.control_file)})
        self.warnings += self.throttles.clear_all(state.throttles)
        if state.setting is not None:
            self.warnings += self.throttles.recover(state.setting)
        try:
            outcome = self._run(state)
        except BaseException as exc:
            self.warnings += self.throttles.clear()
            code = 2 if isinstance(exc, TrimtabError) else 1  # the command's exit status
            self.rec.record({"record": "stop", "reason": f"error: {scrub(str(exc))}", "exit": code})
            raise
        self.warnings += self.throttles.clear()
        stop = {"record": "stop", "reason": outcome.reason, "exit": outcome.exit}
        if outcome.diffs:
            stop["diff"] = [d.as_json() for d in outcome.diffs]
        self.rec.record(stop)
        return outcome

    def _run(self, state: JournalState) -> Outcome:
        done = set(state.with_state("done"))
        pending = [a for a in self.plan.actions if a.id not in done]
        resumed = set(state.with_state("started"))
        first = [a for a in pending if a.id in resumed]
        number = 0
        while pending:
            stop = self._wait_to_start()
            if stop is not None:
                return stop
            batch = first or next_batch(pending, self.settings.limits)
            first = []
            outcome = self._batch(number, batch)
            if outcome is not None:
                return outcome
            ids = {a.id for a in batch}
            pending = [a for a in pending if a.id not in ids]
            number += 1
        return Outcome(EXIT_OK, "done")

    def _batch(self, number: int, batch: Sequence[Action]) -> Outcome | None:
        seen = observe_all(self.target, batch)
        diffs = tuple(_diff(a, seen[a.id]) for a in batch if seen[a.id].check is Check.CHANGED)
        if diffs:
            self.rec.record(
                *(
                    {
                        "record": "check",
                        "id": d.action_id,
                        "check": "changed",
                        "reason": d.why,
                        "live": dict(d.live),
                    }
                    for d in diffs
                )
            )
            return Outcome(EXIT_CHANGED, "changed", diffs=diffs)
        self.rec.record(
            {"record": "batch", "batch": number, "edge": "start", "ids": [a.id for a in batch]},
            *(action_record(a, "planned", "batched") for a in batch),
        )
        already = [a for a in batch if seen[a.id].check is Check.DONE]
        self.rec.record(
            *(
                action_record(
                    a,
                    "done",
                    "already-done",
                    "the cluster already shows the target",
                    bytes=0,
                    live=dict(seen[a.id].live),
                )
                for a in already
            )
        )
        moving = [a for a in batch if seen[a.id].check is Check.MOVING]
        ready = [a for a in batch if seen[a.id].check is Check.READY]
        self.throttles.apply([*moving, *ready])
        self.rec.record(
            *(action_record(a, "started", "resumed", "already moving") for a in moving),
            *(action_record(a, "started", "submitted") for a in ready),
        )
        if ready:
            self.target.submit(ready)
        outcome = self._watch([*moving, *ready])
        self.warnings += self.throttles.clear()
        self.rec.record(
            {"record": "batch", "batch": number, "edge": "end", "ids": [a.id for a in batch]}
        )
        return outcome

    def _watch(self, flight: Sequence[Action]) -> Outcome | None:
        """Poll the batch's moves to their end (or a stop); None when all are done."""
        left = {a.id: a for a in flight}
        failed: list[str] = []
        while left:
            stop = self._requests(list(left.values()))
            if stop is not None:
                return stop
            progress = poll_all(self.target, list(left.values()))
            ended = []  # one journal write (one fsync) per poll, however many ended
            for aid, p in progress.items():
                action = left.get(aid)
                if action is None:
                    continue
                if p.done:
                    del left[aid]
                    ended.append(action_record(action, "done", "completed", bytes=action.bytes))
                elif p.failed is not None:
                    del left[aid]
                    failed.append(aid)
                    ended.append(action_record(action, "failed", "cluster", p.failed))
            self.rec.record(*ended)
            moving = sum(p.bytes_done for aid, p in progress.items() if aid in left)
            self.rec.tell({"record": "progress", "bytes_moving": moving, "in_flight": len(left)})
            stop = self._guard(
                list(left.values()), {k: v for k, v in progress.items() if k in left}
            )
            if stop is not None:
                return stop
            if left:
                self.clock.sleep(self.settings.poll_s)
        if failed:
            return Outcome(EXIT_FAILED, "failed", failed=tuple(failed))
        return None

    def _requests(self, flight: Sequence[Action]) -> Outcome | None:
        """Signals and the control file: a stop, or a new rate applied to ``flight``."""
        if self.control.stop is not None:
            return Outcome(EXIT_INTERRUPTED, f"interrupted by {self.control.stop}")
        request = self.control.poll()
        self.warnings += self.control.warnings
        self.control.warnings.clear()
        if request is None:
            return None
        if request.abort:
            return self._abort(flight, "abort requested in the control file")
        if request.rate is not None:
            self.throttles.change(request.rate, flight)
        return None

    def _guard(self, flight: Sequence[Action], progress: Mapping[str, Any]) -> Outcome | None:
        """Read the guards once: back off (halve the throttle) or stop past --abort-on."""
        guards = self.target.guards(flight)
        verdict = self.backoff.check(
            guards, progress, [a.item for a in flight], self.clock.monotonic()
        )
        if verdict.abort:
            return self._abort(flight, f"past --abort-on: {'; '.join(verdict.harms)}")
        if verdict.back_off:
            rate = self.throttles.rate
            halved = max(rate // 2, 1) if rate is not None else None
            harms = "; ".join(verdict.harms)
            count = self.backoff.back_offs
            self.rec.record({"record": "backoff", "reason": harms, "rate": halved, "count": count})
            if halved is not None:
                self.throttles.change(halved, flight)
        self._harmed = bool(verdict.harms)
        return None

    def _abort(self, flight: Sequence[Action], why: str) -> Outcome:
        """Cancel the moves in flight and stop (the throttles are removed by :meth:`run`)."""
        if flight:
            self.target.cancel(flight)
            self.rec.record(*(action_record(a, "cancelled", "aborted", why) for a in flight))
        return Outcome(EXIT_ABORTED, f"aborted: {why}")

    def _wait_to_start(self) -> Outcome | None:
        """Wait for the window and for the harms to clear; a stop request ends the wait."""
        waited = False
        while True:
            stop = self._requests(())
            if stop is not None:
                return stop
            opens = (
                self.settings.window.seconds_until_open(self.clock.now())
                if self.settings.window
                else 0.0
            )
            self._harmed = False
            if opens == 0:
                stop = self._guard((), {})
                if stop is not None or not self._harmed:
                    return stop
            if not waited:
                why = (
                    f"outside --window {self.settings.window}" if opens else "a guard reports harm"
                )
                self.rec.tell({"record": "wait", "reason": why, "seconds": opens or None})
                waited = True
            self.clock.sleep(min(opens, self.settings.poll_s) if opens else self.settings.poll_s)


def _diff(action: Action, seen: Observation) -> Diff:
    return Diff(action.id, action.item, action.precondition, seen.live, seen.why or "changed")
