"""``--plan FILE`` on the planning commands, as a user types them: ``trimtab rebalance`` and
``trimtab shed`` (tables and Pulsar load reports) write one plan document whose actions are
the plan's moves, print its digest, and refuse a path they must not write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.shedding.pulsar_reports import fixture_reports, write_reports
from tests.shedding.test_cli_shed import ARGS as SHED_TABLES
from tests.shedding.test_reports import NOW
from trimtab.cli import app
from trimtab.plans import load_plan

EXAMPLES = Path(__file__).parents[2] / "examples" / "rebalance"
REBALANCE = [
    "rebalance",
    "-i",
    str(EXAMPLES / "inventory.csv"),
    "-a",
    str(EXAMPLES / "assignment.json"),
]
runner = CliRunner()


def _invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def test_rebalance_plan_holds_the_reassignment_and_its_rollback(tmp_path: Path) -> None:
    plan_path, out = tmp_path / "plan.json", tmp_path / "reassign.json"
    code, _, stderr = _invoke(*REBALANCE, "--drain", "3", "--plan", str(plan_path), "-o", str(out))
    assert code == 0, stderr
    plan = load_plan(plan_path)
    assert f"digest {plan.digest}" in stderr
    assert (plan.system, plan.cluster) == ("kafka", "kafka-prod")
    proposed = json.loads(out.read_text())["partitions"]
    current = json.loads(out.with_suffix(".rollback.json").read_text())["partitions"]
    by_item = {a.item: a for a in plan.actions}
    assert len(by_item) == len(proposed) == len(current)
    for new, old in zip(proposed, current, strict=True):
        action = by_item[f"{new['topic']}/{new['partition']}"]
        assert action.precondition == {"replicas": old["replicas"]}
        assert action.target == {"replicas": new["replicas"]}
        assert "3" in action.nodes and 3 not in new["replicas"]
    assert plan.summary["actions"] == len(plan.actions)
    assert plan.settings["concurrent_moves"] == 50
    assert plan.source["argv"][:1] == ["rebalance"]
    assert plan.source["inputs"]["assignment"]["sha256"]


def test_rebalance_plan_for_redpanda(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    code, _, stderr = _invoke(
        *REBALANCE, "--drain", "3", "--system", "redpanda", "--plan", str(path)
    )
    assert code == 0, stderr
    assert load_plan(path).system == "redpanda"


def test_an_existing_plan_file_is_never_replaced(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text("approved yesterday\n")
    code, _, stderr = _invoke(*REBALANCE, "--drain", "3", "--plan", str(path))
    assert code == 2
    assert stderr.startswith("error:") and str(path) in stderr
    assert path.read_text() == "approved yesterday\n"


def test_unknown_system_names_the_known_ones(tmp_path: Path) -> None:
    code, _, stderr = _invoke(*REBALANCE, "--system", "rabbitmq", "--plan", str(tmp_path / "p"))
    assert code == 2 and "kafka, redpanda" in stderr


def test_shed_plan_from_tables_holds_the_net_unloads(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    code, stdout, stderr = _invoke(
        *SHED_TABLES, "--until-balanced", "--plan", str(path), "--format", "pulsar-admin"
    )
    assert code == 0, stderr
    plan = load_plan(path)
    assert plan.system == "pulsar" and plan.actions
    commands = [c for c in stdout.strip().splitlines() if c.startswith("pulsar-admin")]
    assert len(commands) == len(plan.actions)
    for action, command in zip(plan.actions, commands, strict=True):
        assert action.kind == "unload" and action.item.replace("/0x", " --bundle 0x", 1) in command
        assert f"--destinationBroker {action.target['owner']}" in command
    assert len({a.item for a in plan.actions}) == len(plan.actions)
    assert plan.settings["broker_cooldown_s"] == 180  # loadBalanceSheddingDelayInSeconds


def test_shed_plan_from_load_reports(tmp_path: Path) -> None:
    reports = write_reports(tmp_path / "r", fixture_reports(NOW))
    path = tmp_path / "plan.json"
    code, _, stderr = _invoke(
        "shed",
        "--load-reports",
        str(reports),
        "--until-balanced",
        "--now",
        str(NOW),
        "--plan",
        str(path),
    )
    assert code == 0, stderr
    plan = load_plan(path)
    assert plan.actions and plan.actions[0].precondition == {"owner": "broker5:8080"}
    assert plan.source["inputs"]["load_reports"]["path"] == str(reports)


def test_shed_plan_is_one_plan_not_a_loop(tmp_path: Path) -> None:
    code, _, stderr = _invoke(
        "shed", "--zk", "127.0.0.1:2181", "--follow", "--plan", str(tmp_path / "p.json")
    )
    assert code == 2 and "cannot be combined with --follow" in stderr


@pytest.mark.parametrize("command", [REBALANCE, ["shed", *SHED_TABLES[1:]]])
def test_plan_in_a_missing_directory_is_refused_before_planning(
    tmp_path: Path, command: list[str]
) -> None:
    code, _, stderr = _invoke(*command, "--plan", str(tmp_path / "no" / "plan.json"))
    assert code == 2 and "--plan" in stderr


def test_a_drain_plan_is_required_moves_at_the_lower_bound(tmp_path: Path) -> None:
    """Issue 40: a drain moves only what it must, every action is required, the plan's
    moves equal its lower bound, and what balancing would add is stated, not planned."""
    path = tmp_path / "plan.json"
    code, _, stderr = _invoke(*REBALANCE, "--drain", "3", "--plan", str(path))
    assert code == 0, stderr
    plan = load_plan(path)
    assert all(a.required for a in plan.actions)
    assert plan.summary["optional_actions"] == 0
    assert plan.summary["moves"] == plan.summary["lower_bound_moves"]
    balancing = plan.summary["balancing"]
    assert balancing is None or balancing["included"] is False


def test_continuous_mode_marks_balancing_actions_optional(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    code, _, stderr = _invoke(
        *REBALANCE, "--drain", "3", "--mode", "continuous", "--plan", str(path)
    )
    assert code == 0, stderr
    plan = load_plan(path)
    required = [a for a in plan.actions if a.required]
    assert len(required) + plan.summary["optional_actions"] == len(plan.actions)
    assert plan.summary["moves"] >= plan.summary["lower_bound_moves"]
