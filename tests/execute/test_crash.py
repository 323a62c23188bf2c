"""Crash safety: a run killed at any step, then resumed, runs every action exactly once and
leaves no throttle; ``--abort`` after a kill cancels the moves and removes the throttles."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.execute.conftest import kill_after_first_submit, make_run
from tests.execute.fake import Killed
from trimtab.execute.abort import abort_run
from trimtab.execute.journal import Journal, read_journal
from trimtab.execute.recorder import Recorder


def _clean_steps() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        run = make_run(Path(tmp), preview=True)
        assert run.go().exit == 0
        return run.cluster.steps


STEPS = _clean_steps()


@settings(max_examples=60, deadline=None)
@given(kills=st.lists(st.integers(1, STEPS), min_size=1, max_size=3), preview=st.booleans())
def test_any_crash_points_then_resume_run_each_action_exactly_once(
    kills: list[int], preview: bool
) -> None:
    """Killed at up to three steps in a row, resumed each time: each action submitted once,
    the cluster at every target, the journal ends 'done', and no throttle left, except, for
    a target without previews, one set just before a kill (named in a warning)."""
    with tempfile.TemporaryDirectory() as tmp:
        run = make_run(Path(tmp), preview=preview)
        for kill in kills:
            run.cluster.kill_at = run.cluster.steps + kill
            with contextlib.suppress(Killed):
                run.go(mode="resume")
            run.cluster.revive()
        outcome = run.go(mode="resume")
        lost = any(e["op"] == "lost" for e in run.kinds("throttle"))
        assert outcome.exit == 0
        assert all(n == 1 for n in run.cluster.submitted.values())
        for action in run.plan.actions:
            assert run.cluster.replicas[action.item] == action.target["replicas"]
        # a kill between the target's write and its journal record is named in a warning
        assert (
            run.cluster.throttle is None
            or lost
            or any(e["op"] == "lost" for e in run.kinds("throttle"))
        )
        state = read_journal(run.journal, digest=run.plan.digest)
        assert state.stop == "done" and not state.throttles
        assert len(state.with_state("done")) == len(run.plan.actions)


def test_resume_removes_the_throttle_a_killed_run_left(tmp_path: Path) -> None:
    """The journal's throttle records are enough to undo a throttle after a kill."""
    run = make_run(tmp_path)
    kill_after_first_submit(run)
    with pytest.raises(Killed):
        run.go()
    assert run.cluster.throttle is not None
    state = read_journal(run.journal, digest=run.plan.digest)
    assert state.throttles
    run.cluster.revive()
    run.go(mode="resume")
    assert run.cluster.throttle is None


def test_abort_after_a_kill_cancels_the_moves_and_removes_throttles(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    kill_after_first_submit(run)
    with pytest.raises(Killed):
        run.go()
    run.cluster.revive()
    assert run.cluster.moves and run.cluster.throttle is not None
    state = read_journal(run.journal, digest=run.plan.digest)
    with Journal(run.journal) as journal:
        warnings = abort_run(run.plan, run.cluster, state, Recorder(journal), {"mode": "abort"})
    assert warnings == []
    assert not run.cluster.moves and run.cluster.throttle is None
    after = read_journal(run.journal, digest=run.plan.digest)
    assert after.stop == "aborted by --abort" and not after.throttles
    assert after.with_state("cancelled")


def test_a_kill_right_after_the_cluster_took_a_throttle_is_undone_from_its_preview(
    tmp_path: Path,
) -> None:
    """The kill falls between set_throttle's write and its journal record: --resume clears
    the preview journaled before it, and the cluster ends unthrottled."""
    run = make_run(tmp_path, preview=True)
    original = run.cluster.set_throttle

    def set_then_die(rate, actions):
        original(rate, actions)
        run.cluster.dead = True
        raise Killed

    run.cluster.set_throttle = set_then_die  # type: ignore[method-assign]
    with pytest.raises(Killed):
        run.go()
    run.cluster.set_throttle = original  # type: ignore[method-assign]
    run.cluster.revive()
    assert run.cluster.throttle is not None
    assert read_journal(run.journal).setting is not None
    assert run.go(mode="resume").exit == 0
    assert run.cluster.throttle is None
    assert run.runner is not None and run.runner.warnings == []
