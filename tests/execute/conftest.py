"""Helpers of the executor's tests: a plan, its fake cluster, and one run on them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.execute.fake import (
    FakeClock,
    FakeCluster,
    KillableJournal,
    PreviewCluster,
    reassign_plan,
)
from trimtab.execute.batches import Limits
from trimtab.execute.control import Control
from trimtab.execute.journal import read_journal
from trimtab.execute.outcome import Outcome
from trimtab.execute.recorder import Recorder
from trimtab.execute.runner import Runner, RunSettings
from trimtab.plans.document import PlanDocument

MB = 1_000_000


def sample(n: int = 6, size: int = 10 * MB) -> tuple[PlanDocument, dict[str, list[int]]]:
    """``n`` partitions t/0.. each moving replica ``i % 3 + 1`` to broker ``i % 3 + 4``."""
    moves = []
    replicas = {}
    for i in range(n):
        before = [1, 2, 3]
        after = [b if b != i % 3 + 1 else i % 3 + 4 for b in before]
        moves.append((f"t/{i}", before, after, size))
        replicas[f"t/{i}"] = before
    return reassign_plan(moves), replicas


@dataclass
class Run:
    """One run's pieces, kept for assertions."""

    plan: PlanDocument
    cluster: FakeCluster
    clock: FakeClock
    journal: Path
    events: list[dict[str, Any]]
    control: Control
    runner: Runner | None = None

    def go(self, settings: RunSettings | None = None, **header: Any) -> Outcome:
        state = read_journal(self.journal, digest=self.plan.digest)
        with KillableJournal(self.journal, self.cluster) as journal:
            recorder = Recorder(journal, [lambda rec: self.events.append(dict(rec))])
            self.runner = Runner(
                self.plan,
                self.cluster,
                recorder,
                settings or RunSettings(Limits(2), rate=MB, poll_s=1.0),
                control=self.control,
                clock=self.clock,
            )
            return self.runner.run(state, {"plan": "p.json", "mode": "run"} | header)

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["record"] == kind]


def make_run(
    tmp_path: Path,
    plan: PlanDocument | None = None,
    replicas: dict[str, list[int]] | None = None,
    *,
    control_file: bool = False,
    preview: bool = False,
) -> Run:
    if plan is None:
        plan, replicas = sample()
    clock = FakeClock()
    cluster = (PreviewCluster if preview else FakeCluster)(clock, dict(replicas or {}))
    control = Control(control_file=tmp_path / "p.control" if control_file else None)
    return Run(plan, cluster, clock, tmp_path / "p.journal.jsonl", [], control)


def states(events: Sequence[dict[str, Any]], state: str) -> list[str]:
    return [e["id"] for e in events if e["record"] == "action" and e["state"] == state]


def kill_after_first_submit(run: Run) -> None:
    """Kill the run at its next step after the first batch was submitted and took effect."""
    original = run.cluster.submit
    armed = [True]

    def submit(actions: Any) -> None:
        original(actions)
        if armed.pop() if armed else False:
            run.cluster.kill_at = run.cluster.steps + 1

    run.cluster.submit = submit  # type: ignore[method-assign]


def after_submit(run: Run, then: Callable[[], object]) -> None:
    """Call ``then`` each time the cluster has taken a submit (an operator acting mid-run)."""
    original = run.cluster.submit

    def submit(actions: Any) -> None:
        original(actions)
        then()

    run.cluster.submit = submit  # type: ignore[method-assign]
