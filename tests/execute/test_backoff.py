"""Back-off decisions from guard readings, and what a Pulsar plan (unloads) is estimated at."""

from __future__ import annotations

from trimtab.execute.backoff import BackOff, GuardLimits
from trimtab.execute.batches import Limits
from trimtab.execute.estimate import estimate
from trimtab.plans.document import Action
from trimtab.plans.target import Guards, Progress


def test_a_broker_above_max_load_is_harm_and_backs_off_once() -> None:
    backoff = BackOff(GuardLimits(max_load=0.8, stall_timeout_s=60, abort_on=3))
    hot = Guards(loads={"b1:8080": 0.9, "b2:8080": 0.5})
    first = backoff.check(hot, {}, [], now=0)
    assert first.back_off and first.harms == ("b1:8080 load 0.9 is above --max-load 0.8",)
    assert not backoff.check(hot, {}, [], now=10).back_off  # the same harm: wait, no halving
    assert backoff.check(hot, {}, [], now=61).back_off  # lasting a further stall time-out


def test_harm_gone_resets_and_past_abort_on_stops() -> None:
    backoff = BackOff(GuardLimits(stall_timeout_s=60, abort_on=1))
    urp = Guards(under_replicated=("other/0",))
    assert backoff.check(urp, {}, [], now=0).back_off
    assert backoff.check(Guards(), {}, [], now=5).harms == ()
    assert backoff.check(urp, {}, [], now=10).abort  # the second back-off is past --abort-on 1


def test_a_node_that_left_is_harm() -> None:
    verdict = BackOff(GuardLimits()).check(Guards(missing_nodes=("7",)), {}, [], now=0)
    assert verdict.harms == ("7 left the cluster",)


def test_a_move_making_progress_is_not_stalled() -> None:
    backoff = BackOff(GuardLimits(stall_timeout_s=60))
    for t in range(0, 300, 30):
        verdict = backoff.check(Guards(), {"a": Progress("a", bytes_done=t)}, ["t/0"], now=t)
        assert not verdict.harms


def test_unloads_are_estimated_from_the_broker_cooldown() -> None:
    """Pulsar unloads carry no bytes: each batch costs the plan's broker_cooldown_s."""
    unloads = [
        Action(f"u{i}", "unload", f"t/ns/0x{i}", {"owner": "b1:8080"}, {"owner": f"b{i + 2}:8080"})
        for i in range(4)
    ]
    est = estimate(unloads, Limits(4, max_per_node=1), 10_000_000, cooldown_s=60)
    assert est.batches == 4 and est.seconds == 240  # all leave b1: one at a time
