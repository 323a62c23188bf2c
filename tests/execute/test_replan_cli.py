"""``trimtab execute --replan`` on a plan ``trimtab rebalance --plan`` wrote: the planning
command runs again (on the live assignment when the target gives it) and the new plan is
printed with its own digest, never run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.execute.fake import FakeClock, FakeCluster
from trimtab.cli import app
from trimtab.plans.document import load_plan

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "rebalance"
runner = CliRunner()


class LiveCluster(FakeCluster):
    """The fake cluster that can also print its assignment, as the Kafka target does."""

    def current_assignment(self) -> dict[str, Any]:
        partitions = [
            {"topic": item.rsplit("/", 1)[0], "partition": int(item.rsplit("/", 1)[1]),
             "replicas": replicas}
            for item, replicas in sorted(self.replicas.items())
        ]  # fmt: skip
        return {"version": 1, "partitions": partitions}


@pytest.fixture
def planned(tmp_path: Path) -> Path:
    plan = tmp_path / "plan.json"
    result = runner.invoke(
        app,
        ["rebalance", "-i", str(EXAMPLE / "inventory.csv"), "-a", str(EXAMPLE / "assignment.json"),
         "--drain", "3", "--plan", str(plan)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return plan


@pytest.mark.subprocess
def test_replan_runs_the_planning_command_on_the_live_assignment(
    planned: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One partition already left broker 3: the new plan has one action fewer."""
    old = load_plan(planned)
    doc = json.loads((EXAMPLE / "assignment.json").read_text())
    replicas = {f"{p['topic']}/{p['partition']}": list(p["replicas"]) for p in doc["partitions"]}
    first = old.actions[0]
    replicas[first.item] = list(first.target["replicas"])
    cluster = LiveCluster(FakeClock(), replicas)
    monkeypatch.setattr("trimtab.cli.execute.connect", lambda plan, flags, where: cluster)
    result = runner.invoke(
        app, ["execute", str(planned), "--replan", "--bootstrap-servers", "b:9092", "--json"]
    )
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    new = load_plan(Path(shown["plan"]))
    assert shown["digest"] == new.digest != old.digest and shown["replaces"] == old.digest
    assert len(new.actions) == len(old.actions) - 1
    assert first.item not in {a.item for a in new.actions}
    assert cluster.writes == 0
