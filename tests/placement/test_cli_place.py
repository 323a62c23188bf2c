"""``trimtab place`` as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from trimtab.cli import app

SAMPLE = Path(__file__).parents[2] / "src" / "trimtab" / "data" / "sample_inventory.csv"
runner = CliRunner()
BASE = ["place", "-i", str(SAMPLE), "--cluster", "bk-prod", "-E", "5", "-W", "3", "-A", "2"]


def test_table_shows_every_writable_node_and_adherence() -> None:
    """People's view: one row per writable node with inclusion and first counts."""
    result = runner.invoke(app, [*BASE, "--count", "200"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "200 ensembles of E=5 W=3 A=2, rackaware policy, 16 writable nodes" in result.output
    assert "bk05" not in result.output and "bk14" not in result.output  # read-only, down
    assert "adherence: MEETS_STRICT 200, MEETS_SOFT 0, FAIL 0" in result.output


def test_json_has_ensembles_inclusion_first_and_adherence() -> None:
    """--json: counts add up, the read-only and down nodes never appear."""
    result = runner.invoke(app, [*BASE, "--count", "300", "--policy", "regionaware", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert {"ensembles", "inclusion", "first", "adherence"} <= set(doc)
    assert len(doc["ensembles"]) == 300 and all(len(e) == 5 for e in doc["ensembles"])
    assert sum(doc["inclusion"].values()) == 1500 and sum(doc["first"].values()) == 300
    assert sum(doc["adherence"].values()) == 300
    assert "bk05.us-east.example.net:3181" not in doc["inclusion"]
    assert doc["policy"] == "regionaware"


def test_same_seed_same_run_and_exclusions_hold() -> None:
    """--seed replays; --exclude keeps the nodes out."""
    excluded = "bk01.us-east.example.net:3181,bk10.us-west.example.net:3181"
    args = [*BASE, "--count", "50", "--seed", "4", "--exclude", excluded, "--json"]
    first, second = (runner.invoke(app, args) for _ in range(2))
    assert first.exit_code == 0, first.output
    assert first.output == second.output
    doc = json.loads(first.output)
    assert doc["inclusion"]["bk01.us-east.example.net:3181"] == 0
    assert doc["inclusion"]["bk10.us-west.example.net:3181"] == 0


def test_default_policy_runs() -> None:
    """--policy default places without any rack rule."""
    result = runner.invoke(app, [*BASE, "--count", "20", "--policy", "default", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["adherence"]["MEETS_STRICT"] == 20


def test_user_errors_are_one_line() -> None:
    """Several clusters without --cluster, a bad policy, impossible sizes, too few nodes."""
    cases = [
        (
            ["place", "-i", str(SAMPLE), "-E", "3", "-W", "2", "-A", "2"],
            "choose one with --cluster",
        ),
        ([*BASE, "--policy", "bogus"], "unknown policy"),
        (
            [*BASE, "--policy", "zoneaware", "-E", "5", "-W", "3", "-A", "2"],
            "must be a multiple of write quorum 3",
        ),
        (
            ["place", "-i", str(SAMPLE), "--cluster", "bk-prod", "-E", "2", "-W", "3", "-A", "2"],
            "need 1 <= A <= W <= E",
        ),
        (
            ["place", "-i", str(SAMPLE), "--cluster", "bk-prod", "-E", "17", "-W", "3", "-A", "2"],
            "not enough nodes: asked for 17, 16 available",
        ),
    ]
    for args, message in cases:
        result = runner.invoke(app, args, env={"COLUMNS": "300"})
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output


def test_zoneaware_policy_on_two_zones_is_soft() -> None:
    """The sample's /region/rack locations read as /zone/upgradedomain: two zones of the three
    desired, so every ensemble MEETS_SOFT, spread over both zones and their upgrade domains."""
    args = ["place", "-i", str(SAMPLE), "--cluster", "bk-prod", "--policy", "zoneaware"]
    result = runner.invoke(app, [*args, "-E", "6", "-W", "3", "-A", "2", "--count", "50", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["policy"] == "zoneaware"
    assert doc["adherence"]["MEETS_SOFT"] == 50
    for ensemble in doc["ensembles"]:
        zones = [node.split(".")[1] for node in ensemble]
        assert all(len({zones[(i + k) % 6] for k in range(3)}) == 2 for i in range(6))
