"""The executor's own cost: 10,000 partition moves against the Kafka stand-in.

    .venv/bin/python -m bench.execute                       # 10,000 moves, batches of 1,000
    .venv/bin/python -m bench.execute --topics 10 --partitions 100 --batch 100

Cluster: the Kafka stand-in of the tests (``python -m tests.standins.kafka``) as a process of
its own, 12 brokers, ``--topics`` topics of ``--partitions`` partitions at RF 3, 1 GB each,
copies in simulated time (``--scale`` simulated seconds per real second), so the data moves
in moments and what is measured is trimtab's side: the admin calls and the executor's work.

Plan: each partition's last replica moves to the next broker (a ``reassign`` action each), run
by :class:`trimtab.execute.runner.Runner` through the real Kafka target (kafka-python) in
batches of ``--batch`` (``--max-in-flight``), unthrottled, with the journal fsync'd as in a
real run.

Figures: per batch, the executor's overhead before the data moves, the re-check (observe)
plus the submit (issue 39's goal: under 50 ms at 1,000 partitions a batch), as median and
maximum; admin calls in all and per move, by API; the whole run's wall time. Quality: every
partition ends on its target and was submitted exactly once (the stand-in's own counters,
dumped when it stops).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trimtab.execute.batches import Limits
from trimtab.execute.clock import SystemClock
from trimtab.execute.control import Control
from trimtab.execute.journal import Journal, read_journal
from trimtab.execute.recorder import Recorder
from trimtab.execute.runner import Runner, RunSettings
from trimtab.plans.document import Action, PlanDocument
from trimtab.plans.target import Guards, Observation, Progress, Target, ThrottleSet
from trimtab.systems.kafka.target import KafkaTargetOptions, connect_kafka

BROKERS = 12
ROOT = Path(__file__).resolve().parents[1]


def plan(topics: int, partitions: int) -> PlanDocument:
    """One reassign action per partition: the stand-in's round-robin replicas, the last one
    moved to the next broker."""
    actions = []
    for t in range(topics):
        for i in range(partitions):
            replicas = [(i + k) % BROKERS + 1 for k in range(3)]
            target = [*replicas[:2], (i + 3) % BROKERS + 1]
            item = f"t{t:03d}/{i}"
            actions.append(
                Action(
                    id=f"reassign:{item}",
                    kind="reassign",
                    item=item,
                    precondition={"replicas": replicas},
                    target={"replicas": target},
                    effect={"bytes": 10**9},
                )
            )
    return PlanDocument("kafka", "bench", "2026-11-28T00:00:00Z", tuple(actions))


class Timed:
    """The real target, with the time of each observe and submit (the executor's overhead
    before the data moves) and the batch size it saw."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.system = target.system
        self.observed: list[tuple[int, float]] = []
        self.submitted: list[tuple[int, float]] = []

    def describe(self) -> str:
        return self.target.describe()

    def observe(self, actions: Sequence[Action]) -> Mapping[str, Observation]:
        start = time.perf_counter()
        found = self.target.observe(actions)
        self.observed.append((len(actions), time.perf_counter() - start))
        return found

    def submit(self, actions: Sequence[Action]) -> None:
        start = time.perf_counter()
        self.target.submit(actions)
        self.submitted.append((len(actions), time.perf_counter() - start))

    def poll(self, actions: Sequence[Action]) -> Mapping[str, Progress]:
        return self.target.poll(actions)

    def cancel(self, actions: Sequence[Action]) -> None:
        self.target.cancel(actions)

    def set_throttle(self, rate: int, actions: Sequence[Action]) -> ThrottleSet:
        return self.target.set_throttle(rate, actions)

    def clear_throttle(self, throttle: ThrottleSet) -> None:
        self.target.clear_throttle(throttle)

    def guards(self, moving: Sequence[Action]) -> Guards:
        return self.target.guards(moving)

    def close(self) -> None:
        self.target.close()


def standin(topics: int, partitions: int, scale: float, dump: Path) -> subprocess.Popen[str]:
    spec = ",".join(f"t{t:03d}:{partitions}:3:{10**9}" for t in range(topics))
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "tests.standins.kafka", "--brokers", str(BROKERS)),
            *("--topics", spec, "--scale", str(scale), "--dump", str(dump)),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    document = plan(args.topics, args.partitions)
    dump = work / "standin.json"
    proc = standin(args.topics, args.partitions, args.scale, dump)
    assert proc.stdout is not None
    ready = proc.stdout.readline().split()
    target = Timed(connect_kafka(KafkaTargetOptions(bootstrap_servers=ready[1])))
    journal = work / "plan.journal.jsonl"
    settings = RunSettings(Limits(args.batch), None, poll_s=0.05)
    start = time.perf_counter()
    try:
        with Journal(journal) as opened:
            runner = Runner(
                document,
                target,
                Recorder(opened),
                settings,
                control=Control(control_file=None),
                clock=SystemClock(),
            )
            outcome = runner.run(read_journal(journal, digest=document.digest), {})
        wall = time.perf_counter() - start
        calls = dict(target.target.calls)  # type: ignore[attr-defined]
    finally:
        target.close()
        proc.terminate()
        proc.wait(timeout=60)
        proc.stdout.close()
    counted = json.loads(dump.read_text())
    return {
        "document": document,
        "outcome": outcome,
        "wall": wall,
        "calls": calls,
        "target": target,
        "standin": counted,
    }


def report(args: argparse.Namespace, found: dict[str, Any]) -> None:
    document: PlanDocument = found["document"]
    target: Timed = found["target"]
    moves = len(document.actions)
    pairs = zip(target.submitted, target.observed[-len(target.submitted) :], strict=False)
    overhead = [(n, (s + o) * 1000) for (n, s), (_, o) in pairs]
    full = [ms for n, ms in overhead if n == args.batch] or [ms for _, ms in overhead]
    calls = found["calls"]
    total = sum(calls.values())
    print(
        f"{moves:,} moves in {len(overhead)} batches of at most {args.batch:,}; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(
        f"per batch of {args.batch:,}, re-check + submit: median {statistics.median(full):.1f} ms, "
        f"max {max(full):.1f} ms (goal: under 50 ms)"
    )
    print(f"admin calls: {total:,} in all, {total / moves:.3f} per move")
    for api, n in sorted(calls.items(), key=lambda kv: -kv[1]):
        print(f"  {api:<32} {n:>6,}")
    print(f"whole run: {found['wall']:.1f} s wall; outcome {found['outcome'].reason}")
    counted = found["standin"]
    targets = {a.item: a.target["replicas"] for a in document.actions}
    ended = {
        f"{p['topic']}/{p['partition']}": p["replicas"] for p in counted["assignment"]["partitions"]
    }
    on_target = sum(ended.get(item) == want for item, want in targets.items())
    once = sum(counted["submissions"].get(item) == 1 for item in targets)
    print(
        f"quality: {on_target:,} of {moves:,} partitions on their target, {once:,} submitted "
        f"exactly once; stand-in reads {counted['reads']:,}, writes {counted['writes']:,}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--scale", type=float, default=1e6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        report(args, run(args, Path(work)))


if __name__ == "__main__":
    main()
