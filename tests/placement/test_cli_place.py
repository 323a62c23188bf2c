"""``trimtab place`` as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trimtab.cli import app

SAMPLE = Path(__file__).parents[2] / "src" / "trimtab" / "data" / "sample_inventory.csv"
runner = CliRunner()
BASE = ["place", "-i", str(SAMPLE), "--cluster", "bk-prod", "-E", "5", "-W", "3", "-A", "2"]


def test_table_shows_every_writable_node_and_adherence() -> None:
    """People's view: one row per writable node with inclusion and first counts."""
    result = runner.invoke(app, [*BASE, "--count", "200"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert (
        "200 ensembles of E=5 W=3 A=2, rackaware policy, weights off, 16 writable nodes"
        in result.output
    )
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


GB = 10**9
#: The seed's worked example (BOOKKEEPER-950 §1.1 point 5): free 100/100/200/200/300/100 GB.
SEED_FREE_GB = (100, 100, 200, 200, 300, 100)
SEED_SHARES = (0.1, 0.1, 0.2, 0.2, 0.3, 0.1)


def _seed_inventory(path: Path, racks: tuple[str, ...]) -> Path:
    """Six writable bookies of 1 TB with the seed's free space, on ``racks`` (cycled)."""
    header = (
        "cluster,node,region,rack,cores,memory_bytes,disk_total_bytes,disk_free_bytes,nic_bps,state"
    )
    rows = [header]
    for i, free in enumerate(SEED_FREE_GB):
        rack = racks[i % len(racks)]
        rows.append(
            f"bk,b{i + 1}:3181,dc1,{rack},8,{16 * GB},{1000 * GB},{free * GB},{10 * GB},writable"
        )
    path.write_text("\n".join(rows) + "\n")
    return path


def _single_pick_shares(inventory: Path, *extra: str, count: int = 20_000) -> list[float]:
    args = ["place", "-i", str(inventory), "-E", "1", "-W", "1", "-A", "1"]
    result = runner.invoke(app, [*args, "--count", str(count), "--seed", "7", "--json", *extra])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    inclusion = doc["inclusion"]
    return [inclusion[f"b{i + 1}:3181"] / count for i in range(len(SEED_FREE_GB))]


def _tolerance(share: float, count: int) -> float:
    """Four standard deviations of a share estimated from ``count`` independent picks."""
    return 4 * float((share * (1 - share) / count) ** 0.5)


@pytest.mark.parametrize(
    "racks", [("r1",), ("r1", "r2", "r3", "r4", "r5", "r6")], ids=["one rack", "a rack each"]
)
@pytest.mark.parametrize("policy", ["rackaware", "default", "regionaware"])
def test_disk_weights_give_the_seeds_single_pick_shares(
    tmp_path: Path, racks: tuple[str, ...], policy: str
) -> None:
    """--weights disk: the seed's free 100/100/200/200/300/100 GB give .1/.1/.2/.2/.3/.1."""
    inventory = _seed_inventory(tmp_path / "inv.csv", racks)
    shares = _single_pick_shares(inventory, "--weights", "disk", "--policy", policy)
    for got, want in zip(shares, SEED_SHARES, strict=True):
        assert abs(got - want) <= _tolerance(want, 20_000), shares


def test_weights_off_is_uniform_and_the_config_key_sets_the_default(tmp_path: Path) -> None:
    """--weights off: 1/6 each; diskWeightBasedPlacementEnabled=true alone turns weights on."""
    inventory = _seed_inventory(tmp_path / "inv.csv", ("r1", "r2"))
    for got in _single_pick_shares(inventory, "--weights", "off"):
        assert abs(got - 1 / 6) <= _tolerance(1 / 6, 20_000)
    config = tmp_path / "bk.conf"
    config.write_text("diskWeightBasedPlacementEnabled=true\n")
    shares = _single_pick_shares(inventory, "--config", str(config))
    for got, want in zip(shares, SEED_SHARES, strict=True):
        assert abs(got - want) <= _tolerance(want, 20_000), shares
    off = _single_pick_shares(inventory, "--config", str(config), "--weights", "off", count=600)
    assert max(off) < 0.25  # the option wins over the config key


def test_bad_weights_mode_is_one_line(tmp_path: Path) -> None:
    """--weights takes off or disk only."""
    inventory = _seed_inventory(tmp_path / "inv.csv", ("r1",))
    args = [
        "place",
        "-i",
        str(inventory),
        "-E",
        "1",
        "-W",
        "1",
        "-A",
        "1",
        "--weights",
        "disk+load",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "--weights 'disk+load': choose off or disk" in result.output


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
