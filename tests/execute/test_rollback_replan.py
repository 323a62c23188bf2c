"""The rollback plan of a journal, and the planning command --replan runs again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.execute.conftest import make_run
from tests.execute.fake import reassign_plan
from trimtab.errors import PlanError, TrimtabError
from trimtab.execute.journal import read_journal
from trimtab.execute.replan import replan_argv
from trimtab.execute.rollback import reverse_action, reverse_plan
from trimtab.plans.document import Action, PlanDocument
from trimtab.plans.target import Check, Observation


def test_the_rollback_reverses_done_actions_in_reverse_order(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    run.cluster.replicas["t/5"] = [1, 2, 6]  # already at target: not this run's doing
    assert run.go().exit == 0
    state = read_journal(run.journal, digest=run.plan.digest)
    back = reverse_plan(run.plan, state, {}, journal=str(run.journal))
    assert back.rollback_of == run.plan.digest
    assert [a.id for a in back.actions] == [f"rollback-a{i}" for i in (4, 3, 2, 1, 0)]
    first = back.actions[-1]
    assert first.precondition == {"replicas": [4, 2, 3]} and first.target == {"replicas": [1, 2, 3]}
    again = reverse_plan(run.plan, read_journal(run.journal), {}, journal=str(run.journal))
    assert again.digest == back.digest  # the same journal gives the same document


def test_an_unload_left_to_the_cluster_is_reversed_from_its_live_owner() -> None:
    unload = Action("u0", "unload", "t/ns/0x0_0x4", {"owner": "b1:8080"}, {"owner": None})
    live = Observation("u0", Check.DONE, {"owner": "b3:8080"})
    back = reverse_action(unload, live)
    assert back.precondition == {"owner": "b3:8080"} and back.target == {"owner": "b1:8080"}


def test_nothing_done_is_nothing_to_roll_back(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    with pytest.raises(PlanError, match="nothing to roll back"):
        reverse_plan(run.plan, read_journal(run.journal), {}, journal="j")


def test_replan_points_the_planning_command_at_a_new_file_and_the_live_assignment() -> None:
    plan = reassign_plan([("t/0", [1], [2], 1)])
    plan = PlanDocument(
        plan.system, plan.cluster, plan.created, plan.actions,
        source={"argv": ["trimtab", "rebalance", "-a", "old.json", "--plan=p.json", "--json"]},
    )  # fmt: skip
    argv = replan_argv(plan, Path("new.json"), Path("live.json"))
    assert argv == ["rebalance", "--assignment", "live.json", "--plan", "new.json", "--json"]


def test_replan_refuses_a_command_with_a_redacted_secret() -> None:
    plan = reassign_plan([("t/0", [1], [2], 1)])
    plan = PlanDocument(plan.system, plan.cluster, plan.created, plan.actions,
                        source={"argv": ["trimtab", "shed", "--zk-password", "***"]})  # fmt: skip
    with pytest.raises(TrimtabError, match="secret"):
        replan_argv(plan, Path("n.json"))
