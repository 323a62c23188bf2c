"""The runner against the in-memory cluster: batches, checks, throttles, back-off, window."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from tests.execute.conftest import (
    MB,
    Run,
    after_submit,
    kill_after_first_submit,
    make_run,
    sample,
    states,
)
from tests.execute.fake import FakeClock, Killed
from trimtab.errors import TargetError
from trimtab.execute.backoff import GuardLimits
from trimtab.execute.batches import Limits
from trimtab.execute.outcome import EXIT_ABORTED, EXIT_CHANGED, EXIT_FAILED, EXIT_INTERRUPTED
from trimtab.execute.rates import parse_window
from trimtab.execute.runner import RunSettings


def test_a_run_moves_every_partition_once_and_removes_its_throttles(tmp_path: Path) -> None:
    """Every action done exactly once, the cluster at the plan's targets, no throttle left."""
    run = make_run(tmp_path)
    outcome = run.go()
    assert outcome.exit == 0
    assert all(n == 1 for n in run.cluster.submitted.values())
    assert len(run.cluster.submitted) == len(run.plan.actions)
    for action in run.plan.actions:
        assert run.cluster.replicas[action.item] == action.target["replicas"]
    assert run.cluster.throttle is None
    assert run.kinds("stop")[-1]["reason"] == "done"


def test_batches_keep_the_in_flight_limits(tmp_path: Path) -> None:
    """Never more moves in flight than --max-in-flight, nor per broker than its limit."""
    run = make_run(tmp_path)
    run.go(RunSettings(Limits(3, max_per_node=1), rate=MB, poll_s=1.0))
    assert run.cluster.in_flight_max <= 3
    for batch in run.kinds("batch"):
        nodes = [n for i in batch["ids"] for n in run.plan.action(i).nodes]
        assert len(nodes) == len(set(nodes)), batch


def test_a_changed_precondition_stops_before_its_batch_with_exit_3(tmp_path: Path) -> None:
    """Someone moved t/3: its batch does not start, the journal says where, exit 3."""
    run = make_run(tmp_path)
    run.cluster.replicas["t/3"] = [7, 8, 9]
    outcome = run.go(RunSettings(Limits(2), rate=MB, poll_s=1.0))
    assert outcome.exit == EXIT_CHANGED
    assert [d.item for d in outcome.diffs] == ["t/3"]
    assert "t/2" not in run.cluster.submitted  # t/2 shares the batch with t/3
    assert run.cluster.submitted.keys() == {"t/0", "t/1"}
    checks = run.kinds("check")
    assert checks[0]["id"] == "a3" and checks[0]["live"] == {"replicas": [7, 8, 9]}
    assert run.kinds("stop")[-1]["exit"] == EXIT_CHANGED
    assert run.cluster.throttle is None


def test_done_actions_are_not_run_again(tmp_path: Path) -> None:
    """An item already at its target is journaled done and never submitted."""
    run = make_run(tmp_path)
    run.cluster.replicas["t/0"] = list(run.plan.actions[0].target["replicas"])
    assert run.go().exit == 0
    assert "t/0" not in run.cluster.submitted
    done = [e for e in run.kinds("action") if e["id"] == "a0" and e["state"] == "done"]
    assert done[0]["cause"] == "already-done"


def test_a_failed_action_stops_after_its_batch_with_exit_4(tmp_path: Path) -> None:
    """The cluster reports a failure: exit 4, throttles removed, no later batch."""
    run = make_run(tmp_path)
    run.cluster.failing["t/1"] = "NOT_ENOUGH_REPLICAS"
    outcome = run.go()
    assert outcome.exit == EXIT_FAILED and outcome.failed == ("a1",)
    assert "t/2" not in run.cluster.submitted
    assert run.cluster.throttle is None


def test_an_exception_from_the_target_still_removes_the_throttles(tmp_path: Path) -> None:
    """A target error mid-run propagates, and the throttle set for the batch is removed."""
    run = make_run(tmp_path)
    original = run.cluster.poll

    def broken(actions):
        raise TargetError("fake://cluster: connection reset")

    run.cluster.poll = broken  # type: ignore[method-assign]
    with pytest.raises(TargetError):
        run.go()
    run.cluster.poll = original  # type: ignore[method-assign]
    assert run.cluster.throttle is None
    assert run.kinds("stop")[-1]["reason"].startswith("error")


def test_sigint_stops_after_the_poll_removes_throttles_and_leaves_moves(tmp_path: Path) -> None:
    """An interrupt: exit 130, no throttle left, the moves in flight go on."""
    run = make_run(tmp_path)
    after_submit(run, lambda: run.control.interrupt("SIGINT"))
    outcome = run.go()
    assert outcome.exit == EXIT_INTERRUPTED
    assert run.cluster.throttle is None
    assert run.cluster.moves  # not cancelled


def test_abort_in_the_control_file_cancels_moves_and_removes_throttles(tmp_path: Path) -> None:
    """'abort' written into the control file: in-flight moves cancelled, exit 5."""
    run = make_run(tmp_path, control_file=True)
    run.control.start(MB)
    after_submit(run, lambda: (tmp_path / "p.control").write_text("abort\n"))
    outcome = run.go()
    assert outcome.exit == EXIT_ABORTED
    assert not run.cluster.moves
    assert run.cluster.throttle is None
    assert set(states(run.events, "cancelled")) == {"a0", "a1"}


def test_a_new_rate_in_the_control_file_changes_the_throttle(tmp_path: Path) -> None:
    """A rate written mid-run is set on the moves in flight and journaled 'changed'."""
    run = make_run(tmp_path, control_file=True)
    run.control.start(MB)
    after_submit(run, lambda: (tmp_path / "p.control").write_text("4MB/s\n"))
    assert run.go().exit == 0
    changed = [e for e in run.kinds("throttle") if e["op"] == "changed"]
    assert changed and changed[0]["throttle"]["rate"] == 4 * MB
    assert run.cluster.throttle is None


def _harm_after_submit(run: Run) -> None:
    after_submit(run, lambda: setattr(run.cluster, "under_replicated", ("other/0",)))


def test_an_under_replicated_partition_halves_the_throttle(tmp_path: Path) -> None:
    """A harm appears while the last batch moves: one back-off, the throttle halves."""
    run = make_run(tmp_path)
    _harm_after_submit(run)
    outcome = run.go(RunSettings(Limits(6), rate=8 * MB, poll_s=1.0))
    assert outcome.exit == 0
    assert [b["rate"] for b in run.kinds("backoff")] == [4 * MB]
    assert run.cluster.throttle_log[:2] == [8 * MB, 4 * MB]
    assert run.cluster.throttle is None


def test_a_lasting_harm_holds_new_batches_then_stops_past_abort_on(tmp_path: Path) -> None:
    """The harm never clears: no new batch starts; each stall time-out halves again; the
    fourth back-off (past --abort-on 3) stops the run as --abort does."""
    run = make_run(tmp_path)
    _harm_after_submit(run)
    outcome = run.go(RunSettings(Limits(2), rate=8 * MB, poll_s=10.0))
    assert outcome.exit == EXIT_ABORTED
    assert [b["rate"] for b in run.kinds("backoff")] == [4 * MB, 2 * MB, 1 * MB]
    assert run.cluster.submitted.keys() == {"t/0", "t/1"}
    assert run.cluster.throttle is None


def test_moving_partitions_are_not_harm(tmp_path: Path) -> None:
    """Under-replication of the partitions this run moves does not back off."""
    run = make_run(tmp_path)
    run.cluster.moving_under_replicated = True
    assert run.go().exit == 0
    assert not run.kinds("backoff")


def test_a_stalled_move_backs_off_then_aborts(tmp_path: Path) -> None:
    """A move with no progress for --stall-timeout backs off; past --abort-on 0 it stops."""
    run = make_run(tmp_path)
    run.cluster.stalled.add("t/0")
    settings = RunSettings(Limits(2), rate=MB, poll_s=10.0, guards=GuardLimits(None, 60.0, 0))
    outcome = run.go(settings)
    assert outcome.exit == EXIT_ABORTED
    assert "no progress" in outcome.reason
    assert run.cluster.throttle is None and not run.cluster.moves


def test_batches_wait_for_the_window(tmp_path: Path) -> None:
    """Outside --window no batch starts; the first starts when it opens (simulated time)."""
    run = make_run(tmp_path)
    run.clock = run.cluster.clock = FakeClock(datetime(2026, 11, 28, 21, 30))
    started = []
    original = run.cluster.submit

    def submit(actions):
        started.append(run.clock.now())
        original(actions)

    run.cluster.submit = submit  # type: ignore[method-assign]
    window = parse_window("--window", "22:00-06:00")
    assert run.go(RunSettings(Limits(6), rate=MB, poll_s=60.0, window=window)).exit == 0
    assert started == [datetime(2026, 11, 28, 22, 0)]
    assert run.kinds("wait")[0]["reason"] == "outside --window 22:00-06:00"


def test_a_killed_run_resumes_without_repeating_an_action(tmp_path: Path) -> None:
    """SIGKILL after the first batch was submitted: --resume finishes, each action once."""
    run = make_run(tmp_path)
    kill_after_first_submit(run)
    with pytest.raises(Killed):
        run.go()
    assert run.cluster.throttle is not None  # a killed process removes nothing
    run.cluster.revive()
    assert run.go(mode="resume").exit == 0
    assert all(n == 1 for n in run.cluster.submitted.values())
    assert len(run.cluster.submitted) == 6
    assert run.cluster.throttle is None


def test_estimate_sample_is_consistent() -> None:
    """The sample plan has six actions of 10 MB."""
    plan, _ = sample()
    assert sum(a.bytes for a in plan.actions) == 60 * MB


def test_an_action_the_target_does_not_report_is_not_assumed_fine(tmp_path: Path) -> None:
    """Left out of observe: CHANGED, exit 3; left out of every poll: stalled, then stopped."""
    run = make_run(tmp_path)
    original = run.cluster.observe
    run.cluster.observe = lambda actions: {  # type: ignore[method-assign]
        k: v for k, v in original(actions).items() if k != "a1"
    }
    outcome = run.go()
    assert outcome.exit == EXIT_CHANGED and "did not report t/1" in outcome.diffs[0].why

    (tmp_path / "b").mkdir()
    run = make_run(tmp_path / "b")
    polled = run.cluster.poll
    run.cluster.poll = lambda actions: {  # type: ignore[method-assign]
        k: v for k, v in polled(actions).items() if k != "a0"
    }
    settings = RunSettings(Limits(2), rate=MB, poll_s=10.0, guards=GuardLimits(None, 60.0, 0))
    assert run.go(settings).exit == EXIT_ABORTED
